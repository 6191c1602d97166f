//! Server-side OpenTelemetry (feature `otel`), per the MCP semantic
//! conventions: one SERVER span per request the gateway answers, named
//! `{mcp.method.name} {target}`, its parent the trace context the client
//! put in `params._meta`; the upstream request the library's client makes
//! for it (a CLIENT span, when the members' requests carry the library's
//! `Telemetry`) is its child, so one trace runs from the client through
//! the gateway to the member. The histogram `mcp.server.operation.duration`
//! counts each request by method, tool or prompt, member and error type,
//! and the gauge `mcp_connect.gateway.sessions` says how many 2025
//! sessions are open.
//!
//! Payload-free as the library's telemetry: no argument, result, token,
//! header, session id or server message goes into an attribute. The
//! client's own trace fields are taken out of `params._meta` before the
//! request goes on, so that the member's parent is the gateway's span.

use std::sync::Arc;
use std::time::Instant;

use mcp_connect::group::{Catalogue, ServerGroup};
use mcp_connect::protocol::RequestKind;
use mcp_connect::telemetry::{names, DURATION_BUCKETS};
use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{
    FutureExt as _, SpanKind, Status, TraceContextExt, Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use serde_json::Value;

use crate::answer::Answer;

/// The name of the gauge of open 2025 sessions.
pub const SESSIONS: &str = "mcp_connect.gateway.sessions";

/// The histogram of requests answered, server side (seconds).
pub const OPERATION_DURATION: &str = "mcp.server.operation.duration";

/// The trace fields of `_meta` the gateway reads and does not pass on.
const TRACE_FIELDS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// What a gateway is instrumented with ([`GatewayBuilder::telemetry`](crate::GatewayBuilder::telemetry)).
/// Cheap to clone.
#[derive(Clone)]
pub struct ServerTelemetry {
    tracer: Arc<BoxedTracer>,
    meter: Meter,
    operation: Histogram<f64>,
    propagator: Option<Arc<dyn TextMapPropagator + Send + Sync>>,
}

impl std::fmt::Debug for ServerTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTelemetry").finish_non_exhaustive()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("mcp-connect-gateway")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl ServerTelemetry {
    /// Through the global providers (`opentelemetry::global`), as they are
    /// when this is called.
    pub fn global() -> Self {
        let tracer = opentelemetry::global::tracer_provider().tracer_with_scope(scope());
        Self::with_parts(
            tracer,
            opentelemetry::global::meter_provider().meter_with_scope(scope()),
        )
    }

    /// Through these providers (an SDK's).
    pub fn new<T, M>(tracers: &T, meters: &M) -> Self
    where
        T: TracerProvider,
        T::Tracer: Send + Sync + 'static,
        <T::Tracer as Tracer>::Span: Send + Sync + 'static,
        M: MeterProvider,
    {
        let tracer = BoxedTracer::new(Box::new(tracers.tracer_with_scope(scope())));
        Self::with_parts(tracer, meters.meter_with_scope(scope()))
    }

    fn with_parts(tracer: BoxedTracer, meter: Meter) -> Self {
        let operation = meter
            .f64_histogram(OPERATION_DURATION)
            .with_unit("s")
            .with_description("MCP request operation duration as observed on the receiver")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build();
        ServerTelemetry {
            tracer: Arc::new(tracer),
            meter,
            operation,
            propagator: None,
        }
    }

    /// Reads trace context with this propagator instead of the global one.
    #[must_use]
    pub fn with_propagator(
        mut self,
        propagator: impl TextMapPropagator + Send + Sync + 'static,
    ) -> Self {
        self.propagator = Some(Arc::new(propagator));
        self
    }

    /// Registers the sessions gauge, `open` saying how many there are
    /// (`None` once the gateway is gone).
    pub(crate) fn observe_sessions(&self, open: impl Fn() -> Option<u64> + Send + Sync + 'static) {
        self.meter
            .u64_observable_gauge(SESSIONS)
            .with_description("2025 sessions open at the gateway")
            .with_callback(move |observer| {
                if let Some(open) = open() {
                    observer.observe(open, &[]);
                }
            })
            .build();
    }

    /// The context the client's `_meta` carries, its fields taken out.
    fn parent(&self, params: Option<&mut Value>) -> Context {
        struct From<'a>(&'a serde_json::Map<String, Value>);
        impl Extractor for From<'_> {
            fn get(&self, key: &str) -> Option<&str> {
                self.0.get(key)?.as_str()
            }
            fn keys(&self) -> Vec<&str> {
                self.0.keys().map(String::as_str).collect()
            }
        }
        let Some(meta) = params
            .and_then(|p| p.get_mut("_meta"))
            .and_then(Value::as_object_mut)
        else {
            return Context::new();
        };
        let parent = match &self.propagator {
            Some(propagator) => propagator.extract(&From(meta)),
            None => opentelemetry::global::get_text_map_propagator(|p| p.extract(&From(meta))),
        };
        for field in TRACE_FIELDS {
            meta.remove(field);
        }
        parent
    }
}

