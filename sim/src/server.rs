//! A simulated MCP server (Streamable HTTP, 2025-11-25, JSON answers) that
//! answers each `tools/call` as the seed planned: a result, a tool error, a
//! status, a slow or stalled answer, a dropped connection, or forgetting
//! every session. Each life of the host starts knowing no session, as a
//! restarted process does. It writes what it executed and answered into
//! the ledger.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Method, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use crate::faults::{answer, opening, Draw, Opening, Planned};
use crate::ledger::{note, Answer, Shared};

/// One server of the simulated world.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub name: &'static str,
    /// What it answers a request on a session it does not know: 404 (the
    /// specification) or 400 with a JSON-RPC error without id (the
    /// TypeScript SDK's examples).
    pub stale_status: u16,
    /// Whether its `tools/call` answers are drawn from the fault plan; if
    /// not, it executes every call and half of them are tool errors.
    pub faulty: bool,
    /// How the client reaches it.
    pub path: Path,
}

/// How the client host reaches a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Its own long-lived `McpClient`.
    Client,
    /// Its own `McpClient` with the opt-in replay of undelivered calls.
    Replay,
    /// Its own `McpClient` behind a breaker.
    Breaker,
    /// A member of the client's `ServerGroup`, with call policies on
    /// (see `group.rs`), its calls routed by catalogue name.
    Group,
}

/// What lives longer than one life of the host.
#[derive(Clone)]
pub struct Lasting {
    pub ledger: Shared,
    pub draw: Arc<Mutex<Draw>>,
    pub lives: Arc<AtomicU64>,
}

struct Life {
    spec: Spec,
    lasting: Lasting,
    number: u64,
    sessions: RefCell<BTreeSet<String>>,
    opened: Cell<u64>,
}

