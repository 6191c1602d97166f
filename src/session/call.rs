//! [`Call`]: one request and its own options, what every facade's `send`
//! takes ([`Session::send`](crate::Session::send),
//! [`McpClient::send`](crate::McpClient::send),
//! [`ServerGroup::send`](crate::group::ServerGroup::send)). Typed, it gives
//! the request's own output; erased ([`Call<EncodedRequest>`], the
//! default), it is what an [`McpClient`](crate::McpClient)'s tower call path
//! carries, so a layer asks the request what it is
//! ([`EncodedRequest::kind`]) instead of reading a method string.

use std::fmt;

use super::RequestOptions;
use crate::protocol::{EncodedRequest, McpRequest};

/// One request and its own options.
///
/// ```
/// use std::time::Duration;
/// use mcp_connect::protocol::{CallTool, RequestKind};
/// use mcp_connect::session::{Call, RequestOptions};
/// use serde_json::json;
///
/// let arguments = json!({ "a": 1, "b": 2 });
/// let call = Call::new(CallTool::new("add", &arguments))
///     .with_options(RequestOptions::new().with_timeout(Duration::from_secs(5)));
/// let erased = call.encode();
/// assert_eq!(erased.request().kind(), RequestKind::CallTool);
/// assert!(!erased.request().is_idempotent_read());
/// ```
#[derive(Clone)]
pub struct Call<R = EncodedRequest> {
    request: R,
    options: RequestOptions,
}

impl<R: McpRequest> Call<R> {
    /// `request` with the session's own limits.
    pub fn new(request: R) -> Self {
        Call {
            request,
            options: RequestOptions::default(),
        }
    }

    /// This call with its own options (timeout, cancellation, progress,
    /// cache).
    #[must_use]
    pub fn with_options(mut self, options: RequestOptions) -> Self {
        self.options = options;
        self
    }

    /// The request.
    pub fn request(&self) -> &R {
        &self.request
    }

    /// The request's own options.
    pub fn options(&self) -> &RequestOptions {
        &self.options
    }

    /// The request and its options.
    pub fn into_parts(self) -> (R, RequestOptions) {
        (self.request, self.options)
    }

    /// This call with its request encoded: what a client's call path
    /// carries.
    pub fn encode(&self) -> Call {
        Call {
            request: self.request.encode(),
            options: self.options.clone(),
        }
    }
}

impl<R: McpRequest> From<R> for Call<R> {
    fn from(request: R) -> Self {
        Call::new(request)
    }
}

impl<R: fmt::Debug> fmt::Debug for Call<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("request", &self.request)
            .field("options", &self.options)
            .finish()
    }
}
