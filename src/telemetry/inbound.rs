//! Server-to-client requests in the server's trace: the handler runs in a
//! SERVER span whose parent is the context the request's `params._meta`
//! carries, so a sampling handler's own spans join the server's trace.

use std::future::Future;

use opentelemetry::trace::{FutureExt as _, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::Value;

use super::{names, propagate, Telemetry};
use crate::protocol::RpcError;

/// Runs the handler on a server request (`handle`, given its params): in
/// a SERVER span when there is telemetry.
pub(crate) async fn answer<F>(
    telemetry: Option<&Telemetry>,
    method: &str,
    params: Option<Value>,
    handle: impl FnOnce(Option<Value>) -> F,
) -> Result<Value, RpcError>
where
    F: Future<Output = Result<Value, RpcError>>,
{
    match telemetry {
        Some(telemetry) => {
            let parent = parent(telemetry, params.as_ref());
            traced(telemetry, method, parent, handle(params)).await
        }
        None => handle(params).await,
    }
}

/// The context a server request's `params._meta` carries (an empty one
/// when it carries none).
fn parent(telemetry: &Telemetry, params: Option<&Value>) -> Context {
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    propagate::extract(telemetry, meta)
}

/// Runs `handled` (the handler's answer to `method`) inside its span, a
/// child of `parent`.
async fn traced<F>(
    telemetry: &Telemetry,
    method: &str,
    parent: Context,
    handled: F,
) -> Result<Value, RpcError>
where
    F: Future<Output = Result<Value, RpcError>>,
{
    let tracer = telemetry.tracer();
    let span = tracer
        .span_builder(method.to_owned())
        .with_kind(SpanKind::Server)
        .with_attributes([KeyValue::new(names::METHOD, method.to_owned())])
        .start_with_context(tracer, &parent);
    let cx = parent.with_span(span);
    let answered = handled.with_context(cx.clone()).await;
    if let Err(error) = &answered {
        let span = cx.span();
        span.set_attribute(KeyValue::new(names::ERROR_TYPE, error.code().to_string()));
        span.set_attribute(KeyValue::new(names::RPC_STATUS, error.code().to_string()));
        span.set_status(Status::error(""));
    }
    cx.span().end();
    answered
}
