//! One request's own control: its cancellation, its timeout, its progress.
//!
//! Cancelling the token, an expired timeout or dropping the future all end
//! the request the same way: its waiter is removed and, on the legacy era,
//! the server is told with `notifications/cancelled` (on the modern era the
//! POST it rode on is simply closed, which is that era's cancellation). A
//! request that asks for progress carries a `progressToken`; each report
//! reaches its callback and, when asked, restarts the timeout, never past
//! a maximum total.

use crate::protocol::methods;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::instant::after;
use mcp_connect_layers::{CancelSource, Stage};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::{RequestOptions, Session};
use crate::auth::Reauthorization;
use crate::error::{Error, ErrorKind, InputRequiredError, TransportError};
use crate::protocol::{codes, Era, Notification, ProtocolVersion, Request, RequestId, RpcError};
use crate::response_cache::CacheMode;
use crate::telemetry::call::CallSpan;
use crate::transport::Transport;

/// Progress tokens are unique in the process, so one listener can serve
/// every session.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Tells the server a request is abandoned, unless disarmed: dropping the
/// request future mid-flight cancels it on the wire too. It borrows the
/// session, so a request that completes (the common case) clones nothing.
struct CancelOnDrop<'a> {
    session: &'a Session,
    id: i64,
    reason: &'static str,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let session = self.session;
        if !self.armed || session.era() != Era::Legacy || session.transport.closed().is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let transport: Arc<dyn Transport> = Arc::clone(&session.transport);
        let version: ProtocolVersion = session.negotiated.version.clone();
        let notification = Notification {
            method: methods::NOTIFICATION_CANCELLED.into(),
            params: Some(json!({ "requestId": self.id, "reason": self.reason })),
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                transport.notify(&notification, Some(&version)),
            )
            .await;
        });
    }
}

