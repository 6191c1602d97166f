//! What a member sends toward the client, relayed to the downstream
//! session that caused it: its requests (sampling, elicitation, roots),
//! asked of the client on the session's stream and answered back upstream;
//! its log messages (at the level the client set) and resource updates;
//! and a call's progress, under the client's own progress token, on that
//! call's stream.
//!
//! A session's upstream clients declare only what its client declared: a
//! member never asks a client for what it cannot do, and a client that
//! declared nothing is asked nothing.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use mcp_connect::inbound::{
    notification_channel, ClientHandler, NotificationSender, Progress, RequestKind,
};
use mcp_connect::protocol::{codes, methods, NotificationKind, ProtocolVersion, RpcError};
use mcp_connect::request::VersionPolicy;
use mcp_connect::ConnectRequest;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::body::event;
use crate::downstream::Downstream;

/// What the gateway puts on a 2025 session's own client of a member (see
/// [`GatewayBuilder::session_clients`](crate::GatewayBuilder::session_clients)):
/// the handler that asks the session's client what the member asks, the
/// listener that relays the member's log messages and resource updates,
/// and the session's version as the highest the member is offered (a
/// client of a 2025 session expects a 2025 member: a session, questions on
/// a stream, subscriptions, log levels).
pub struct SessionRelay {
    handler: ClientHandler,
    notifications: NotificationSender,
    version: ProtocolVersion,
    principal: Option<crate::Principal>,
    caller: Weak<Downstream>,
}

impl SessionRelay {
    pub(crate) fn new(
        handler: ClientHandler,
        notifications: NotificationSender,
        version: ProtocolVersion,
    ) -> Self {
        SessionRelay {
            handler,
            notifications,
            version,
            principal: None,
            caller: Weak::new(),
        }
    }

    /// The principal the session belongs to (a resource server's
    /// gateway): the one to name the member client's tokens for
    /// ([`Authorization::for_principal`](mcp_connect::auth::Authorization::for_principal)),
    /// so a store never hands one caller's tokens to another.
    pub fn principal(&self) -> Option<&crate::Principal> {
        self.principal.as_ref()
    }

    /// The caller's access token as its latest request carried it, read
    /// each time it is needed: the subject of a token exchange
    /// ([`Authorization::token_exchange`](mcp_connect::auth::Authorization::token_exchange)).
    /// Never pass it to the member itself: the MCP authorization
    /// specification forbids passing a client's token through.
    pub fn caller_token(&self) -> mcp_connect::auth::AssertionSource {
        let caller = self.caller.clone();
        mcp_connect::auth::AssertionSource::from_fn(move || {
            let token = caller.upgrade().and_then(|down| down.caller_token());
            async move { token.ok_or_else(|| "the session has no caller's token".into()) }
        })
    }

    /// `request` with the relay on it; a request whose versions are
    /// already capped or pinned keeps its own rule.
    pub fn apply(self, request: ConnectRequest) -> ConnectRequest {
        let request = request
            .with_handler(self.handler)
            .with_notifications(self.notifications);
        match request.versions() {
            VersionPolicy::Auto => request.with_versions(VersionPolicy::Ceiling(self.version)),
            _ => request,
        }
    }
}

impl std::fmt::Debug for SessionRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRelay")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// The relay for one session's client of a member.
pub(crate) fn session_relay(down: &Arc<Downstream>) -> SessionRelay {
    SessionRelay {
        handler: handler(down),
        notifications: notifications(down),
        version: down.version.clone(),
        principal: down.principal.clone(),
        caller: Arc::downgrade(down),
    }
}

/// How long a member's question waits for the client's answer: a person
/// may be filling in a form, and the member's own call is bounded anyway.
const ASK_BOUND: Duration = Duration::from_secs(300);

/// How many notifications of one session wait to be relayed; more are
/// dropped (and counted by the library) rather than stalling a member.
const QUEUE: usize = 64;

/// The handler a session's upstream clients answer their member with.
pub(crate) fn handler(down: &Arc<Downstream>) -> ClientHandler {
    let mut handler = ClientHandler::new();
    let kinds = [
        (
            RequestKind::Sampling,
            "sampling",
            methods::SAMPLING_CREATE_MESSAGE,
        ),
        (
            RequestKind::Elicitation,
            "elicitation",
            methods::ELICITATION_CREATE,
        ),
        (RequestKind::Roots, "roots", methods::ROOTS_LIST),
    ];
    for (kind, capability, method) in kinds {
        if down.declared(capability) {
            let down = Arc::downgrade(down);
            handler = handler.on_raw(kind, move |params| ask(down.clone(), method, params));
        }
    }
    let url_mode = down.capabilities.pointer("/elicitation/url").is_some();
    if url_mode {
        handler = handler.with_url_elicitation();
    }
    handler
}

