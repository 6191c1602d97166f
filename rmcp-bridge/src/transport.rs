//! An established [`Session`] as rmcp's `Transport<RoleClient>`.
//!
//! rmcp numbers its requests itself; the session numbers the ones it sends.
//! So a request from rmcp is sent as a session request (the session's
//! deadline, resumption, `Mcp-*` headers and multi-round-trip rounds all
//! apply), and its reply goes back to rmcp under rmcp's own id. Server
//! requests reach rmcp under ids the bridge gives them, and rmcp's answer
//! goes back to the session's handler, which answers the server under the
//! server's id. Notifications pass as they are, except rmcp's
//! `notifications/cancelled`, which cancels the session request it names
//! (the session then tells the server, under the session's id).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_connect::inbound::Notifications;
use mcp_connect::protocol::{RawRequest, RpcError};
use mcp_connect::session::{Call, RequestOptions, SessionState};
use mcp_connect::{ErrorKind, Session};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// How often the bridge looks whether the session ended on its own (a
/// stdio child that exited, a stream the server closed), so rmcp sees a
/// closed transport without having to send anything.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// JSON-RPC's internal error, for failures that are not the server's
/// answer (a timeout, a broken transport).
const INTERNAL_ERROR: i64 = -32603;

/// A bridge failure: the session refused to send a message.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The session could not send it.
    #[error("the session could not send the message")]
    Session(#[source] mcp_connect::Error),
    /// rmcp handed over a message that is not JSON-RPC.
    #[error("rmcp sent a message that does not serialize")]
    Serialize(#[source] serde_json::Error),
}

/// rmcp's answers awaited by server requests, by the bridge's id.
type Answers = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// What the transport and the handler it installed share: the way to
/// rmcp, and rmcp's pending answers to server requests.
#[derive(Clone)]
pub(crate) struct Shared {
    to_rmcp: mpsc::UnboundedSender<Value>,
    /// Server requests waiting for rmcp's answer, by the bridge's id.
    answers: Answers,
    next_id: Arc<AtomicI64>,
}

impl Shared {
    pub(crate) fn new() -> (Shared, mpsc::UnboundedReceiver<Value>) {
        let (to_rmcp, from_session) = mpsc::unbounded_channel();
        let shared = Shared {
            to_rmcp,
            answers: Arc::default(),
            // Far from the small numbers servers use, for readable traces.
            next_id: Arc::new(AtomicI64::new(1 << 40)),
        };
        (shared, from_session)
    }

    /// Hands a server request to rmcp and waits for its answer.
    pub(crate) async fn ask(&self, method: &'static str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        self.answers.lock().expect("lock").insert(id, answer);
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let gone = || RpcError::new(INTERNAL_ERROR, "the rmcp client is gone", None);
        if self.to_rmcp.send(message).is_err() {
            self.answers.lock().expect("lock").remove(&id);
            return Err(gone());
        }
        answered.await.unwrap_or_else(|_| Err(gone()))
    }
}

/// An established session as rmcp's `Transport<RoleClient>`; made by
/// [`connect`](crate::connect).
pub struct SessionTransport {
    session: Arc<Session>,
    shared: Shared,
    from_session: mpsc::UnboundedReceiver<Value>,
    /// rmcp's requests in flight, by rmcp's id, to cancel them.
    in_flight: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// Cancelled when the session ended, on its own or by `close`.
    ended: CancellationToken,
    closed: Arc<AtomicBool>,
}

impl SessionTransport {
    pub(crate) fn new(
        session: Session,
        shared: Shared,
        from_session: mpsc::UnboundedReceiver<Value>,
        notifications: Notifications,
    ) -> SessionTransport {
        let session = Arc::new(session);
        let ended = CancellationToken::new();
        tokio::spawn(forward_notifications(
            notifications,
            shared.to_rmcp.clone(),
            ended.clone(),
        ));
        tokio::spawn(watch(Arc::clone(&session), ended.clone()));
        SessionTransport {
            session,
            shared,
            from_session,
            in_flight: Arc::default(),
            ended,
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The session underneath (its era, transport kind, server info).
    pub fn session(&self) -> &Session {
        &self.session
    }
}

async fn forward_notifications(
    mut notifications: Notifications,
    to_rmcp: mpsc::UnboundedSender<Value>,
    ended: CancellationToken,
) {
    loop {
        let notification = tokio::select! {
            _ = ended.cancelled() => return,
            next = notifications.recv() => match next {
                Some(notification) => notification,
                None => return,
            },
        };
        let mut message = json!({ "jsonrpc": "2.0", "method": notification.method });
        if let Some(params) = notification.params {
            message["params"] = params;
        }
        if to_rmcp.send(message).is_err() {
            return;
        }
    }
}

/// Ends the transport once the session is no longer open.
async fn watch(session: Arc<Session>, ended: CancellationToken) {
    loop {
        tokio::select! {
            _ = ended.cancelled() => return,
            _ = tokio::time::sleep(WATCH_INTERVAL) => {}
        }
        if session.state() != SessionState::Open {
            ended.cancel();
            return;
        }
    }
}

impl rmcp::transport::Transport<RoleClient> for SessionTransport {
    type Error = BridgeError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let message = serde_json::to_value(&item).map_err(BridgeError::Serialize);
        let session = Arc::clone(&self.session);
        let shared = self.shared.clone();
        let in_flight = Arc::clone(&self.in_flight);
        let ended = self.ended.clone();
        async move {
            let message = message?;
            let method = message.get("method").and_then(Value::as_str);
            match (method, message.get("id")) {
                (Some(method), Some(id)) => {
                    let token = CancellationToken::new();
                    in_flight
                        .lock()
                        .expect("lock")
                        .insert(id.to_string(), token.clone());
                    tokio::spawn(request(
                        session,
                        method.to_owned(),
                        id.clone(),
                        message.get("params").cloned(),
                        token,
                        shared,
                        in_flight,
                        ended,
                    ));
                    Ok(())
                }
                (Some("notifications/cancelled"), None) => {
                    let named = message["params"]["requestId"].to_string();
                    if let Some(token) = in_flight.lock().expect("lock").remove(&named) {
                        token.cancel();
                    }
                    Ok(())
                }
                (Some(method), None) => session
                    .notify(method, message.get("params").cloned())
                    .await
                    .map_err(BridgeError::Session),
                (None, Some(id)) => {
                    answer(&shared, id, &message);
                    Ok(())
                }
                (None, None) => Ok(()),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = tokio::select! {
                biased;
                message = self.from_session.recv() => message?,
                // Ended: what is already queued, then the end.
                _ = self.ended.cancelled() => self.from_session.try_recv().ok()?,
            };
            match serde_json::from_value(message) {
                Ok(message) => return Some(message),
                Err(error) => {
                    // Not a message rmcp models (a method it does not
                    // know): dropped, never the body in the log.
                    tracing::debug!(
                        target: "mcp_connect::rmcp",
                        category = ?error.classify(),
                        "a server message rmcp cannot read was dropped"
                    );
                }
            }
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        let first = !self.closed.swap(true, Ordering::SeqCst);
        let session = Arc::clone(&self.session);
        let ended = self.ended.clone();
        async move {
            ended.cancel();
            if first {
                session.close().await.map_err(BridgeError::Session)?;
            }
            Ok(())
        }
    }
}

/// Sends one of rmcp's requests through the session and queues the reply
/// under rmcp's id.
#[allow(clippy::too_many_arguments)]
async fn request(
    session: Arc<Session>,
    method: String,
    id: Value,
    params: Option<Value>,
    token: CancellationToken,
    shared: Shared,
    in_flight: Arc<Mutex<HashMap<String, CancellationToken>>>,
    ended: CancellationToken,
) {
    let options = RequestOptions::new().with_cancellation(token);
    let request = RawRequest::new(method, params);
    let outcome = session.send(Call::new(request).with_options(options)).await;
    in_flight.lock().expect("lock").remove(&id.to_string());
    let reply = match outcome {
        Ok(result) => {
            let result: Value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
            json!({ "jsonrpc": "2.0", "id": id, "result": result })
        }
        // rmcp cancelled it and expects no reply.
        Err(error) if matches!(error.kind(), ErrorKind::Cancelled) => return,
        Err(error) => {
            if mcp_connect::client::session_loss::session_lost(&error) {
                ended.cancel();
            }
            json!({ "jsonrpc": "2.0", "id": id, "error": error_object(&error) })
        }
    };
    let _ = shared.to_rmcp.send(reply);
}

/// The JSON-RPC error rmcp gets: the server's own, or an internal error
/// naming only the kind of failure.
fn error_object(error: &mcp_connect::Error) -> Value {
    match error.kind() {
        ErrorKind::Rpc(rpc) | ErrorKind::Rejected(rpc) => {
            let mut object = json!({ "code": rpc.code(), "message": rpc.message() });
            if let Some(data) = rpc.data() {
                object["data"] = data.clone();
            }
            object
        }
        _ => {
            let failure = error.failure();
            json!({
                "code": INTERNAL_ERROR,
                "message": format!("mcp-connect: the request failed ({})", failure.kind.as_str()),
                "data": {
                    crate::SESSION_LOST: mcp_connect::client::session_loss::session_lost(error),
                    "failure": failure.kind.as_str(),
                },
            })
        }
    }
}

/// rmcp's answer to a server request, back to the handler waiting for it.
fn answer(shared: &Shared, id: &Value, message: &Value) {
    let Some(id) = id.as_i64() else {
        return;
    };
    let Some(waiting) = shared.answers.lock().expect("lock").remove(&id) else {
        return;
    };
    let outcome = match (message.get("result"), message.get("error")) {
        (Some(result), _) => Ok(result.clone()),
        (None, Some(error)) => Err(RpcError::new(
            error["code"].as_i64().unwrap_or(INTERNAL_ERROR),
            error["message"].as_str().unwrap_or_default(),
            error.get("data").cloned(),
        )),
        (None, None) => Err(RpcError::new(INTERNAL_ERROR, "rmcp answered nothing", None)),
    };
    let _ = waiting.send(outcome);
}

/// A transport dropped without `close` (rmcp always closes it) still stops
/// its two helper tasks, so the session goes with the last handle.
impl Drop for SessionTransport {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

impl std::fmt::Debug for SessionTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTransport")
            .field("session", &self.session)
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
