//! A routed request answered as a stream of server-sent events: what the
//! request causes (progress under the client's token; in a 2025 session,
//! the member's questions and log messages) goes out before its answer,
//! and the stream ends with the answer.
//!
//! The request runs in a task of its own, so that it ends the way the
//! protocol says whatever the connection does: in a 2025 session a client
//! that goes away has not cancelled (the specification says so; it sends
//! `notifications/cancelled`, which cancels the member's request), while a
//! 2026-07-28 client cancels by closing its stream, which cancels the
//! member's request here.

use std::sync::Arc;

use http::StatusCode;
use mcp_connect::protocol::{codes, meta_keys, ProtocolVersion, RequestKind};
use mcp_connect::session::RequestOptions;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::answer::answer;
use crate::body::event;
use crate::downstream::{level_rank, Downstream};
use crate::governance::Caller;
use crate::inner::Inner;
use crate::modern;
use crate::relay;
use crate::reply::{self, Reply, RpcFailure};

/// The 2026-07-28 version, to borrow for as long as the gateway runs.
static MODERN: ProtocolVersion = ProtocolVersion::LATEST_MODERN;

/// How many events of one stream wait for a slow reader.
const QUEUE: usize = 64;

/// The era a streamed request is in.
pub(crate) enum Era {
    /// A 2025 session's request.
    Session(Arc<Downstream>),
    /// A 2026-07-28 request: its result dressed for the era.
    Modern,
}

/// The first event of a 2025-11-25 request stream: its number as the id a
/// client resumes from, no data, and how soon to come back (SEP-1699).
fn priming(no: u64, keepalive: std::time::Duration) -> bytes::Bytes {
    let retry = keepalive.as_millis().min(5_000);
    bytes::Bytes::from(format!("id: {no}\nretry: {retry}\ndata: \n\n"))
}

/// `method` answered on a stream (see the module's docs).
pub(crate) fn streamed(
    inner: &Arc<Inner>,
    (id, method, principal): (Value, String, Option<crate::Principal>),
    params: Option<Value>,
    era: Era,
) -> Reply {
    let (sender, events) = mpsc::channel(QUEUE);
    // A 2026-07-28 request's log level: the member's messages from it on.
    let log_floor = (params.as_ref())
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(meta_keys::LOG_LEVEL))
        .and_then(Value::as_str)
        .and_then(level_rank);
    let token = CancellationToken::new();
    let mut options = RequestOptions::new().with_cancellation(token.clone());
    // The client's progress token stays here: the member is given one of
    // the library's own, and its reports go out under the client's.
    let mut params = params;
    let progress = (params.as_mut())
        .and_then(|p| p.get_mut("_meta"))
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove("progressToken"));
    if let Some(progress) = progress {
        options = options.with_progress(relay::progress(sender.clone(), progress));
    }
    let stream = match &era {
        Era::Session(down) => {
            let key = id.to_string();
            let Some(no) = down.open_request(key, sender.clone(), token.clone()) else {
                let failure = RpcFailure::new(
                    codes::INTERNAL_ERROR,
                    "too many requests of this session are running",
                );
                return reply::error(StatusCode::TOO_MANY_REQUESTS, Some(&id), &failure);
            };
            if down.version >= ProtocolVersion::V2025_11_25 {
                // A fresh channel has room for its first event.
                let _ = sender.try_send(priming(no, inner.keepalive));
            }
            Some((Arc::clone(down), no))
        }
        Era::Modern => None,
    };
    let keepalive = inner.keepalive;
    let inner = Arc::clone(inner);
    tokio::spawn(async move {
        let down = match &era {
            Era::Session(down) => Some(down),
            Era::Modern => None,
        };
        let caller = Caller {
            principal: principal.as_ref(),
            approver: down,
        };
        let upstream = inner.upstream(down, caller);
        let kind = RequestKind::of(&method);
        let version = match &era {
            Era::Session(down) => down.version.as_str(),
            Era::Modern => MODERN.as_str(),
        };
        let mut params = params;
        let era_of = &era;
        let answering = |params| async {
            match era_of {
                Era::Modern => {
                    let logs = log_floor.map(|floor| (sender.clone(), floor));
                    inner
                        .modern_answer(kind, &method, params, options, logs, caller)
                        .await
                }
                Era::Session(_) => answer(upstream, &method, params, options).await,
            }
        };
        let answering = inner.traced(&id, &method, &mut params, version, answering);
        let answered = match era {
            Era::Modern => tokio::select! {
                answered = answering => Some(answered),
                // The client closed its stream: that is its cancellation.
                () = sender.closed() => None,
            },
            Era::Session(_) => Some(answering.await),
        };
        let message = match answered {
            Some(Ok(result)) => {
                let result = match stream {
                    Some(_) => result,
                    None => modern::dressed(result, kind, inner.cache_hints),
                };
                reply::result_message(&id, &result)
            }
            Some(Err(failure)) => reply::error_message(Some(&id), &failure),
            None => {
                token.cancel();
                return;
            }
        };
        match stream {
            Some((down, no)) => {
                drop(sender);
                down.finish(no, event(&message)).await;
            }
            None => {
                let _ = sender.send(event(&message)).await;
            }
        }
    });
    reply::events(events, keepalive)
}