/// Asks the session's client `method` and waits for its answer.
pub(crate) async fn ask(
    down: Weak<Downstream>,
    method: &'static str,
    params: Value,
) -> Result<Value, RpcError> {
    let gone = || RpcError::new(codes::INTERNAL_ERROR, "the client is gone", None);
    let down = down.upgrade().ok_or_else(gone)?;
    let Some((id, answer)) = down.ask() else {
        let message = "too many questions wait for the client";
        return Err(RpcError::new(codes::INTERNAL_ERROR, message, None));
    };
    let question = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    if !down.send(event(&question.to_string())) {
        down.forget(id);
        let message = "the client has no open stream to ask on";
        return Err(RpcError::new(codes::INTERNAL_ERROR, message, None));
    }
    drop(down);
    match tokio::time::timeout(ASK_BOUND, answer).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err(gone()),
        Err(_) => Err(RpcError::new(
            codes::INTERNAL_ERROR,
            "the client did not answer",
            None,
        )),
    }
}

/// The listener a session's upstream clients send notifications to, and
/// the task that relays them to the session while it lives.
pub(crate) fn notifications(down: &Arc<Downstream>) -> NotificationSender {
    let (sender, mut received) = notification_channel(QUEUE);
    let down = Arc::downgrade(down);
    tokio::spawn(async move {
        // Ends when the session's clients are gone (every sender dropped)
        // or the session is.
        while let Some(notification) = received.recv().await {
            let Some(down) = down.upgrade() else { break };
            let relayed = match notification.kind() {
                NotificationKind::Message => {
                    let level = (notification.params.as_ref())
                        .and_then(|p| p.get("level"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    down.wants_log(level)
                }
                NotificationKind::ResourceUpdated => true,
                _ => false,
            };
            if relayed {
                let message = json!({
                    "jsonrpc": "2.0",
                    "method": notification.method,
                    "params": notification.params,
                });
                down.send(event(&message.to_string()));
            }
        }
    });
    sender
}

/// A call's progress callback: each report on `stream` under `token`,
/// the client's own progress token. A report that finds the stream full
/// is dropped: progress is advisory, and the answer is not.
pub(crate) fn progress(
    stream: mpsc::Sender<Bytes>,
    token: Value,
) -> impl Fn(Progress) + Send + Sync + 'static {
    move |report: Progress| {
        let mut params = json!({ "progressToken": token, "progress": report.progress });
        if let Some(total) = report.total {
            params["total"] = json!(total);
        }
        let message = json!({
            "jsonrpc": "2.0",
            "method": methods::NOTIFICATION_PROGRESS,
            "params": params,
        });
        let _ = stream.try_send(event(&message.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    #[tokio::test]
    async fn a_members_question_is_asked_on_the_stream_and_its_answer_returned() {
        let down = Arc::new(Downstream::new(
            json!({ "sampling": {} }),
            ProtocolVersion::LATEST_LEGACY,
        ));
        let handler = handler(&down);
        assert!(handler.capabilities().get("sampling").is_some());
        assert!(handler.capabilities().get("elicitation").is_none());
        let (stream, mut events) = mpsc::channel(4);
        down.open_request("7".into(), stream, CancellationToken::new())
            .unwrap();
        let asking = tokio::spawn(ask(
            Arc::downgrade(&down),
            methods::SAMPLING_CREATE_MESSAGE,
            json!({}),
        ));
        let question = events.recv().await.unwrap();
        let text = std::str::from_utf8(&question).unwrap();
        let body: Value =
            serde_json::from_str(text.split("data: ").nth(1).unwrap().trim()).unwrap();
        let id = body["id"].as_u64().unwrap();
        assert!(down.answered(id, Ok(json!({ "role": "assistant" }))));
        assert_eq!(asking.await.unwrap().unwrap()["role"], "assistant");
    }

    #[tokio::test]
    async fn with_no_stream_a_question_fails_at_once() {
        let down = Arc::new(Downstream::new(
            json!({ "roots": {} }),
            ProtocolVersion::LATEST_LEGACY,
        ));
        let answer = ask(Arc::downgrade(&down), methods::ROOTS_LIST, json!({})).await;
        assert_eq!(answer.unwrap_err().code(), codes::INTERNAL_ERROR);
    }
}
