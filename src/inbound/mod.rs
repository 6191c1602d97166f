//! What the server says on its own: requests to this client and
//! notifications.
//!
//! Every transport hands what it reads outside a reply to one inbound seam
//! per connection request: server requests (from a POST reply stream, the
//! standalone GET stream, the legacy SSE stream or a child's stdout) go to
//! the application's [`ClientHandler`]; notifications go to the progress
//! callback of the request they name and to the application's
//! [`Notifications`] channel. Neither can stall a transport: a handler runs
//! on its own task where the transport multiplexes replies (stdio, legacy
//! SSE, the GET stream), at most [`MAX_CONCURRENT_HANDLERS`] at once per
//! connection request, every session made from it included (more are
//! answered `-32603` at once), and the channel drops what an application
//! has not read rather than wait.

mod error;
mod handler;
mod notifications;
mod subscriptions;

use crate::protocol::NotificationKind;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt;
use serde_json::Value;
use tokio::sync::{Notify, Semaphore};

pub use error::InputRequiredError;
pub use handler::{elicitation_defaults, ClientHandler, RequestKind};
pub use notifications::{
    notification_channel, Cancelled, Known, ListKind, LogMessage, NotificationSender,
    Notifications, ProgressNotification, ResourceUpdated, ServerNotification,
};
pub(crate) use subscriptions::{AckWaiter, LiveSubscription};

use crate::protocol::{codes, error_bytes, result_bytes, RequestId, RpcError};

/// What a server's notifications can make stale (the response cache): told
/// of each before the application hears of it, so a listing it makes in
/// answer is fresh. A seam, so the inbound side depends on no cache.
pub(crate) trait Staleness: Send + Sync {
    /// `server` sent notification `method` with `params`.
    fn notified(&self, server: &Arc<str>, method: &str, params: Option<&Value>);
}

/// Server requests handled at once for one connection request (all its
/// sessions; requests without a handler share one bound); more are refused.
pub const MAX_CONCURRENT_HANDLERS: usize = 64;

/// One progress report of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// How far along (increases with every report).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
}

/// A request's progress callback.
pub type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

struct Watch {
    callback: Option<ProgressCallback>,
    /// Woken on every report, so a timeout can restart.
    reported: Arc<Notify>,
}

/// The server traffic seam of one connection request (shared by every
/// session made from it, so an [`McpClient`](crate::McpClient) keeps its
/// handler and listener across reconnects).
pub(crate) struct Inbound {
    handler: ClientHandler,
    listener: Option<NotificationSender>,
    /// The server's name, on every notification delivered.
    server: Arc<str>,
    progress: Mutex<HashMap<String, Watch>>,
    handlers: Arc<Semaphore>,
    acks: subscriptions::Acks,
    /// What the server's change notifications make stale, and the
    /// server's key there.
    cache: Option<(Arc<dyn Staleness>, Arc<str>)>,
    /// Spans for server requests (feature `otel`).
    telemetry: Option<crate::telemetry::Telemetry>,
}

impl Inbound {
    pub(crate) fn new(
        handler: ClientHandler,
        listener: Option<NotificationSender>,
        server: Arc<str>,
    ) -> Arc<Self> {
        Arc::new(Inbound {
            handler,
            listener,
            server,
            progress: Mutex::new(HashMap::new()),
            handlers: Arc::new(Semaphore::new(MAX_CONCURRENT_HANDLERS)),
            acks: subscriptions::Acks::default(),
            cache: None,
            telemetry: None,
        })
    }

    /// This new seam, with the server's change notifications invalidating
    /// its entries (under `server`) in `cache`.
    pub(crate) fn invalidating(
        self: Arc<Self>,
        cache: Arc<dyn Staleness>,
        server: Arc<str>,
    ) -> Arc<Self> {
        let mut inbound = Arc::into_inner(self).expect("a new inbound is not shared");
        inbound.cache = Some((cache, server));
        Arc::new(inbound)
    }

    /// This new seam with each server request in a span of `telemetry`,
    /// when there is one.
    pub(crate) fn instrumented(
        self: Arc<Self>,
        telemetry: Option<crate::telemetry::Telemetry>,
    ) -> Arc<Self> {
        if telemetry.is_none() {
            return self;
        }
        let mut inbound = Arc::into_inner(self).expect("a new inbound is not shared");
        inbound.telemetry = telemetry;
        Arc::new(inbound)
    }

