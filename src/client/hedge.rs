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

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tower::hedge::{Hedge, Policy};
use tower::{Layer, Service};

use super::service::into_client_error;
use super::{Call, CallService, ClientError};
use crate::protocol::methods;

/// Puts a [`Hedged`] around a client's call path.
///
/// ```no_run
/// use mcp_connect::client::HedgeLayer;
/// # fn run(client: mcp_connect::McpClient) -> mcp_connect::McpClient {
/// // A second listing or read after the 90th percentile of recent latencies.
/// client.with_call_layer(HedgeLayer::new(0.9).with_safe_tools(["search"]))
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct HedgeLayer {
    percentile: f32,
    min_data_points: u64,
    period: Duration,
    safe_tools: Arc<HashSet<String>>,
}

impl HedgeLayer {
    /// Hedges after the `percentile` (0.0..=1.0) of the last 10 s of
    /// latencies, once 10 calls were measured.
    pub fn new(percentile: f32) -> Self {
        HedgeLayer {
            percentile: percentile.clamp(0.0, 1.0),
            min_data_points: 10,
            period: Duration::from_secs(10),
            safe_tools: Arc::default(),
        }
    }

    /// Measures latencies over `period` and hedges only once
    /// `min_data_points` calls were measured.
    #[must_use]
    pub fn with_history(mut self, period: Duration, min_data_points: u64) -> Self {
        self.period = period;
        self.min_data_points = min_data_points;
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
        let safe_tool = || {
            call.method() == methods::TOOLS_CALL
                && call
                    .params()
                    .and_then(|p| p.get("name"))
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(|name| self.0.contains(name))
        };
        (call.is_idempotent_read() || safe_tool()).then(|| call.clone())
    }

    fn can_retry(&self, _: &Call) -> bool {
        true
    }
}

impl Layer<CallService> for HedgeLayer {
    type Service = Hedged;

    fn layer(&self, inner: CallService) -> Hedged {
        let hedge = Hedge::new::<Call>(
            inner,
            Safe(Arc::clone(&self.safe_tools)),
            self.min_data_points,
            self.percentile,
            self.period,
        );
        Hedged(Arc::new(Mutex::new(hedge)))
    }
}

/// The service made by [`HedgeLayer`]; clones share one hedge and its
/// latency history.
#[derive(Clone)]
pub struct Hedged(Arc<Mutex<Hedge<CallService, Safe>>>);

impl std::fmt::Debug for Hedged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hedged").finish_non_exhaustive()
    }
}

impl Hedged {
    fn hedge(&self) -> std::sync::MutexGuard<'_, Hedge<CallService, Safe>> {
        // Held to poll readiness or start a call, never across an await.
        self.0.lock().expect("hedge lock poisoned")
    }
}

impl Service<Call> for Hedged {
    type Response = Box<RawValue>;
    type Error = ClientError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ClientError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        self.hedge().poll_ready(cx).map_err(into_client_error)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let future = self.hedge().call(call);
        Box::pin(async move { future.await.map_err(into_client_error) })
    }
}
