//! A session's call path: every request of a [`Session`] goes through one
//! small step per concern, each in its own file, run in one order:
//!
//! ```text
//! send_encoded
//!  ├─ Cached            a fresh cached answer ends it here; a reusable one is kept
//!  ├─ Traced            its span and duration (feature `otel`)
//!  ├─ Deadline          timeout, cancellation, progress: runs beside `send`, ends it
//!  └─ send, per exchange with the server:
//!       ParamHeaders       `Mcp-Param-*` headers; HeaderMismatch: list, send again
//!       Reauthorized       refresh ahead; 401, 403 scope: authorize, send again
//!       remembered         a remembered discover confirmed, or forgotten
//!       InputRounds        2026-07-28 `input_required`: answer, send again
//! ```
//!
//! The steps below `send` are what tower calls a retry policy
//! (`tower::retry::Policy`): each may prepare the request and, seeing an
//! answer, decide that it stands or that the request goes again under a
//! new id, which is never a replay: a refusal says the request did not run,
//! an input round is a new request. [`Deadline`] runs beside the work and
//! drops it when the request must end.
//!
//! Why steps and not a tower `Service` per concern, as the establishment
//! has: a request borrows its session while it runs, and the steps run
//! inside one future with no allocation and no dynamic call. Services
//! would need an `Arc` of the session and a boxed future per layer (about
//! six allocations per call, against a CI check that allows none). And
//! the depth of the futures is paid by every application: with one nested
//! future per concern, an application awaiting a group call (the `group`
//! example) needed a recursion limit of 130, over the compiler's default of
//! 128; as written here it needs 105 (104 before the steps were split
//! out), and that example keeps the figure by building with a lower limit.
//! An application's own middleware for one server's calls goes on
//! [`McpClient`](crate::McpClient)'s call path, which is a tower `Service`
//! ([`crate::client::CallService`]). A new concern of a session's requests
//! is a new step here, called from `Session::send_encoded` or `send`.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use mcp_connect_layers::Stage;
use serde_json::value::RawValue;

use super::{RequestOptions, Session};
use crate::error::{Error, ErrorKind, TransportError};
use crate::extensions::tasks;
use crate::protocol::{
    meta_keys, with_meta_entries, EncodedRequest, Era, Request, RequestId, RequestKind,
};
use crate::transport::Reply;

mod cached;
mod deadline;
mod input_rounds;
mod param_headers;
mod reauthorized;
mod remembered;
mod traced;

use cached::Cached;
use deadline::Deadline;
use input_rounds::InputRounds;
pub use input_rounds::MAX_INPUT_ROUNDS;
use param_headers::ParamHeaders;
use reauthorized::Reauthorized;
use traced::Traced;

/// What one exchange with the server gave: the transport's reply, or the
/// transport's failure.
pub(super) type Answer = Result<Reply, TransportError>;

/// A step's decision on an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The answer stands (it may still be a failure).
    Stands,
    /// Send the request again, under a new id.
    SendAgain,
}

/// What every step of one request shares.
pub(super) struct Context<'a> {
    pub(super) options: &'a RequestOptions,
    /// The id of the request the server has now (each send after a refusal
    /// or an input round takes a new one): what a cancellation names.
    on_wire: AtomicI64,
}

impl Context<'_> {
    pub(super) fn on_wire(&self) -> i64 {
        self.on_wire.load(Ordering::Relaxed)
    }
}

/// An exchange's answer as a request's outcome.
fn settle(answer: Answer) -> Result<Box<RawValue>, Error> {
    match answer {
        Ok(Ok(raw)) => Ok(raw),
        Ok(Err(rpc)) => Err(Error::new(Stage::REQUEST, ErrorKind::Rpc(rpc))),
        Err(e) => Err(Error::transport(Stage::REQUEST, e)),
    }
}

