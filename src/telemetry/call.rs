//! One CLIENT span per request on a session, and its duration.
//!
//! The span is named `{mcp.method.name} {target}` (the tool of a
//! `tools/call`, the prompt of a `prompts/get`; the method alone
//! otherwise), its parent the current context; its context goes into the
//! request's `params._meta`. It ends with the reply: a JSON-RPC error sets
//! `error.type` and `rpc.response.status_code` to the code, a tool result
//! with `isError` sets `error.type = tool_error`, any other failure sets
//! `error.type` to its kind; the status is then `Error`, without a
//! description (that would be the server's message). A request whose
//! future is dropped ends as `error.type = cancelled`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use opentelemetry::trace::{SpanContext, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;
use serde_json::Map;

use mcp_connect_layers::Failure;

use super::establish::{shared, target_attributes, Cause, Peer};
use super::{names, propagate, Telemetry};
use crate::protocol::{EncodedRequest, Request, RequestKind};

/// How a request ended, as the span needs it.
enum CallOutcome<'a> {
    /// A result.
    Result(&'a RawValue),
    /// A JSON-RPC error with this code.
    Rpc(i64),
    /// Another failure, of this kind (`FailureKind::as_str`).
    Failed(&'static str),
}

/// One session's telemetry: the instruments, what every span of the
/// session carries, and when it began. Dropping it records the session's
/// duration, unless [`end`](Self::end) already did.
pub(crate) struct SessionTelemetry {
    telemetry: Telemetry,
    /// Protocol version, network transport, server address and port.
    attributes: Vec<KeyValue>,
    /// The session id, kept only when the telemetry records it.
    session_id: Option<String>,
    /// The context the session was made in: its `establish` span.
    established_in: Context,
    /// The span of the session's last failed request: when the client
    /// judges the session lost, what the next `establish` links to.
    last_failure: Arc<Mutex<Option<SpanContext>>>,
    started: Instant,
    ended: AtomicBool,
}

impl SessionTelemetry {
    /// The telemetry of a session with `peer` on protocol `version`;
    /// `session_id` is asked only when the telemetry records it.
    pub(crate) fn new(
        telemetry: &Telemetry,
        peer: Peer<'_>,
        version: &str,
        session_id: impl FnOnce() -> Option<String>,
    ) -> Self {
        let mut attributes = target_attributes(peer);
        attributes.push(KeyValue::new(names::PROTOCOL_VERSION, shared(version)));
        SessionTelemetry {
            telemetry: telemetry.clone(),
            attributes,
            session_id: telemetry.records_session_id().then(session_id).flatten(),
            established_in: Context::current(),
            last_failure: Arc::default(),
            started: Instant::now(),
            ended: AtomicBool::new(false),
        }
    }

    /// The span of this session's last failed request, for the
    /// establishment that replaces the session to link to.
    pub(crate) fn loss_cause(&self) -> Cause {
        Cause(
            self.last_failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }

    /// `work` with the session's `establish` span as its current context:
    /// the requests it makes (the listings right after establishment) are
    /// that span's children, not traces of their own.
    pub(crate) fn within_establishment<'a, T: 'a>(
        &self,
        work: futures_util::future::BoxFuture<'a, T>,
    ) -> futures_util::future::BoxFuture<'a, T> {
        use opentelemetry::trace::FutureExt as _;
        Box::pin(work.with_context(self.established_in.clone()))
    }

    /// Records `mcp.client.session.duration`, once: at `close` or when
    /// dropped.
    pub(crate) fn end(&self) {
        if !self.ended.swap(true, Ordering::Relaxed) {
            self.telemetry
                .inner
                .session
                .record(self.started.elapsed().as_secs_f64(), &self.attributes);
        }
    }
}

impl Drop for SessionTelemetry {
    fn drop(&mut self) {
        self.end();
    }
}

/// The span of one request, until its reply.
pub(crate) struct CallSpan {
    telemetry: Telemetry,
    cx: Context,
    started: Instant,
    /// What the duration histogram is labelled with.
    labels: Vec<KeyValue>,
    tool_call: bool,
    ended: bool,
    /// The session's record of its last failed request.
    last_failure: Arc<Mutex<Option<SpanContext>>>,
}

/// A resource URI without userinfo, query or fragment.
fn bare_uri(uri: &str) -> String {
    let end = uri.find(['?', '#']).unwrap_or(uri.len());
    let uri = &uri[..end];
    match (uri.find("://"), uri.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let authority_end = uri[scheme + 3..]
                .find('/')
                .map_or(uri.len(), |i| i + scheme + 3);
            if at < authority_end {
                return format!("{}{}", &uri[..scheme + 3], &uri[at + 1..]);
            }
            uri.to_owned()
        }
        _ => uri.to_owned(),
    }
}

/// Records `mcp.client.operation.duration` for a call that failed before
/// any session sent it (no session could be had, a call policy refused
/// it): it cost its caller `elapsed` all the same. No span: nothing was
/// sent.
pub(crate) fn record_unsent(
    telemetry: &Telemetry,
    peer: Peer<'_>,
    request: &EncodedRequest,
    elapsed: std::time::Duration,
    error_type: &str,
) {
    let mut labels = call_labels(request, &target_attributes(peer));
    labels.push(KeyValue::new(names::ERROR_TYPE, error_type.to_owned()));
    telemetry
        .inner
        .operation
        .record(elapsed.as_secs_f64(), &labels);
}

