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

use crate::protocol::methods;
use std::time::Instant;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{names, propagate, Telemetry};

/// How a request ended, as the span needs it.
pub(crate) enum CallOutcome<'a> {
    /// A result.
    Result(&'a RawValue),
    /// A JSON-RPC error with this code.
    Rpc(i64),
    /// Another failure, of this kind (`FailureKind::as_str`).
    Failed(&'static str),
}

/// What every span of one session carries.
#[derive(Clone, Debug)]
pub(crate) struct SessionFacts {
    /// Protocol version, network transport, server address and port.
    pub(crate) attributes: Vec<KeyValue>,
    /// The session id, kept only when the telemetry records it.
    pub(crate) session_id: Option<String>,
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

impl CallSpan {
    /// Starts the span of request `id`.
    pub(crate) fn start(
        telemetry: &Telemetry,
        facts: &SessionFacts,
        method: &str,
        id: i64,
        params: Option<&Value>,
    ) -> CallSpan {
        let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
        let target = match method {
            methods::TOOLS_CALL => text("name").map(|name| (names::TOOL_NAME, name)),
            methods::PROMPTS_GET => text("name").map(|name| (names::PROMPT_NAME, name)),
            _ => None,
        };
        let tool_call = method == methods::TOOLS_CALL;
        let mut labels = vec![KeyValue::new(names::METHOD, method.to_owned())];
        if let Some((key, name)) = target {
            labels.push(KeyValue::new(key, name.to_owned()));
        }
        if tool_call {
            labels.push(KeyValue::new(names::OPERATION_NAME, "execute_tool"));
        }
        labels.extend(facts.attributes.iter().cloned());
        let mut attributes = labels.clone();
        attributes.push(KeyValue::new(names::REQUEST_ID, id.to_string()));
        if let Some(uri) = text("uri").filter(|_| method.starts_with("resources/")) {
            attributes.push(KeyValue::new(names::RESOURCE_URI, bare_uri(uri)));
        }
        if let Some(session) = &facts.session_id {
            attributes.push(KeyValue::new(names::SESSION_ID, session.clone()));
        }
        if tool_call && telemetry.inner.tool_io {
            if let Some(arguments) = params.and_then(|p| p.get("arguments")) {
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
        }
    }

    /// This span's context as the propagator's `_meta` fields
    /// (`traceparent`, ...); none when the span is not recorded anywhere.
    pub(crate) fn trace_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        if self.cx.span().span_context().is_valid() {
            propagate::inject(&self.telemetry, &self.cx, &mut fields);
        }
        fields
    }

    /// Ends the span with the request's outcome and records its duration.
    pub(crate) fn finish(mut self, outcome: CallOutcome<'_>) {
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

/// Records `mcp.client.session.duration` for a session that lasted
/// `lasted`.
pub(crate) fn session_ended(
    telemetry: &Telemetry,
    facts: &SessionFacts,
    lasted: std::time::Duration,
) {
    telemetry
        .inner
        .session
        .record(lasted.as_secs_f64(), &facts.attributes);
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