impl Session {
    /// Sends an encoded request with its own [`RequestOptions`] and returns
    /// its raw result: what every typed request of the session comes to.
    ///
    /// Fails with [`CancelSource::RequestTimeout`](mcp_connect_layers::CancelSource::RequestTimeout)
    /// when its limit expires and with [`ErrorKind::Cancelled`] when its
    /// token is cancelled; in both cases, and when the future is dropped,
    /// the server is told on the legacy era with `notifications/cancelled`.
    pub(crate) async fn send_encoded(
        &self,
        body: EncodedRequest,
        options: &RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        let id = self.take_id();
        let mut request = self.outgoing(id, body);
        let cx = Context {
            options,
            on_wire: AtomicI64::new(id),
        };
        let cached = Cached::look(self, &request, options.cache);
        if let Some(hit) = cached.hit(self).await {
            return Ok(hit);
        }
        let traced = Traced::start(self, &cx, &mut request);
        let mut deadline = Deadline::start(self, &cx, &mut request);
        let mut rounds = InputRounds::default();
        let outcome = {
            // The request's work and its deadline side by side (the work
            // is not nested in the deadline's future: see the module doc).
            let work = send(self, &cx, &mut request, &mut rounds);
            let timer = deadline.timer();
            tokio::pin!(work, timer);
            tokio::select! {
                biased;
                outcome = &mut work => Ok(outcome),
                expired = deadline.expired(timer) => Err(expired),
            }
        };
        // The work is gone (its waiter removed) before the deadline, as it
        // drops, tells the server of a request that did not end by itself.
        let outcome = match outcome {
            Ok(outcome) => {
                deadline.done();
                outcome
            }
            Err(expired) => Err(expired),
        };
        traced.finish(&outcome);
        if let Ok(raw) = &outcome {
            if rounds.taken() == 0 {
                cached.keep(self, raw).await;
            }
        }
        outcome
    }

    /// A request with the session's envelope (on the modern era). A
    /// `ping` is the liveness check of the session's era.
    pub(in crate::session) fn outgoing(&self, id: i64, body: EncodedRequest) -> Request {
        let modern = self.era() == Era::Modern;
        let body = match body.kind() {
            RequestKind::Ping if modern => {
                EncodedRequest::new::<()>(RequestKind::Discover, None, None)
            }
            _ => body,
        };
        let offers_task = body.offers_task() && modern;
        let mut request = Request::encoded(RequestId::Number(id), body);
        let Some(meta) = &self.meta else {
            return request;
        };
        if !request.body().has_own_meta() && !offers_task {
            // The envelope the session encoded once goes in as bytes.
            return request.with_meta(Arc::clone(meta));
        }
        // Params with a `_meta` of their own, or a call offering a task,
        // get the envelope merged in.
        let mut params = request.body().params_value();
        if offers_task {
            params = Some(with_meta_entries(params, |meta| {
                meta.insert(
                    meta_keys::CLIENT_CAPABILITIES.into(),
                    self.client.capabilities_offering(tasks::EXTENSION),
                );
            }));
        }
        let stamped = self.client.stamp(&self.negotiated.version, params);
        request.body_mut().set_params(&stamped);
        request
    }

    /// The next id of this session's requests.
    pub(super) fn take_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// `request` under a new id, for a send after a refusal or an input
    /// round (the server may still know the old one).
    fn renumber(&self, request: &mut Request) {
        request.id = RequestId::Number(self.take_id());
    }
}

/// Everything a request does on the wire: sent, and sent again (under a
/// new id) while a step says so. The steps judge each answer in this
/// order: authorization (a 401 says nothing else), the remembered
/// version, the tool headers, then the input rounds of a final result.
///
/// One function on purpose: each level of `async` nesting around an
/// authorization flow costs an application awaiting a call about five
/// levels of the compiler's recursion limit (see the module doc).
async fn send(
    session: &Session,
    cx: &Context<'_>,
    request: &mut Request,
    rounds: &mut InputRounds,
) -> Result<Box<RawValue>, Error> {
    let mut headers = ParamHeaders::default();
    let mut authorization = Reauthorized::default();
    headers.prepare(session, request).await?;
    if let Some(refreshing) = Reauthorized::refreshing(session) {
        Reauthorized::refreshed(refreshing.run().await)?;
    }
    loop {
        if let RequestId::Number(id) = request.id {
            cx.on_wire.store(id, Ordering::Relaxed);
        }
        let version = &session.negotiated.version;
        let answer = session.transport.request(request, Some(version)).await;
        if let Some(authorizing) = authorization.judge(session, &answer)? {
            authorization.record(authorizing.run().await)?;
        } else {
            remembered::judge(session, &answer).await?;
            if headers.judge(session, request, &answer).await? == Verdict::Stands {
                let raw = settle(answer)?;
                if rounds.judge(session, request, &raw).await? == Verdict::Stands {
                    return Ok(raw);
                }
            }
        }
        session.renumber(request);
    }
}