/// What the span and the histogram say of one request.
struct Described {
    name: String,
    attributes: Vec<KeyValue>,
}

/// The span's name and attributes for `method` with `params`: the target
/// (a tool's or prompt's catalogue name), and the member it goes to.
fn described(
    catalogue: &Catalogue,
    method: &str,
    params: Option<&Value>,
    version: &str,
) -> Described {
    let mut attributes = vec![
        KeyValue::new(names::METHOD, method.to_owned()),
        KeyValue::new(names::PROTOCOL_VERSION, version.to_owned()),
    ];
    let target = params.and_then(|p| p.get("name")).and_then(Value::as_str);
    let member = match (RequestKind::of(method), target) {
        (RequestKind::CallTool, Some(tool)) => {
            attributes.push(KeyValue::new(names::TOOL_NAME, tool.to_owned()));
            attributes.push(KeyValue::new(names::OPERATION_NAME, "execute_tool"));
            catalogue.tool(tool).map(|t| Arc::clone(&t.server))
        }
        (RequestKind::GetPrompt, Some(prompt)) => {
            attributes.push(KeyValue::new(names::PROMPT_NAME, prompt.to_owned()));
            catalogue.prompt(prompt).map(|p| Arc::clone(&p.server))
        }
        _ => None,
    };
    if let Some(member) = member {
        attributes.push(KeyValue::new(names::SERVER_NAME, member.to_string()));
    }
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    Described { name, attributes }
}

/// Whether a `tools/call` result says the tool failed.
fn tool_failed(result: &serde_json::value::RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Outcome {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    serde_json::from_str::<Outcome>(result.get()).is_ok_and(|o| o.is_error)
}

impl ServerTelemetry {
    /// `answering` (request `id`'s `method` with `params`, to `group`), in
    /// a SERVER span and counted; `params` lose the client's trace fields
    /// first.
    pub(crate) async fn traced<F>(
        &self,
        group: &ServerGroup,
        id: &Value,
        method: &str,
        params: &mut Option<Value>,
        version: &str,
        answering: impl FnOnce(Option<Value>) -> F,
    ) -> Answer
    where
        F: std::future::Future<Output = Answer>,
    {
        let telemetry = self;
        let started = Instant::now();
        let parent = telemetry.parent(params.as_mut());
        let Described {
            name,
            mut attributes,
        } = described(&group.catalogue(), method, params.as_ref(), version);
        let mut span_attributes = attributes.clone();
        span_attributes.push(KeyValue::new(names::REQUEST_ID, id.to_string()));
        let tracer = &telemetry.tracer;
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(span_attributes)
            .start_with_context(tracer.as_ref(), &parent);
        let cx = parent.with_span(span);
        let answered = answering(params.take()).with_context(cx.clone()).await;
        let error_type = match &answered {
            Err(failure) => Some(failure.code.to_string()),
            Ok(result)
                if RequestKind::of(method) == RequestKind::CallTool && tool_failed(result) =>
            {
                Some("tool_error".to_owned())
            }
            Ok(_) => None,
        };
        let span = cx.span();
        if let Some(error_type) = error_type {
            if let Err(failure) = &answered {
                span.set_attribute(KeyValue::new(names::RPC_STATUS, failure.code.to_string()));
            }
            span.set_attribute(KeyValue::new(names::ERROR_TYPE, error_type.clone()));
            span.set_status(Status::error(""));
            attributes.push(KeyValue::new(names::ERROR_TYPE, error_type));
        }
        span.end();
        telemetry
            .operation
            .record(started.elapsed().as_secs_f64(), &attributes);
        answered
    }
}