    /// Answers `ping`, refuses everything else, drops notifications. One
    /// shared value: a connection without a handler allocates nothing here.
    pub(crate) fn none() -> Arc<Self> {
        static NONE: std::sync::LazyLock<Arc<Inbound>> =
            std::sync::LazyLock::new(|| Inbound::new(ClientHandler::new(), None, "".into()));
        Arc::clone(&NONE)
    }

    /// Whether the application wants what arrives outside replies (so a
    /// standalone server stream is worth opening).
    pub(crate) fn is_listening(&self) -> bool {
        !self.handler.is_empty() || self.listener.is_some()
    }

    /// Whether the application reads notifications (so a 2026-07-28
    /// subscription stream is worth holding open).
    pub(crate) fn wants_notifications(&self) -> bool {
        self.listener.is_some()
    }

    /// Waits for the acknowledgement of the subscription opened by the
    /// `subscriptions/listen` request `id`.
    pub(crate) fn expect_ack(self: &Arc<Self>, id: i64) -> AckWaiter {
        AckWaiter::new(self, id)
    }

    /// Lets the notifications of subscription `id` through until the guard
    /// drops.
    pub(crate) fn live_subscription(self: &Arc<Self>, id: i64) -> LiveSubscription {
        LiveSubscription::new(self, id)
    }

    fn watches(&self) -> std::sync::MutexGuard<'_, HashMap<String, Watch>> {
        // Held for one map operation, never across an await or a callback.
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The response bytes to one server request. A panicking handler is
    /// answered `-32603`; the message of a handler's own error is sent as the
    /// handler wrote it. When [`MAX_CONCURRENT_HANDLERS`] are already running
    /// the request is refused at once.
    pub(crate) async fn answer(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
    ) -> Vec<u8> {
        let Ok(_permit) = Arc::clone(&self.handlers).try_acquire_owned() else {
            return error_bytes(id, codes::INTERNAL_ERROR, "too many concurrent requests");
        };
        let answered =
            crate::telemetry::inbound::answer(self.telemetry.as_ref(), method, params, |params| {
                self.run_handler(method, params)
            })
            .await;
        match answered {
            Ok(result) => result_bytes(id, &result),
            Err(error) => error_bytes(id, error.code(), error.message()),
        }
    }

    /// The handler's answer; a panic, while it makes its future or while
    /// that runs, is an internal error that names nothing of it.
    async fn run_handler(&self, method: &str, params: Option<Value>) -> Result<Value, RpcError> {
        let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handler.answer(method, params)
        }));
        let answered = match made {
            Ok(future) => std::panic::AssertUnwindSafe(future).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        answered.unwrap_or_else(|_| {
            tracing::warn!("server request handler panicked");
            Err(RpcError::new(
                codes::INTERNAL_ERROR,
                "the client's handler failed",
                None,
            ))
        })
    }

    /// Answers the input requests of an `input_required` result (2026-07-28,
    /// multi-round-trip requests) through the handler: each key's result,
    /// or the first request nobody answers.
    pub(crate) async fn answer_inputs(
        &self,
        requests: &serde_json::Map<String, Value>,
    ) -> Result<serde_json::Map<String, Value>, InputRequiredError> {
        use InputRequiredError as E;
        let mut responses = serde_json::Map::new();
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .ok_or(E::Malformed)?;
            let params = request.get("params").cloned();
            let result = self
                .run_handler(method, params)
                .await
                .map_err(|error| E::Unanswered { code: error.code() })?;
            responses.insert(key.clone(), result);
        }
        Ok(responses)
    }

    /// Routes one notification: progress to its request's watch, then
    /// everything to the application's channel.
    pub(crate) fn notify(&self, method: String, params: Option<Value>) {
        if let Some((cache, server)) = &self.cache {
            cache.notified(server, &method, params.as_ref());
        }
        let kind = NotificationKind::of(&method);
        if kind == NotificationKind::Progress {
            self.progress_report(params.as_ref());
        }
        if kind == NotificationKind::SubscriptionsAcknowledged {
            return self.acks.deliver(params.as_ref());
        }
        if let Some(key) = subscriptions::subscription_of(params.as_ref()) {
            if !self.acks.is_live(&key) {
                return tracing::trace!("notification of an ended subscription dropped");
            }
        }
        match &self.listener {
            Some(listener) => listener.deliver(ServerNotification {
                method,
                params,
                server: Arc::clone(&self.server),
            }),
            None => tracing::trace!("server notification dropped"),
        }
    }

    fn progress_report(&self, params: Option<&Value>) {
        let Some(params) = params else { return };
        let Some(token) = params.get("progressToken").map(token_key) else {
            return;
        };
        let Some(progress) = params.get("progress").and_then(Value::as_f64) else {
            return;
        };
        let total = params.get("total").and_then(Value::as_f64);
        let (callback, reported) = match self.watches().get(&token) {
            Some(watch) => (watch.callback.clone(), Arc::clone(&watch.reported)),
            None => return,
        };
        reported.notify_one();
        if let Some(callback) = callback {
            callback(Progress { progress, total });
        }
    }

    /// Watches the progress reports of one request until the guard drops.
    pub(crate) fn watch_progress(
        self: &Arc<Self>,
        token: &Value,
        callback: Option<ProgressCallback>,
    ) -> ProgressGuard {
        let key = token_key(token);
        let reported = Arc::new(Notify::new());
        self.watches().insert(
            key.clone(),
            Watch {
                callback,
                reported: Arc::clone(&reported),
            },
        );
        ProgressGuard {
            inbound: Arc::clone(self),
            key,
            reported,
        }
    }
}

