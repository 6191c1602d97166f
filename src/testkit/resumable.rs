//! A 2025-11-25 Streamable HTTP server whose SSE streams are cut and can be
//! resumed with `GET` and `Last-Event-ID` (SEP-1699), for testing code that
//! must survive proxies and servers that cut long streams.
//!
//! Every `tools/call` is answered on an SSE stream: a priming event (an id,
//! and `retry:` when configured), some progress notifications, then the
//! reply, every event with an id of its own. Each connection of a stream is
//! cut after the number of events [`Resumable::cut_after`] says (by ending it,
//! or by breaking the connection); a `GET` with `Last-Event-ID` continues
//! the stream after that event, unless the server is told to refuse. A `GET`
//! without it opens a standalone stream of `notifications/message` events,
//! cut and resumed the same way, that stays open once everything was sent.

use crate::protocol::methods;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use serde_json::{json, Value};

use super::http::{error, result, Recorded, Script, ScriptServer};

/// How a [`ResumableServer`] cuts and resumes its streams.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Resumable {
    notifications: usize,
    cuts: Vec<usize>,
    break_connection: bool,
    retry_ms: Vec<Option<u64>>,
    refuse: Option<u16>,
    event_ids: bool,
    standalone: usize,
}

impl Default for Resumable {
    fn default() -> Self {
        Resumable {
            notifications: 3,
            cuts: Vec::new(),
            break_connection: false,
            retry_ms: vec![Some(100)],
            refuse: None,
            event_ids: true,
            standalone: 3,
        }
    }
}

impl Resumable {
    /// Three progress notifications before each reply, three messages on
    /// the standalone stream, `retry: 100`, nothing cut.
    pub fn new() -> Self {
        Resumable::default()
    }

    /// Progress notifications a `tools/call` stream sends before its reply.
    #[must_use]
    pub fn notifications(mut self, count: usize) -> Self {
        self.notifications = count;
        self
    }

    /// `notifications/message` events on the standalone `GET` stream.
    #[must_use]
    pub fn standalone(mut self, count: usize) -> Self {
        self.standalone = count;
        self
    }

    /// Connection `k` of every stream is cut after `cuts[k]` events (the
    /// priming event counts); connections past the list run to the end.
    #[must_use]
    pub fn cut_after(mut self, cuts: impl IntoIterator<Item = usize>) -> Self {
        self.cuts = cuts.into_iter().collect();
        self
    }

    /// Cut by breaking the connection mid-stream rather than ending the
    /// stream cleanly.
    #[must_use]
    pub fn breaking(mut self) -> Self {
        self.break_connection = true;
        self
    }

    /// The `retry:` each connection sends first (`None`: no `retry:`); the
    /// last entry holds for later connections.
    #[must_use]
    pub fn retry_ms(mut self, retry: impl IntoIterator<Item = Option<u64>>) -> Self {
        self.retry_ms = retry.into_iter().collect();
        self
    }

    /// Answer every resumption `GET` with this status.
    #[must_use]
    pub fn refuse(mut self, status: u16) -> Self {
        self.refuse = Some(status);
        self
    }

    /// Send no event ids, so nothing can be resumed.
    #[must_use]
    pub fn without_ids(mut self) -> Self {
        self.event_ids = false;
        self
    }
}

#[derive(Default)]
struct State {
    streams: Vec<Stream>,
    /// Event id to (stream, position).
    ids: HashMap<String, (usize, usize)>,
    resumptions: Vec<Option<String>>,
    waits: Vec<Duration>,
}

struct Stream {
    events: Vec<String>,
    /// The connection made for it so far.
    connections: usize,
    standalone: bool,
    cut_at: Option<Instant>,
}

/// A loopback server that cuts its SSE streams; see the module docs.
pub struct ResumableServer {
    server: ScriptServer,
    state: Arc<Mutex<State>>,
}

impl ResumableServer {
    /// Starts the server.
    pub async fn start(behaviour: Resumable) -> ResumableServer {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let server = ScriptServer::start(move |request| {
            let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
            answer(&behaviour, &mut state, request)
        })
        .await;
        ResumableServer { server, state }
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Every request received so far, in order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.server.recorded()
    }

    /// How many requests carried this JSON-RPC method.
    pub fn count(&self, rpc_method: &str) -> usize {
        self.server.count(rpc_method)
    }

    /// The `Last-Event-ID` of every `GET`, in order (`None` for a `GET`
    /// that opened a standalone stream).
    pub fn resumptions(&self) -> Vec<Option<String>> {
        self.lock().resumptions.clone()
    }