/// The labels of a call's duration: the method, the tool or prompt it
/// names, and the server's attributes.
fn call_labels(request: &EncodedRequest, server: &[KeyValue]) -> Vec<KeyValue> {
    let mut labels = vec![KeyValue::new(names::METHOD, request.method().to_owned())];
    if let Some((key, name)) = call_target(request) {
        labels.push(KeyValue::new(key, name.to_owned()));
    }
    if request.kind() == RequestKind::CallTool {
        labels.push(KeyValue::new(names::OPERATION_NAME, "execute_tool"));
    }
    labels.extend(server.iter().cloned());
    labels
}

/// The tool of a `tools/call`, the prompt of a `prompts/get`.
fn call_target(request: &EncodedRequest) -> Option<(&'static str, &str)> {
    let key = match request.kind() {
        RequestKind::CallTool => names::TOOL_NAME,
        RequestKind::GetPrompt => names::PROMPT_NAME,
        _ => return None,
    };
    Some((key, request.target()?))
}

impl CallSpan {
    /// Starts the span of request `id` on `session`.
    pub(crate) fn start(session: &SessionTelemetry, request: &EncodedRequest, id: i64) -> CallSpan {
        let telemetry = &session.telemetry;
        let method = request.method();
        let target = call_target(request);
        let tool_call = request.kind() == RequestKind::CallTool;
        let labels = call_labels(request, &session.attributes);
        let mut attributes = labels.clone();
        attributes.push(KeyValue::new(names::REQUEST_ID, id.to_string()));
        let names_resource = matches!(
            request.kind(),
            RequestKind::ReadResource | RequestKind::Subscribe | RequestKind::Unsubscribe
        );
        if let Some(uri) = request.target().filter(|_| names_resource) {
            attributes.push(KeyValue::new(names::RESOURCE_URI, bare_uri(uri)));
        }
        if let Some(session) = &session.session_id {
            attributes.push(KeyValue::new(names::SESSION_ID, session.clone()));
        }
        if tool_call && telemetry.inner.tool_io {
            // Opt-in: the arguments read back from what is sent.
            let params = request.params_value();
            if let Some(arguments) = params.as_ref().and_then(|p| p.get("arguments")) {
                attributes.push(KeyValue::new(names::TOOL_ARGUMENTS, arguments.to_string()));
            }
        }
        let name = match target {
            Some((_, target)) => format!("{method} {target}"),
            None => method.to_owned(),
        };
        let parent = Context::current();
        let tracer = telemetry.tracer();
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        CallSpan {
            telemetry: telemetry.clone(),
            cx: parent.with_span(span),
            started: Instant::now(),
            labels,
            tool_call,
            ended: false,
            last_failure: Arc::clone(&session.last_failure),
        }
    }

    /// Puts this span's context (the propagator's `traceparent`, ...) into
    /// the request's `_meta`, never over a key the application set: joined
    /// to the session's encoded envelope when the request rides on it (no
    /// re-encoding), merged into the params otherwise. Nothing when the
    /// span is not recorded anywhere.
    pub(crate) fn carry(&self, request: &mut Request) {
        let mut fields = Map::new();
        if self.cx.span().span_context().is_valid() {
            propagate::inject(&self.telemetry, &self.cx, &mut fields);
        }
        request.add_meta(fields);
    }

    /// Ends the span with the request's result (or what failed) and
    /// records its duration.
    pub(crate) fn finish(self, result: Result<&RawValue, Failure>) {
        if result.is_err() {
            let failed = self.cx.span().span_context().clone();
            *self
                .last_failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(failed);
        }
        self.finish_as(match result {
            Ok(raw) => CallOutcome::Result(raw),
            Err(failure) => match failure.jsonrpc_code {
                Some(code) => CallOutcome::Rpc(code),
                None => CallOutcome::Failed(failure.kind.as_str()),
            },
        });
    }

    fn finish_as(mut self, outcome: CallOutcome<'_>) {
        let error_type = match outcome {
            CallOutcome::Result(raw) => {
                if self.tool_call && self.telemetry.inner.tool_io {
                    self.cx
                        .span()
                        .set_attribute(KeyValue::new(names::TOOL_RESULT, raw.get().to_owned()));
                }
                (self.tool_call && is_error(raw)).then(|| "tool_error".to_owned())
            }
            CallOutcome::Rpc(code) => {
                let status = KeyValue::new(names::RPC_STATUS, code.to_string());
                self.cx.span().set_attribute(status.clone());
                self.labels.push(status);
                Some(code.to_string())
            }
            CallOutcome::Failed(kind) => Some(kind.to_owned()),
        };
        self.end(error_type);
    }

    fn end(&mut self, error_type: Option<String>) {
        self.ended = true;
        let span = self.cx.span();
        if let Some(error_type) = error_type {
            span.set_attribute(KeyValue::new(names::ERROR_TYPE, error_type.clone()));
            span.set_status(Status::error(""));
            self.labels
                .push(KeyValue::new(names::ERROR_TYPE, error_type));
        }
        span.end();
        self.telemetry
            .inner
            .operation
            .record(self.started.elapsed().as_secs_f64(), &self.labels);
    }
}

impl Drop for CallSpan {
    fn drop(&mut self) {
        if !self.ended {
            self.end(Some("cancelled".to_owned()));
        }
    }
}

/// Whether a tool result says `isError: true`.
fn is_error(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    serde_json::from_str::<Flag>(raw.get()).is_ok_and(|flag| flag.is_error)
}

#[cfg(test)]
mod tests {
    use super::bare_uri;

    #[test]
    fn a_resource_uri_loses_its_query_fragment_and_userinfo() {
        assert_eq!(bare_uri("file:///a/b.txt"), "file:///a/b.txt");
        assert_eq!(
            bare_uri("https://u:secret@host/x?token=t#f"),
            "https://host/x"
        );
        assert_eq!(bare_uri("mem://x@y"), "mem://y");
        assert_eq!(bare_uri("mem://host/a@b"), "mem://host/a@b");
    }
}
