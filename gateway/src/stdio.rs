//! The gateway over stdio: JSON-RPC lines in, JSON-RPC lines out, for a
//! host that starts the gateway as its server (Claude Desktop, an IDE).
//!
//! The connection is the session: `initialize` negotiates as over HTTP, and
//! a 2026-07-28 request (its version in `_meta`) stands alone. Requests run
//! at once, up to [`IN_FLIGHT`] together, each answer written as its own
//! line when it is ready; a line longer than the body limit is answered
//! with a parse error and skipped. It ends when the input ends.

use std::sync::Arc;

use futures_util::StreamExt as _;
use mcp_connect::protocol::{codes, meta_keys, Incoming, ProtocolVersion, RequestKind};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::codec::{FramedRead, LinesCodec};

use crate::answer::{answer, discovered, initialized, negotiated, Answer, Upstream};
use crate::inner::Inner;
use crate::reply::RpcFailure;
use crate::service::Gateway;

/// How many requests of one stdio connection run at once; the next waits.
pub const IN_FLIGHT: usize = 64;

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
        let slots = Arc::new(Semaphore::new(IN_FLIGHT));
        while let Some(line) = lines.next().await {
            let Ok(line) = line else {
                // Too long (the codec skips it) or not UTF-8.
                let failure = RpcFailure::new(codes::PARSE_ERROR, "the line could not be read");
                let _ = answers.send(error_line(None, &failure)).await;
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            let Ok(Incoming::Request { id, method, params }) = Incoming::parse(line.as_bytes())
            else {
                // Notifications and a client's responses need no answer;
                // what is not JSON-RPC gets a parse error.
                if Incoming::parse(line.as_bytes()).is_err() {
                    let failure = RpcFailure::new(codes::PARSE_ERROR, "not a JSON-RPC message");
                    let _ = answers.send(error_line(None, &failure)).await;
                }
                continue;
            };
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                break;
            };
            let inner = Arc::clone(&self.inner);
            let answers = answers.clone();
            tokio::spawn(async move {
                let id = serde_json::to_value(&id).unwrap_or(Value::Null);
                let line = match inner.stdio_answer(&method, params).await {
                    Ok(result) => format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
                        id,
                        result.get()
                    ),
                    Err(failure) => error_line(Some(&id), &failure),
                };
                let _ = answers.send(line).await;
                drop(slot);
            });
        }
        drop(answers);
        writer.await.unwrap_or(Ok(()))
    }
}

impl Inner {
    /// A request's answer in its era, with no transport around it.
    async fn stdio_answer(&self, method: &str, params: Option<Value>) -> Answer {
        let kind = RequestKind::of(method);
        let modern = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION));
        if let Some(version) = modern {
            if version.as_str() != Some(ProtocolVersion::LATEST_MODERN.as_str()) {
                let supported = json!({ "supported": [ProtocolVersion::LATEST_MODERN.as_str()] });
                return Err(RpcFailure::new(
                    codes::UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                )
                .with_data(supported));
            }
            return match kind {
                RequestKind::Discover => discovered(&self.name, &self.version),
                RequestKind::Initialize => Err(RpcFailure::new(
                    codes::INVALID_REQUEST,
                    "initialize is not part of 2026-07-28",
                )),
                _ => answer(self.upstream(), method, params, Default::default()).await,
            };
        }
        if kind == RequestKind::Initialize {
            let version = negotiated(params.as_ref());
            return initialized(version.as_str(), &self.name, &self.version);
        }
        answer(self.upstream(), method, params, Default::default()).await
    }

    /// Over stdio every request goes through the group's own clients (a
    /// member's questions are not relayed to a stdio client yet).
    fn upstream(&self) -> Upstream<'_> {
        Upstream {
            group: &self.group,
            session: None,
        }
    }
}

fn error_line(id: Option<&Value>, failure: &RpcFailure) -> String {
    let mut error = json!({ "code": failure.code, "message": failure.message });
    if let Some(data) = &failure.data {
        error["data"] = data.clone();
    }
    json!({ "jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": error })
        .to_string()
}
