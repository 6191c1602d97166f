//! The gateway over stdio: JSON-RPC lines in, JSON-RPC lines out, for a
//! host that starts the gateway as its server (Claude Desktop, an IDE).
//!
//! The connection is the session: `initialize` negotiates as over HTTP and
//! opens the connection's [`Downstream`] (its own member clients with
//! [`GatewayBuilder::session_clients`](crate::GatewayBuilder::session_clients),
//! its log level, its questions), and a 2026-07-28 request (its version in
//! `_meta`) stands alone, a member's questions to it coming back as
//! `input_required` rounds. Requests run at once, up to [`IN_FLIGHT`]
//! together, each answer written as its own line when it is ready; what a
//! member says toward the client on the way (progress, log messages, its
//! own requests) goes out as lines too, and the client's answers to those
//! requests and its `notifications/cancelled` come back in. A line longer
//! than the body limit is answered with a parse error and skipped. It ends
//! when the input ends.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures_util::StreamExt as _;
use mcp_connect::protocol::{codes, meta_keys, Incoming, ProtocolVersion, RequestKind};
use mcp_connect::session::RequestOptions;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::sync::CancellationToken;

use crate::answer::{answer, discovered, initialized, negotiated, Answer};
use crate::body::event;
use crate::downstream::{level_rank, Downstream};
use crate::governance::Caller;
use crate::inner::Inner;
use crate::relay;
use crate::reply::{error_message, result_message, RpcFailure};
use crate::service::{routed, Gateway};

/// How many requests of one stdio connection run at once; the next waits.
pub const IN_FLIGHT: usize = 64;

/// One stdio connection: its session (from `initialize` on) and where what
/// goes to the client is written.
struct Connection {
    session: OnceLock<Arc<Downstream>>,
    /// Events for the client (a member's requests, progress, log messages,
    /// answers of routed requests), each written as a line.
    events: mpsc::Sender<Bytes>,
}

impl Gateway {
    /// Serves one client over `input` and `output` (a process's stdin and
    /// stdout) until `input` ends; an error writing `output` ends it too.
    pub async fn serve_stdio<R, W>(&self, input: R, mut output: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut lines =
            FramedRead::new(input, LinesCodec::new_with_max_length(self.inner.max_body));
        let (answers, mut written) = mpsc::channel::<String>(IN_FLIGHT);
        let writer = tokio::spawn(async move {
            while let Some(line) = written.recv().await {
                output.write_all(line.as_bytes()).await?;
                output.write_all(b"\n").await?;
                output.flush().await?;
            }
            Ok::<(), std::io::Error>(())
        });
        let (events, mut framed) = mpsc::channel::<Bytes>(IN_FLIGHT);
        let unframing = answers.clone();
        tokio::spawn(async move {
            while let Some(event) = framed.recv().await {
                if let Some(line) = unframed(&event) {
                    if unframing.send(line).await.is_err() {
                        break;
                    }
                }
            }
        });
        let connection = Arc::new(Connection {
            session: OnceLock::new(),
            events,
        });
        let slots = Arc::new(Semaphore::new(IN_FLIGHT));
        while let Some(line) = lines.next().await {
            let Ok(line) = line else {
                // Too long (the codec skips it) or not UTF-8.
                let failure = RpcFailure::new(codes::PARSE_ERROR, "the line could not be read");
                let _ = answers.send(error_message(None, &failure)).await;
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            let (id, method, params) = match Incoming::parse(line.as_bytes()) {
                Ok(Incoming::Request { id, method, params }) => (id, method, params),
                Ok(other) => {
                    connection.taken(other);
                    continue;
                }
                Err(_) => {
                    let failure = RpcFailure::new(codes::PARSE_ERROR, "not a JSON-RPC message");
                    let _ = answers.send(error_message(None, &failure)).await;
                    continue;
                }
            };
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                break;
            };
            let (inner, connection) = (Arc::clone(&self.inner), Arc::clone(&connection));
            let answers = answers.clone();
            tokio::spawn(async move {
                let id = serde_json::to_value(&id).unwrap_or(Value::Null);
                if let Some(line) = inner.stdio_answer(&connection, &id, &method, params).await {
                    let _ = answers.send(line).await;
                }
                drop(slot);
            });
        }
        drop(answers);
        // The session ends with its input: its members' sessions with it.
        if let Some(down) = connection.session.get() {
            down.close().await;
        }
        drop(connection);
        writer.await.unwrap_or(Ok(()))
    }
}

