//! Hedged reads on one server's call path: tower's latency-percentile
//! hedge ("The Tail at Scale"), for calls that sending twice cannot change.
//!
//! A call that is an idempotent read ([`Call::is_idempotent_read`]), or a
//! `tools/call` of a tool the application names as safe, is sent a second
//! time when the first has been outstanding longer than the given
//! percentile of recent latencies; the first answer wins and the other is
//! dropped (which cancels it: on the legacy era the server is told). A
//! tool's annotations are the server's hints and are never trusted alone.
//!
//! tower's `Hedge` is not `Clone` and returns a `BoxError`; [`Hedged`]
//! shares one behind a lock held only to start a call (the services under
//! a call path are always ready), and gives back the `ClientError`.
//!
//! tower hedges only after a percentile of measured latencies. With
//! [`HedgeLayer::after`] the second call goes after a fixed delay instead
//! (the command's `--hedge-after`): no history to fill, and a delay below
//! the median bounds the tail by the delay plus one call, where the
//! percentile's delay is at least the median.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tower::hedge::{Hedge, Policy};
use tower::{Layer, Service};

use super::service::into_client_error;
use super::{Call, CallService, ClientError};
use crate::protocol::RequestKind;

/// Puts a [`Hedged`] around a client's call path.
///
/// ```no_run
/// use mcp_connect::client::HedgeLayer;
/// # fn run(builder: mcp_connect::client::McpClientBuilder) -> mcp_connect::client::McpClientBuilder {
/// // A second listing or read after the 90th percentile of recent latencies.
/// builder.with_call_layer(HedgeLayer::new(0.9).with_safe_tools(["search"]))
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct HedgeLayer {
    when: When,
    safe_tools: Arc<HashSet<String>>,
}

/// When the second call goes.
#[derive(Debug, Clone, Copy)]
enum When {
    /// After this percentile of the latencies of the last `period`, once
    /// `min_data_points` were measured (tower's hedge).
    Percentile {
        percentile: f32,
        min_data_points: u64,
        period: Duration,
    },
    /// After this long.
    After(Duration),
}

impl HedgeLayer {
    /// Hedges after the `percentile` (0.0..=1.0) of the last 10 s of
    /// latencies, once 10 calls were measured.
    pub fn new(percentile: f32) -> Self {
        HedgeLayer {
            when: When::Percentile {
                percentile: percentile.clamp(0.0, 1.0),
                min_data_points: 10,
                period: Duration::from_secs(10),
            },
            safe_tools: Arc::default(),
        }
    }

    /// Hedges every hedgeable call still unanswered after `delay`.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use mcp_connect::client::HedgeLayer;
    /// # fn run(builder: mcp_connect::client::McpClientBuilder) -> mcp_connect::client::McpClientBuilder {
    /// builder.with_call_layer(HedgeLayer::after(Duration::from_millis(50)))
    /// # }
    /// ```
    pub fn after(delay: Duration) -> Self {
        HedgeLayer {
            when: When::After(delay),
            safe_tools: Arc::default(),
        }
    }

    /// Measures latencies over `period` and hedges only once
    /// `min_data_points` calls were measured (a layer made with
    /// [`after`](Self::after) measures nothing and is left as it is).
    #[must_use]
    pub fn with_history(mut self, period: Duration, min_data_points: u64) -> Self {
        if let When::Percentile {
            min_data_points: points,
            period: over,
            ..
        } = &mut self.when
        {
            (*points, *over) = (min_data_points, period);
        }
        self
    }

    /// Hedges `tools/call` of these tools too: the application says
    /// running them twice is harmless.
    #[must_use]
    pub fn with_safe_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.safe_tools = Arc::new(tools.into_iter().map(Into::into).collect());
        self
    }
}

/// Which calls are hedged.
#[derive(Debug, Clone)]
struct Safe(Arc<HashSet<String>>);

impl Policy<Call> for Safe {
    fn clone_request(&self, call: &Call) -> Option<Call> {
        let request = call.request();
        let safe_tool = || {
            request.kind() == RequestKind::CallTool
                && request.target().is_some_and(|name| self.0.contains(name))
        };
        (request.is_idempotent_read() || safe_tool()).then(|| call.clone())
    }

    fn can_retry(&self, _: &Call) -> bool {
        true
    }
}

impl Layer<CallService> for HedgeLayer {
    type Service = Hedged;

    fn layer(&self, inner: CallService) -> Hedged {
        let safe = Safe(Arc::clone(&self.safe_tools));
        match self.when {
            When::Percentile {
                percentile,
                min_data_points,
                period,
            } => {
                let hedge = Hedge::new::<Call>(inner, safe, min_data_points, percentile, period);
                Hedged(Inner::Percentile(Arc::new(Mutex::new(hedge))))
            }
            When::After(delay) => Hedged(Inner::After { inner, safe, delay }),
        }
    }
}

/// The service made by [`HedgeLayer`]; clones share one hedge and its
/// latency history.
#[derive(Clone)]
pub struct Hedged(Inner);

#[derive(Clone)]
enum Inner {
    Percentile(Arc<Mutex<Hedge<CallService, Safe>>>),
    After {
        inner: CallService,
        safe: Safe,
        delay: Duration,
    },
}

impl std::fmt::Debug for Hedged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hedged").finish_non_exhaustive()
    }
}

impl Service<Call> for Hedged {
    type Response = Box<RawValue>;
    type Error = ClientError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ClientError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        match &mut self.0 {
            // Held to poll readiness or start a call, never across an await.
            Inner::Percentile(hedge) => hedge
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .poll_ready(cx)
                .map_err(into_client_error),
            Inner::After { inner, .. } => inner.poll_ready(cx),
        }
    }

    fn call(&mut self, call: Call) -> Self::Future {
        match &mut self.0 {
            Inner::Percentile(hedge) => {
                let future = hedge
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .call(call);
                Box::pin(async move { future.await.map_err(into_client_error) })
            }
            Inner::After { inner, safe, delay } => {
                let second = safe.clone_request(&call);
                let first = inner.call(call);
                match second {
                    None => first,
                    Some(second) => Box::pin(after(first, inner.clone(), second, *delay)),
                }
            }
        }
    }
}

/// `first`, and `second` on `inner` if `first` is unanswered after
/// `delay`: the first to end wins, the other is dropped (cancelled), as in
/// tower's hedge.
async fn after(
    mut first: BoxFuture<'static, Result<Box<RawValue>, ClientError>>,
    inner: CallService,
    second: Call,
    delay: Duration,
) -> Result<Box<RawValue>, ClientError> {
    tokio::select! {
        outcome = &mut first => return outcome,
        () = tokio::time::sleep(delay) => {}
    }
    let second = tower::ServiceExt::oneshot(inner, second);
    futures_util::future::select(first, Box::pin(second))
        .await
        .factor_first()
        .0
}