    /// For every resumption, how long after its stream was cut it came.
    pub fn waits(&self) -> Vec<Duration> {
        self.lock().waits.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ResumableServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumableServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

const SESSION: &str = "resumable-session-1";

fn answer(behaviour: &Resumable, state: &mut State, request: &Recorded) -> Script {
    match (request.method.as_str(), request.rpc_method()) {
        ("POST", methods::INITIALIZE) => Script::JsonWith(
            200,
            result(
                request,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "resumable", "version": "1" }
                }),
            ),
            vec![("mcp-session-id", SESSION.to_owned())],
        ),
        ("POST", methods::INITIALIZED) => Script::Status(202),
        ("POST", methods::TOOLS_LIST) => Script::Json(
            200,
            result(
                request,
                json!({ "tools": [{ "name": "slow", "inputSchema": { "type": "object" } }] }),
            ),
        ),
        ("POST", methods::TOOLS_CALL) => {
            let token = request.body["params"]["_meta"]["progressToken"].clone();
            let mut messages: Vec<Value> = (1..=behaviour.notifications)
                .map(|n| {
                    json!({ "jsonrpc": "2.0", "method": methods::NOTIFICATION_PROGRESS,
                            "params": { "progressToken": token, "progress": n } })
                })
                .collect();
            messages.push(result(
                request,
                json!({ "content": [{ "type": "text", "text": "done" }] }),
            ));
            let stream = open_stream(behaviour, state, messages, false);
            serve(behaviour, state, stream, 0)
        }
        ("GET", _) => match request.header("last-event-id") {
            Some(last) => {
                state.resumptions.push(Some(last.to_owned()));
                if let Some(status) = behaviour.refuse {
                    return Script::Status(status);
                }
                let Some(&(stream, position)) = state.ids.get(last) else {
                    return Script::Status(400);
                };
                if let Some(cut) = state.streams[stream].cut_at.take() {
                    state.waits.push(cut.elapsed());
                }
                serve(behaviour, state, stream, position + 1)
            }
            None => {
                state.resumptions.push(None);
                let messages = (1..=behaviour.standalone)
                    .map(|n| {
                        json!({ "jsonrpc": "2.0", "method": methods::NOTIFICATION_MESSAGE,
                                "params": { "level": "info", "data": n } })
                    })
                    .collect();
                let stream = open_stream(behaviour, state, messages, true);
                serve(behaviour, state, stream, 0)
            }
        },
        ("DELETE", _) => Script::Status(200),
        ("POST", _) if request.body.get("id").is_none() => Script::Status(202),
        _ => Script::Json(200, error(request, -32601, None)),
    }
}

/// Records a new stream: a priming event, then one event per message.
fn open_stream(
    behaviour: &Resumable,
    state: &mut State,
    messages: Vec<Value>,
    standalone: bool,
) -> usize {
    let index = state.streams.len();
    let mut events = vec![String::from("data:\n\n")];
    events.extend(messages.into_iter().map(|m| format!("data: {m}\n\n")));
    if behaviour.event_ids {
        for (position, event) in events.iter_mut().enumerate() {
            let id = format!("s{index}-e{position}");
            *event = format!("id: {id}\n{event}");
            state.ids.insert(id, (index, position));
        }
    }
    state.streams.push(Stream {
        events,
        connections: 0,
        standalone,
        cut_at: None,
    });
    index
}

/// The next connection of `stream`, from event `from` on.
fn serve(behaviour: &Resumable, state: &mut State, stream: usize, from: usize) -> Script {
    let stream = &mut state.streams[stream];
    let connection = stream.connections;
    stream.connections += 1;
    let retry = behaviour
        .retry_ms
        .get(connection)
        .or(behaviour.retry_ms.last())
        .copied()
        .flatten();
    let mut chunks: Vec<String> = retry
        .map(|ms| format!("retry: {ms}\n\n"))
        .into_iter()
        .collect();
    let remaining = &stream.events[from.min(stream.events.len())..];
    match behaviour.cuts.get(connection) {
        Some(&cut) if cut < remaining.len() => {
            chunks.extend(remaining[..cut].iter().cloned());
            stream.cut_at = Some(Instant::now());
            if behaviour.break_connection {
                Script::SseThenBreak(chunks)
            } else {
                Script::Sse(chunks)
            }
        }
        _ => {
            chunks.extend(remaining.iter().cloned());
            if stream.standalone {
                Script::SseThenStall(chunks)
            } else {
                Script::Sse(chunks)
            }
        }
    }
}