/// A progress token as a map key: strings and numbers never collide.
fn token_key(token: &Value) -> String {
    match token {
        Value::String(s) => format!("s:{s}"),
        other => format!("n:{other}"),
    }
}

/// Stops watching a request's progress when dropped.
pub(crate) struct ProgressGuard {
    inbound: Arc<Inbound>,
    key: String,
    reported: Arc<Notify>,
}

impl ProgressGuard {
    /// Resolves at the next progress report.
    pub(crate) async fn reported(&self) {
        self.reported.notified().await;
    }
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.inbound.watches().remove(&self.key);
    }
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbound")
            .field("handler", &self.handler)
            .field("listening", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::methods;
    use serde_json::json;

    #[tokio::test]
    async fn a_panicking_handler_is_an_internal_error() {
        let handler = ClientHandler::new().on_sampling(|_| async { panic!("boom") });
        let inbound = Inbound::new(handler, None, "s".into());
        let bytes = inbound
            .answer(
                &RequestId::Number(7),
                methods::SAMPLING_CREATE_MESSAGE,
                Some(json!({ "messages": [], "maxTokens": 1 })),
            )
            .await;
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], codes::INTERNAL_ERROR);
        assert!(!String::from_utf8_lossy(&bytes).contains("boom"));
    }

    #[tokio::test]
    async fn a_handler_that_panics_before_its_future_is_an_internal_error() {
        #[allow(unreachable_code)]
        let handler = ClientHandler::new().on_roots(|_| {
            panic!("at once");
            async { Ok(crate::protocol::server_requests::ListRootsResult::default()) }
        });
        let bytes = Inbound::new(handler, None, "s".into())
            .answer(&RequestId::Number(1), methods::ROOTS_LIST, None)
            .await;
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(answer["error"]["code"], codes::INTERNAL_ERROR);
    }

    #[tokio::test]
    async fn progress_reaches_its_request_and_the_listener() {
        let (sender, mut notifications) = notification_channel(8);
        let inbound = Inbound::new(ClientHandler::new(), Some(sender), "s".into());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let guard = inbound.watch_progress(
            &json!("t1"),
            Some(Arc::new(move |p: Progress| {
                record.lock().unwrap().push(p.progress)
            })),
        );
        inbound.notify(
            methods::NOTIFICATION_PROGRESS.into(),
            Some(json!({ "progressToken": "t1", "progress": 1, "total": 3 })),
        );
        inbound.notify(
            methods::NOTIFICATION_PROGRESS.into(),
            Some(json!({ "progressToken": "other", "progress": 9 })),
        );
        assert_eq!(*seen.lock().unwrap(), [1.0]);
        assert_eq!(
            notifications.try_recv().unwrap().method,
            methods::NOTIFICATION_PROGRESS
        );
        drop(guard);
        inbound.notify(
            methods::NOTIFICATION_PROGRESS.into(),
            Some(json!({ "progressToken": "t1", "progress": 2 })),
        );
        assert_eq!(
            seen.lock().unwrap().len(),
            1,
            "no callback after the request ended"
        );
    }
}