impl Session {
    /// Sends a request with its own [`RequestOptions`] and returns its raw
    /// result.
    ///
    /// Fails with [`CancelSource::RequestTimeout`] when its limit expires and
    /// with [`ErrorKind::Cancelled`] when its token is cancelled; in both
    /// cases, and when the future is dropped, the server is told on the
    /// legacy era with `notifications/cancelled`.
    pub async fn request_with(
        &self,
        method: &str,
        params: Option<Value>,
        options: &RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        let lookup = self.lookup(method, params.as_ref(), options.cache);
        if let Some(lookup) = &lookup {
            if let Some(hit) = self.cached(lookup).await {
                return Ok(hit);
            }
        }
        if self.carries_param_headers(method) {
            self.seed_tool_headers().await;
        }
        let token = options.wants_progress().then(|| {
            Value::from(format!(
                "mcp-connect-{}",
                NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
            ))
        });
        let params = match &token {
            Some(token) => Some(with_progress_token(params, token)),
            None => params,
        };
        let param_headers = self.param_headers(method, params.as_ref())?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let span = self
            .telemetry
            .as_ref()
            .map(|session| CallSpan::start(session, method, id, params.as_ref()));
        let mut request = self.outgoing(id, method, params);
        if let Some(span) = &span {
            span.carry(&mut request);
        }
        request.param_headers = param_headers;
        let watch = token
            .as_ref()
            .map(|token| self.inbound.watch_progress(token, options.progress.clone()));
        let mut guard = CancelOnDrop {
            session: self,
            id,
            reason: "the client abandoned the request",
            armed: true,
        };
        let started = Instant::now();
        let limit = options.timeout.unwrap_or(self.request_timeout);
        let ceiling = after(
            started,
            options.max_total.map_or(limit, |total| total.max(limit)),
        );
        let timer = tokio::time::sleep_until(after(started, limit).min(ceiling));
        tokio::pin!(timer);
        let reply = self.exchange(request);
        tokio::pin!(reply);
        let cancelled = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        let outcome = loop {
            let progressed = async {
                match (&watch, options.max_total) {
                    (Some(watch), Some(_)) => watch.reported().await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                outcome = &mut reply => break Ok(outcome),
                _ = &mut cancelled => {
                    guard.reason = "the client cancelled the request";
                    break Err(Error::new(Stage::REQUEST, ErrorKind::Cancelled));
                }
                _ = &mut timer => {
                    guard.reason = "timeout";
                    break Err(Error::new(
                        Stage::REQUEST,
                        ErrorKind::Timeout(CancelSource::RequestTimeout),
                    ));
                }
                _ = progressed => {
                    let next = after(Instant::now(), limit).min(ceiling);
                    timer.as_mut().reset(next);
                }
            }
        };
        let result = match outcome {
            Ok(outcome) => {
                guard.armed = false;
                outcome
            }
            // The guard, still armed, tells the server as it drops.
            Err(error) => Err(error),
        };
        let result = match (result, &lookup) {
            (Ok(Exchanged { raw, rounds: 0 }), Some(lookup)) => {
                self.remember(lookup, &raw).await;
                Ok(raw)
            }
            (result, _) => result.map(|exchanged| exchanged.raw),
        };
        if let Some(span) = span {
            span.finish(result.as_deref().map_err(Error::failure));
        }
        result
    }

    /// A request with the session's envelope (on the modern era).
    pub(super) fn outgoing(&self, id: i64, method: &str, params: Option<Value>) -> Request {
        let own_meta = params.as_ref().is_some_and(|p| p.get("_meta").is_some());
        match (&self.meta, own_meta) {
            // The envelope the session encoded once goes in as bytes.
            (Some(meta), false) => {
                Request::new(RequestId::Number(id), method, params).with_meta(Arc::clone(meta))
            }
            // Params with a `_meta` of their own get the envelope merged in.
            (Some(_), true) => Request::new(
                RequestId::Number(id),
                method,
                Some(self.client.stamp(&self.negotiated.version, params)),
            ),
            (None, _) => Request::new(RequestId::Number(id), method, params),
        }
    }

    /// Sends `request`, once more on the same session when the server
    /// refused it before running it and the refusal can be cured: a 401 (or
    /// 403 `insufficient_scope`) after authorizing again (the rule the
    /// establishment follows too: `auth::Reauthorization`), a `HeaderMismatch`
    /// after listing the tools. That is not a replay: the refusal says the
    /// request did not run. Then, on the 2026-07-28 era, completes a
    /// multi-round-trip exchange (SEP-2322): while the result is
    /// `input_required`, the handler answers its input requests and the
    /// request is sent again (a new id) with `inputResponses` and the
    /// server's `requestState` echoed verbatim, at most [`MAX_INPUT_ROUNDS`]
    /// times. The caller's timeout and cancellation bound every round.
    async fn exchange(&self, mut request: Request) -> Result<Exchanged, Error> {
        let version = &self.negotiated.version;
        let mut rounds = 0;
        let mut relisted = false;
        let mut reauthorization = Reauthorization::default();
        if let Some(auth) = &self.auth {
            // Ahead of the expiry. A refresh that cannot be had now (the
            // authorization server slow or down) leaves the token in force,
            // which works until it expires; a store that cannot work as
            // configured is the answer.
            if let Err(error @ crate::auth::AuthError::Store(_)) = auth.refresh_ahead().await {
                return Err(Error::authorization(error));
            }
        }
        loop {
            let reply = self.transport.request(&request, Some(version)).await;
            if let Some(auth) = &self.auth {
                let permit = reauthorization.permit(auth, refusal_status(&reply));
                if let Some(allow_new) = permit.map_err(Error::authorization)? {
                    // Refused before it ran (401, or 403 asking for more
                    // scope): authorize again and send it once more.
                    let authorized = auth.run(None, allow_new).await;
                    reauthorization.record(authorized.map_err(Error::authorization)?);
                    request.id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
                    continue;
                }
            }
            if let Some(refused) = self.judge_remembered(&reply).await {
                return Err(refused);
            }
            let raw = match reply {
                Ok(Ok(raw)) => raw,
                Ok(Err(rpc)) if !relisted && self.may_relist(&request, &rpc) => {
                    // The server refused the call before running it: list
                    // the tools (their declarations may be new, so never
                    // from the response cache) and send it once more. A
                    // listing that fails leaves the refusal as the answer.
                    relisted = true;
                    let fresh = RequestOptions::new().with_cache(CacheMode::Refresh);
                    if Box::pin(self.list_tools_with(&fresh)).await.is_err() {
                        return Err(Error::new(Stage::REQUEST, ErrorKind::Rpc(rpc)));
                    }
                    request.param_headers =
                        self.param_headers(&request.method, request.params.as_ref())?;
                    request.id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
                    continue;
                }
                Ok(Err(rpc)) => return Err(Error::new(Stage::REQUEST, ErrorKind::Rpc(rpc))),
                Err(e) => return Err(Error::transport(Stage::REQUEST, e)),
            };
            if self.era() != Era::Modern {
                return Ok(Exchanged { raw, rounds });
            }
            let offered_task = crate::extensions::tasks::offered(request.params.as_ref());
            let asked = match input_required(&raw, offered_task) {
                Ok(None) => return Ok(Exchanged { raw, rounds }),
                Ok(Some(asked)) => asked,
                Err(error) => return Err(input_error(error)),
            };
            rounds += 1;
            if rounds > MAX_INPUT_ROUNDS {
                return Err(input_error(InputRequiredError::TooManyRounds {
                    limit: MAX_INPUT_ROUNDS,
                }));
            }
            let responses = self
                .inbound
                .answer_inputs(&asked.input_requests)
                .await
                .map_err(input_error)?;
            // The retry is the original request with this round's answers
            // (never an earlier round's) and the state exactly as sent.
            let mut params = match request.params.take() {
                Some(Value::Object(params)) => params,
                _ => Map::new(),
            };
            params.remove("inputResponses");
            params.remove("requestState");
            if !responses.is_empty() {
                params.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = asked.request_state {
                params.insert("requestState".into(), Value::String(state));
            }
            let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
            let mut retry = Request::new(
                id,
                std::mem::take(&mut request.method),
                Some(Value::Object(params)),
            );
            if let Some(meta) = request.meta.take() {
                retry = retry.with_meta(meta);
            }
            retry.param_headers = std::mem::take(&mut request.param_headers);
            request = retry;
        }
    }

    /// The `Mcp-Param-*` headers of a `tools/call` on the modern era, or
    /// the typed refusal to call a tool whose declarations are invalid.
    fn param_headers(
        &self,
        method: &str,
        params: Option<&Value>,
    ) -> Result<Vec<(String, String)>, Error> {
        if !self.carries_param_headers(method) {
            return Ok(Vec::new());
        }
        self.tool_headers
            .for_call(params)
            .map_err(|reason| Error::new(Stage::REQUEST, ErrorKind::InvalidTool(reason)))
    }

    /// Whether a refusal is the server's `HeaderMismatch` on a modern-era
    /// `tools/call`, which a fresh listing may cure.
    fn may_relist(&self, request: &Request, rpc: &RpcError) -> bool {
        rpc.code() == codes::HEADER_MISMATCH && self.carries_param_headers(&request.method)
    }

    /// Whether `method` carries `Mcp-Param-*` headers on this session: a
    /// `tools/call` on the modern era. The one place that asks.
    fn carries_param_headers(&self, method: &str) -> bool {
        method == methods::TOOLS_CALL && self.era() == Era::Modern
    }
}

/// A request's final answer, and how many `input_required` rounds it took
/// (an answer after input rounds depends on the inputs: never cached).
struct Exchanged {
    raw: Box<RawValue>,
    rounds: u32,
}

/// The HTTP status of a refusal, which may be one authorizing cures.
fn refusal_status(reply: &Result<crate::transport::Reply, TransportError>) -> Option<u16> {
    match reply {
        Err(TransportError::Status { status, .. }) => Some(*status),
        Ok(Err(rpc)) => rpc.http_status(),
        _ => None,
    }
}

/// The most `input_required` rounds one request goes through.
pub const MAX_INPUT_ROUNDS: u32 = 8;

/// What an `input_required` result asks for.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired {
    #[serde(default)]
    input_requests: Map<String, Value>,
    #[serde(default)]
    request_state: Option<String>,
}

/// `None` for a completed result (no `resultType`, which older servers
/// never send, or `"complete"`); the input asked for; or why it is neither.
/// A task handle (`"task"`) counts as final where the request offered
/// the Tasks extension (the caller reads it), and is unknown elsewhere.
fn input_required(
    raw: &RawValue,
    offered_task: bool,
) -> Result<Option<InputRequired>, InputRequiredError> {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "resultType", default, borrow)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    let kind: Kind<'_> = match serde_json::from_str(raw.get()) {
        Ok(kind) => kind,
        // Not an object: no result type to read (MCP results are objects,
        // but a raw request may ask for anything).
        Err(_) if !raw.get().starts_with('{') => return Ok(None),
        Err(_) => return Err(InputRequiredError::Malformed),
    };
    match kind.result_type.as_deref() {
        None | Some("complete") => Ok(None),
        Some("task") if offered_task => Ok(None),
        Some("input_required") => {
            let asked: InputRequired =
                serde_json::from_str(raw.get()).map_err(|_| InputRequiredError::Malformed)?;
            if asked.input_requests.is_empty() && asked.request_state.is_none() {
                return Err(InputRequiredError::Malformed);
            }
            Ok(Some(asked))
        }
        Some(_) => Err(InputRequiredError::UnknownResultType),
    }
}

fn input_error(error: InputRequiredError) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::InputRequired(error))
}

/// `params` with `_meta.progressToken` set.
fn with_progress_token(params: Option<Value>, token: &Value) -> Value {
    crate::protocol::with_meta_entries(params, |meta| {
        meta.insert("progressToken".into(), token.clone());
    })
}

#[cfg(test)]
mod tests;
