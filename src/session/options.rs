//! [`RequestOptions`]: what one request may carry of its own (a
//! cancellation token, a timeout, a progress callback and whether progress
//! restarts the timeout, how the response cache is used). Data in the
//! request: the session's configuration is not repeated here.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::inbound::{Progress, ProgressCallback};
use crate::response_cache::CacheMode;

/// Options for one request.
///
/// ```
/// use std::time::Duration;
/// use mcp_connect::session::RequestOptions;
/// use tokio_util::sync::CancellationToken;
///
/// let options = RequestOptions::new()
///     .with_cancellation(CancellationToken::new())
///     .with_timeout(Duration::from_secs(5))
///     .with_progress(|p| println!("{} of {:?}", p.progress, p.total))
///     .reset_timeout_on_progress(Duration::from_secs(60));
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
pub struct RequestOptions {
    pub(super) cancel: Option<CancellationToken>,
    pub(super) timeout: Option<Duration>,
    pub(super) progress: Option<ProgressCallback>,
    /// Restart the timeout on progress, up to this total.
    pub(super) max_total: Option<Duration>,
    /// How the response cache serves this request.
    pub(super) cache: CacheMode,
}

impl RequestOptions {
    /// The session's per-request limit, no cancellation, no progress.
    pub fn new() -> Self {
        RequestOptions::default()
    }

    /// Ends the request when `token` is cancelled.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// This request's own limit instead of the session's.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks the server for progress and calls `callback` with each report.
    /// Called inline on the task that reads the transport: keep it cheap.
    #[must_use]
    pub fn with_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }

    /// Restarts the timeout on every progress report, but never lets the
    /// request run longer than `max_total` in all. Asks for progress.
    #[must_use]
    pub fn reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
        self.max_total = Some(max_total);
        self
    }

    /// How the [response cache](crate::response_cache) serves this
    /// request (a cacheable one on a modern session with a cache): use it
    /// (the default), refresh it, or bypass it.
    #[must_use]
    pub fn with_cache(mut self, mode: CacheMode) -> Self {
        self.cache = mode;
        self
    }

    /// Whether the request has a limit of its own.
    pub(crate) fn has_timeout(&self) -> bool {
        self.timeout.is_some()
    }

    pub(super) fn wants_progress(&self) -> bool {
        self.progress.is_some() || self.max_total.is_some()
    }
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("cancel", &self.cancel.is_some())
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("max_total", &self.max_total)
            .field("cache", &self.cache)
            .finish()
    }
}
