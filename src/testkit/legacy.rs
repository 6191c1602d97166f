//! A ready-made legacy (2025) Streamable HTTP server for [`ScriptServer`].
//!
//! [`ScriptServer`]: super::ScriptServer

use crate::protocol::{methods, NotificationKind, RequestKind};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use http::Method;
use serde_json::json;

use super::http::{error, result, Recorded, Script};

/// How a [`LegacyServer`] answers a request whose session id it does not
/// know (expired, or from before a restart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum UnknownSession {
    /// 404 with a JSON-RPC error naming the request, as the spec says (the
    /// Python SDK). The default.
    #[default]
    NotFound,
    /// 400 with a JSON-RPC error without an id, as server-everything
    /// 2026.8.31 sends it (no `id` member at all): the transport refused the
    /// request before any handler (the TypeScript SDK v1 examples).
    BadRequestWithoutId,
    /// 400 with a JSON-RPC error naming the request's id: a handler's
    /// refusal, which says nothing about the session.
    BadRequestWithId,
    /// This status without a body (401 from an rmcp server, say).
    Status(u16),
}

#[derive(Debug, Default)]
struct State {
    unknown_session: Mutex<UnknownSession>,
    open: Mutex<HashSet<String>>,
    created: AtomicU64,
    deleted: AtomicU64,
    tool_calls: AtomicU64,
}

/// Answers like a 2025 server with sessions: `server/discover` gets 400
/// `-32000` (as the TypeScript SDK does), `initialize` opens a session
/// (`Mcp-Session-Id: session-N`), later requests need a known session (400
/// without one, 404 for an unknown or expired one), DELETE ends it, GET gets
/// 405. Clones share state.
#[derive(Debug, Clone, Default)]
pub struct LegacyServer {
    state: Arc<State>,
}

impl LegacyServer {
    /// A server with no sessions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sessions created so far.
    pub fn sessions_created(&self) -> u64 {
        self.state.created.load(Ordering::Relaxed)
    }

    /// Sessions ended by DELETE so far.
    pub fn sessions_deleted(&self) -> u64 {
        self.state.deleted.load(Ordering::Relaxed)
    }

    /// Sessions open now.
    pub fn open_sessions(&self) -> usize {
        self.state
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// `tools/call` requests answered so far.
    pub fn tool_calls(&self) -> u64 {
        self.state.tool_calls.load(Ordering::Relaxed)
    }

    /// Forgets every session, as a restart does: later requests on them
    /// get the [`UnknownSession`] answer (404 by default).
    pub fn expire_sessions(&self) {
        self.state
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// How a request on an unknown session is answered from now on.
    pub fn answer_unknown_sessions(&self, answer: UnknownSession) {
        *self
            .state
            .unknown_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = answer;
    }

    /// The answer to one request.
    pub fn respond(&self, request: &Recorded) -> Script {
        let session = request.header("mcp-session-id").map(str::to_owned);
        match (&request.method, request.rpc_method()) {
            (&Method::GET, _) => return Script::Status(405),
            (&Method::DELETE, _) => {
                let removed = session.is_some_and(|s| {
                    self.state
                        .open
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&s)
                });
                if removed {
                    self.state.deleted.fetch_add(1, Ordering::Relaxed);
                }
                return Script::Status(if removed { 200 } else { 404 });
            }
            (_, methods::SERVER_DISCOVER) => {
                return Script::Json(400, error(request, -32000, None))
            }
            (_, methods::INITIALIZE) => {
                let n = self.state.created.fetch_add(1, Ordering::Relaxed) + 1;
                let id = format!("session-{n}");
                self.state
                    .open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.clone());
                let body = result(
                    request,
                    json!({
                        "protocolVersion": request.body["params"]["protocolVersion"],
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "testkit-legacy", "version": n.to_string() }
                    }),
                );
                return Script::JsonWith(200, body, vec![("mcp-session-id", id)]);
            }
            _ => {}
        }
        match session {
            None => Script::Json(400, error(request, -32600, None)),
            Some(s)
                if !self
                    .state
                    .open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(&s) =>
            {
                match *self
                    .state
                    .unknown_session
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                {
                    UnknownSession::NotFound => Script::Json(404, error(request, -32600, None)),
                    UnknownSession::BadRequestWithoutId => Script::Json(
                        400,
                        json!({
                            "jsonrpc": "2.0",
                            "error": { "code": -32000, "message": "Bad Request: No valid session ID provided" }
                        }),
                    ),
                    UnknownSession::BadRequestWithId => {
                        Script::Json(400, error(request, -32602, None))
                    }
                    UnknownSession::Status(status) => Script::Status(status),
                }
            }
            Some(_)
                if request.rpc_method().is_empty()
                    || NotificationKind::of(request.rpc_method())
                        == NotificationKind::Initialized =>
            {
                Script::Status(202)
            }
            Some(_) => match RequestKind::of(request.rpc_method()) {
                RequestKind::CallTool => {
                    self.state.tool_calls.fetch_add(1, Ordering::Relaxed);
                    Script::Json(
                        200,
                        result(
                            request,
                            json!({ "content": [{ "type": "text", "text": "ok" }] }),
                        ),
                    )
                }
                RequestKind::Ping => Script::Json(200, result(request, json!({}))),
                RequestKind::GetPrompt => {
                    Script::Json(200, result(request, json!({ "messages": [] })))
                }
                RequestKind::ReadResource => {
                    Script::Json(200, result(request, json!({ "contents": [] })))
                }
                RequestKind::Subscribe | RequestKind::Unsubscribe => {
                    Script::Json(200, result(request, json!({})))
                }
                _ => Script::Json(200, error(request, -32601, None)),
            },
        }
    }
}

impl LegacyServer {
    /// This server as a [`ScriptServer`](super::ScriptServer) closure.
    pub fn responder(self) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
        move |request| self.respond(request)
    }
}