/// The JSON-RPC message an event carries (`data: ...`), as a line.
fn unframed(event: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(event).ok()?;
    let data = text.lines().find_map(|line| line.strip_prefix("data: "))?;
    (!data.trim().is_empty()).then(|| data.to_owned())
}

impl Connection {
    /// A notification or a client's answer: a cancellation cancels the
    /// request it names, an answer goes to the member that asked.
    fn taken(&self, message: Incoming) {
        let Some(down) = self.session.get() else {
            return;
        };
        down.take(message);
    }
}

impl Inner {
    /// A request's answer line in its era; `None` when it went out as an
    /// event (a routed request of the session, whose answer follows what
    /// it caused).
    async fn stdio_answer(
        &self,
        connection: &Connection,
        id: &Value,
        method: &str,
        params: Option<Value>,
    ) -> Option<String> {
        let kind = RequestKind::of(method);
        let line = |answer: Answer| match answer {
            Ok(result) => result_message(id, &result),
            Err(failure) => error_message(Some(id), &failure),
        };
        let modern = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION));
        if let Some(version) = modern {
            if version.as_str() != Some(ProtocolVersion::LATEST_MODERN.as_str()) {
                let supported = json!({ "supported": [ProtocolVersion::LATEST_MODERN.as_str()] });
                let failure = RpcFailure::new(
                    codes::UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                );
                return Some(line(Err(failure.with_data(supported))));
            }
            return Some(line(match kind {
                RequestKind::Discover => discovered(&self.name, &self.version),
                RequestKind::Initialize => Err(RpcFailure::new(
                    codes::INVALID_REQUEST,
                    "initialize is not part of 2026-07-28",
                )),
                _ => {
                    let options = Default::default();
                    self.modern_answer(kind, method, params, options, None, Caller::default())
                        .await
                }
            }));
        }
        if kind == RequestKind::Initialize {
            let version = negotiated(params.as_ref());
            let capabilities = (params.as_ref())
                .and_then(|p| p.get("capabilities"))
                .cloned()
                .unwrap_or(Value::Null);
            let _ =
                (connection.session).set(Arc::new(Downstream::new(capabilities, version.clone())));
            return Some(line(initialized(
                version.as_str(),
                &self.name,
                &self.version,
            )));
        }
        let Some(down) = connection.session.get() else {
            let upstream = self.upstream(None, Caller::default());
            return Some(line(
                answer(upstream, method, params, Default::default()).await,
            ));
        };
        if kind == RequestKind::SetLoggingLevel {
            let level = (params.as_ref())
                .and_then(|p| p.get("level"))
                .and_then(Value::as_str);
            match level.and_then(level_rank) {
                Some(rank) => down.set_level(rank),
                None => {
                    let failure = RpcFailure::new(codes::INVALID_PARAMS, "Unknown level");
                    return Some(line(Err(failure)));
                }
            }
        }
        let caller = Caller {
            principal: None,
            approver: Some(down),
        };
        let upstream = self.upstream(Some(down), caller);
        if !routed(kind) {
            return Some(line(
                answer(upstream, method, params, Default::default()).await,
            ));
        }
        // Routed: registered as the session's request, so that what it
        // causes and its cancellation find it, and answered as an event.
        let token = CancellationToken::new();
        let mut options = RequestOptions::new().with_cancellation(token.clone());
        let mut params = params;
        let progress = (params.as_mut())
            .and_then(|p| p.get_mut("_meta"))
            .and_then(Value::as_object_mut)
            .and_then(|meta| meta.remove("progressToken"));
        if let Some(progress) = progress {
            options = options.with_progress(relay::progress(connection.events.clone(), progress));
        }
        let Some(no) = down.open_request(id.to_string(), connection.events.clone(), token) else {
            let failure = RpcFailure::new(
                codes::INTERNAL_ERROR,
                "too many requests of this session are running",
            );
            return Some(line(Err(failure)));
        };
        let answered = line(answer(upstream, method, params, options).await);
        down.finish(no, event(&answered)).await;
        None
    }
}