/// The host's software: accepts connections on port 80 until killed.
pub async fn serve(spec: Spec, lasting: Lasting) -> turmoil::Result {
    let number = lasting.lives.fetch_add(1, Ordering::Relaxed) + 1;
    note(
        &lasting.ledger,
        format_args!("{} starts, life {number}", spec.name),
    );
    let listener = turmoil::net::TcpListener::bind("0.0.0.0:80").await?;
    let life = Rc::new(Life {
        spec,
        lasting,
        number,
        sessions: RefCell::new(BTreeSet::new()),
        opened: Cell::new(0),
    });
    loop {
        let (stream, _) = listener.accept().await?;
        let life = Rc::clone(&life);
        tokio::task::spawn_local(async move {
            let service = service_fn(move |request| handle(Rc::clone(&life), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Returned by the handler to make hyper drop the connection unanswered.
#[derive(Debug)]
struct Drop;

impl std::fmt::Display for Drop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Drop {}

type Answered = Result<Response<Full<Bytes>>, Drop>;

async fn handle(life: Rc<Life>, request: http::Request<Incoming>) -> Answered {
    let (parts, body) = request.into_parts();
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match parts.method {
        Method::DELETE => {
            if let Some(session) = session {
                life.sessions.borrow_mut().remove(&session);
            }
            return Ok(reply(200, None, None));
        }
        Method::POST => {}
        _ => return Ok(reply(405, None, None)),
    }
    let bytes = body.collect().await.map_err(|_| Drop)?.to_bytes();
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let method = message["method"].as_str().unwrap_or("");
    if method == "initialize" {
        return life.initialize(id).await;
    }
    if method.starts_with("notifications/") {
        return Ok(reply(202, None, None));
    }
    let call = message["params"]["arguments"]["call"].as_u64();
    let known = session
        .as_ref()
        .is_some_and(|s| life.sessions.borrow().contains(s));
    if !known {
        return Ok(life.stale(call));
    }
    match (method, call) {
        ("tools/call", Some(call)) => life.call(id, call).await,
        ("tools/list", _) => Ok(result(id, json!({ "tools": [tool()] }))),
        ("ping", _) => Ok(result(id, json!({}))),
        _ => Ok(rpc_error(200, id, -32601)),
    }
}

impl Life {
    fn name(&self) -> &'static str {
        self.spec.name
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, crate::ledger::Ledger> {
        self.lasting.ledger.lock().expect("ledger")
    }

    /// Opens a session, unless the plan drops, delays or stalls the
    /// `initialize` (so establishments need their recovery and their
    /// deadline).
    async fn initialize(&self, id: Value) -> Answered {
        let planned = match self.spec.faulty {
            true => opening(&mut self.lasting.draw.lock().expect("draw")),
            false => Opening::Open,
        };
        let name = self.name();
        match planned {
            Opening::Open => {}
            Opening::Drop(delay) => {
                tokio::time::sleep(delay).await;
                crate::ledger::note(
                    &self.lasting.ledger,
                    format_args!("{name}: initialize dropped"),
                );
                return Err(Drop);
            }
            Opening::Slow(delay) => tokio::time::sleep(delay).await,
            Opening::Stall => {
                crate::ledger::note(
                    &self.lasting.ledger,
                    format_args!("{name}: initialize stalled"),
                );
                std::future::pending::<()>().await;
            }
        }
        Ok(self.open(id))
    }

    fn open(&self, id: Value) -> Response<Full<Bytes>> {
        self.opened.set(self.opened.get() + 1);
        let session = format!("{}-{}-{}", self.name(), self.number, self.opened.get());
        self.sessions.borrow_mut().insert(session.clone());
        {
            let mut ledger = self.ledger();
            let at = crate::ledger::now();
            ledger
                .sessions_created
                .entry(self.name())
                .or_default()
                .push(at);
            ledger.note(at, format_args!("{}: session {session}", self.name()));
        }
        let body = json!({
            "jsonrpc": "2.0", "id": id,
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": { "tools": {} },
                "serverInfo": { "name": self.name(), "version": "1" }
            }
        });
        reply(200, Some(body), Some(session))
    }

    /// The answer to a request on a session this life does not know.
    fn stale(&self, call: Option<u64>) -> Response<Full<Bytes>> {
        let status = self.spec.stale_status;
        if let Some(call) = call {
            self.record(call, Answer::Stale(status));
        }
        let code = if status == 404 { -32001 } else { -32000 };
        rpc_error(status, Value::Null, code)
    }

    fn record(&self, call: u64, answer: Answer) {
        let mut ledger = self.ledger();
        ledger.answers.entry(call).or_default().push(answer);
        if matches!(answer, Answer::Executed { .. } | Answer::DroppedAfter) {
            *ledger.executions.entry(call).or_default() += 1;
        }
        ledger.note(
            crate::ledger::now(),
            format_args!("{}: c{call} {answer:?}", self.name()),
        );
    }

    async fn call(&self, id: Value, call: u64) -> Answered {
        let planned = {
            let mut draw = self.lasting.draw.lock().expect("draw");
            match self.spec.faulty {
                true => answer(&mut draw),
                false => Planned::Execute {
                    tool_error: draw.below(2) == 0,
                },
            }
        };
        match planned {
            Planned::Execute { tool_error } => Ok(self.execute(id, call, tool_error)),
            Planned::Slow(delay) => {
                tokio::time::sleep(delay).await;
                Ok(self.execute(id, call, false))
            }
            Planned::Status(status) => {
                self.record(call, Answer::Status(status));
                let mut answer = rpc_error(status, id, -32603);
                if status == 429 {
                    let after = http::HeaderValue::from_static("1");
                    answer
                        .headers_mut()
                        .insert(http::header::RETRY_AFTER, after);
                }
                Ok(answer)
            }
            Planned::Stall => {
                self.record(call, Answer::Stalled);
                std::future::pending().await
            }
            Planned::DropAfter => {
                self.record(call, Answer::DroppedAfter);
                Err(Drop)
            }
            Planned::DropBefore => {
                self.record(call, Answer::DroppedBefore);
                Err(Drop)
            }
            Planned::ForgetSessions => {
                self.sessions.borrow_mut().clear();
                Ok(self.stale(Some(call)))
            }
        }
    }

    fn execute(&self, id: Value, call: u64, tool_error: bool) -> Response<Full<Bytes>> {
        self.record(call, Answer::Executed { tool_error });
        result(
            id,
            json!({
                "content": [{ "type": "text", "text": format!("done {call}") }],
                "isError": tool_error
            }),
        )
    }
}

fn tool() -> Value {
    json!({ "name": "work", "inputSchema": { "type": "object" } })
}

fn result(id: Value, result: Value) -> Response<Full<Bytes>> {
    reply(
        200,
        Some(json!({ "jsonrpc": "2.0", "id": id, "result": result })),
        None,
    )
}

fn rpc_error(status: u16, id: Value, code: i64) -> Response<Full<Bytes>> {
    let body = json!({
        "jsonrpc": "2.0", "id": id,
        "error": { "code": code, "message": "simulated" }
    });
    reply(status, Some(body), None)
}

fn reply(status: u16, body: Option<Value>, session: Option<String>) -> Response<Full<Bytes>> {
    let mut response = Response::builder().status(status);
    if let Some(session) = session {
        response = response.header("mcp-session-id", session);
    }
    let body = match body {
        Some(body) => {
            response = response.header("content-type", "application/json");
            Full::new(Bytes::from(body.to_string()))
        }
        None => Full::new(Bytes::new()),
    };
    response.body(body).expect("a valid response")
}
