//! OpenTelemetry spans and metrics per the MCP semantic conventions
//! (feature `otel`), and trace context carried in `params._meta`.
//!
//! Only the `opentelemetry` API crate is used: the SDK, the sampler and
//! the exporter are the application's, and without a provider installed
//! every call here is the API's no-op. A [`Telemetry`] given to a
//! [`ConnectRequest`](crate::ConnectRequest) instruments what that request
//! makes, so it covers a lone `Session`, `McpClient` (every generation) and
//! every server of a group alike:
//!
//! - one `establish` span per establishment through the stack, one
//!   `establish attempt` child per attempt, with each stage as an event
//!   (stage, outcome, elapsed, failure kind, cancellation source, HTTP
//!   status), mapped from the same stage events the diagnostics layer
//!   reads;
//! - one CLIENT span per request on a session, named `{mcp.method.name}
//!   {target}`, its trace context injected into the request's
//!   `params._meta` (`traceparent`, `tracestate`, `baggage`, never
//!   overwriting a key the application set);
//! - one SERVER span per server-to-client request, its parent taken from
//!   that request's `params._meta`, so a sampling handler's work joins the
//!   server's trace;
//! - the histograms `mcp.client.operation.duration` and
//!   `mcp.client.session.duration` (seconds, the convention's buckets), and
//!   this crate's own `mcp_connect.establishment.duration`,
//!   `mcp_connect.establishment.attempts` and
//!   `mcp_connect.establishment.stage.duration`. An `McpClient` call that
//!   fails before any session sends it (no session, a call policy's
//!   refusal) has no span but still counts in the operation duration,
//!   with its `error.type`.
//!
//! Every span and point names the server (`mcp_connect.server.name`, the
//! group member's name; `server.address` and `server.port` for HTTP, the
//! program's name for stdio). The listings a group makes right after an
//! establishment are children of that `establish` span.
//!
//! Payload-free by default, as every diagnostic here: no argument, result,
//! header, token, session id or server message goes into an attribute.
//! `mcp.session.id` ([`Telemetry::recording_session_id`]) and
//! `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`
//! ([`Telemetry::recording_tool_io`]) are off unless turned on. A resource
//! URI is recorded without its query, fragment and userinfo.
//!
//! Trace context is injected with the application's propagator: the global
//! one (`opentelemetry::global::set_text_map_propagator`, usually the SDK's
//! `TraceContextPropagator`, composed with its `BaggagePropagator` for
//! `baggage`) unless [`Telemetry::with_propagator`] gives one. The parent
//! of a request's span is the current OpenTelemetry context (a
//! `tracing-opentelemetry` user attaches a span's context with
//! `OpenTelemetrySpanExt::context`).

pub(crate) mod call;
pub(crate) mod establish;
pub(crate) mod inbound;
mod outcome;
mod propagate;

use std::fmt;
use std::sync::Arc;

use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider;
use opentelemetry::InstrumentationScope;

/// The attribute and metric names this crate writes, as the conventions
/// spell them.
pub mod names {
    /// The JSON-RPC method (required on every MCP span).
    pub const METHOD: &str = "mcp.method.name";
    /// The negotiated protocol version.
    pub const PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// The session id (only with [`recording_session_id`](super::Telemetry::recording_session_id)).
    pub const SESSION_ID: &str = "mcp.session.id";
    /// A resource's URI, without query, fragment or userinfo.
    pub const RESOURCE_URI: &str = "mcp.resource.uri";
    /// The JSON-RPC request id.
    pub const REQUEST_ID: &str = "jsonrpc.request.id";
    /// The JSON-RPC error code, as a string, when the request failed with one.
    pub const RPC_STATUS: &str = "rpc.response.status_code";
    /// The error's type: a JSON-RPC code, `tool_error`, or this crate's
    /// failure kind (`timeout`, `closed`, `proxy`, ...).
    pub const ERROR_TYPE: &str = "error.type";
    /// The tool of a `tools/call`.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The prompt of a `prompts/get`.
    pub const PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// `execute_tool` on a `tools/call`.
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// A tool call's arguments (only with [`recording_tool_io`](super::Telemetry::recording_tool_io)).
    pub const TOOL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
    /// A tool call's result (only with [`recording_tool_io`](super::Telemetry::recording_tool_io)).
    pub const TOOL_RESULT: &str = "gen_ai.tool.call.result";
    /// `tcp` for HTTP transports, `pipe` for stdio.
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// The HTTP server's host.
    pub const SERVER_ADDRESS: &str = "server.address";
    /// The HTTP server's port.
    pub const SERVER_PORT: &str = "server.port";
    /// The application's name for the server (a group member's name; by
    /// default its URL without secrets, or its stdio program), on every
    /// span and metric.
    pub const SERVER_NAME: &str = "mcp_connect.server.name";
    /// A stdio server's program, its file name only.
    pub const PROCESS_EXECUTABLE: &str = "process.executable.name";
    /// Request duration, client side (histogram, seconds).
    pub const OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// Session duration, client side (histogram, seconds).
    pub const SESSION_DURATION: &str = "mcp.client.session.duration";
    /// One establishment through the stack, all attempts (histogram, seconds).
    pub const ESTABLISHMENT_DURATION: &str = "mcp_connect.establishment.duration";
    /// Attempts one establishment made (histogram).
    pub const ESTABLISHMENT_ATTEMPTS: &str = "mcp_connect.establishment.attempts";
    /// One establishment stage (histogram, seconds; `mcp_connect.stage`,
    /// `mcp_connect.outcome`).
    pub const STAGE_DURATION: &str = "mcp_connect.establishment.stage.duration";
    /// This crate's name for a stage (`probe`, `initialize`, ...).
    pub const STAGE: &str = "mcp_connect.stage";
    /// `established` or `failed` (an establishment), `succeeded` or `failed` (a stage).
    pub const OUTCOME: &str = "mcp_connect.outcome";
    /// The attempt number, from 1.
    pub const ATTEMPT: &str = "mcp_connect.attempt";
    /// Attempts made by one establishment.
    pub const ATTEMPTS: &str = "mcp_connect.attempts";
    /// `modern` or `legacy`.
    pub const ERA: &str = "mcp_connect.era";
    /// `streamable-http`, `sse` or `stdio`.
    pub const TRANSPORT: &str = "mcp_connect.transport";
    /// A failure's kind (`timeout`, `closed`, ...).
    pub const FAILURE_KIND: &str = "mcp_connect.failure.kind";
    /// What cancelled (`probe_timeout`, `deadline`, `caller`, ...).
    pub const CANCEL_SOURCE: &str = "mcp_connect.cancel_source";
    /// An HTTP status a stage ended with.
    pub const HTTP_STATUS: &str = "http.response.status_code";
    /// Milliseconds since the establishment began.
    pub const ELAPSED_MS: &str = "mcp_connect.elapsed_ms";
}

/// The buckets the MCP conventions give both duration histograms, seconds.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Instruments a [`ConnectRequest`](crate::ConnectRequest) and what it
/// makes. Cheap to clone.
///
/// ```
/// use mcp_connect::telemetry::Telemetry;
/// use mcp_connect::ConnectRequest;
///
/// // The global tracer and meter providers (no-ops until the application
/// // installs an SDK).
/// let request = ConnectRequest::http("http://127.0.0.1:9/mcp")?.with_telemetry(Telemetry::global());
/// # drop(request);
/// # Ok::<(), mcp_connect::Error>(())
/// ```
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    tracer: Arc<BoxedTracer>,
    operation: Histogram<f64>,
    session: Histogram<f64>,
    establishment: Histogram<f64>,
    attempts: Histogram<u64>,
    stage: Histogram<f64>,
    propagator: Option<Arc<dyn TextMapPropagator + Send + Sync>>,
    session_id: bool,
    tool_io: bool,
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("mcp-connect")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl Telemetry {
    /// Spans and metrics through the global providers
    /// (`opentelemetry::global`), as they are when this is called.
    pub fn global() -> Self {
        let tracer = opentelemetry::global::tracer_provider().tracer_with_scope(scope());
        let meter = opentelemetry::global::meter_provider().meter_with_scope(scope());
        Self::with_parts(tracer, &meter)
    }

    /// Spans and metrics through these providers (an SDK's, say, or one
    /// per tenant).
    pub fn new<T, M>(tracers: &T, meters: &M) -> Self
    where
        T: TracerProvider,
        T::Tracer: Send + Sync + 'static,
        <T::Tracer as opentelemetry::trace::Tracer>::Span: Send + Sync + 'static,
        M: MeterProvider,
    {
        let tracer = BoxedTracer::new(Box::new(tracers.tracer_with_scope(scope())));
        Self::with_parts(tracer, &meters.meter_with_scope(scope()))
    }

    fn with_parts(tracer: BoxedTracer, meter: &Meter) -> Self {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Telemetry {
            inner: Arc::new(Inner {
                tracer: Arc::new(tracer),
                operation: seconds(
                    names::OPERATION_DURATION,
                    "The duration of the MCP request as observed by the client, until its response",
                ),
                session: seconds(
                    names::SESSION_DURATION,
                    "The duration of the MCP session as observed by the client",
                ),
                establishment: seconds(
                    names::ESTABLISHMENT_DURATION,
                    "One establishment through the stack, every attempt included",
                ),
                attempts: meter
                    .u64_histogram(names::ESTABLISHMENT_ATTEMPTS)
                    .with_description("Attempts one establishment made")
                    .with_boundaries(vec![1.0, 2.0, 3.0, 4.0, 5.0, 8.0])
                    .build(),
                stage: seconds(
                    names::STAGE_DURATION,
                    "One stage of one establishment attempt",
                ),
                propagator: None,
                session_id: false,
                tool_io: false,
            }),
        }
    }

    fn edit(mut self, change: impl FnOnce(&mut Inner)) -> Self {
        change(Arc::make_mut(&mut self.inner));
        self
    }

    /// Injects and extracts trace context with this propagator instead of
    /// the global one.
    #[must_use]
    pub fn with_propagator(
        self,
        propagator: impl TextMapPropagator + Send + Sync + 'static,
    ) -> Self {
        self.edit(|inner| inner.propagator = Some(Arc::new(propagator)))
    }

    /// Records `mcp.session.id` on request spans. Off by default: a session
    /// id is a bearer of the session.
    #[must_use]
    pub fn recording_session_id(self) -> Self {
        self.edit(|inner| inner.session_id = true)
    }

    /// Records a tool call's arguments and result as
    /// `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`. Off by
    /// default: they are the application's data.
    #[must_use]
    pub fn recording_tool_io(self) -> Self {
        self.edit(|inner| inner.tool_io = true)
    }

    pub(crate) fn records_session_id(&self) -> bool {
        self.inner.session_id
    }

    pub(crate) fn tracer(&self) -> &BoxedTracer {
        &self.inner.tracer
    }

    /// Runs `f` with the propagator in use.
    pub(crate) fn with_propagator_do<T>(&self, f: impl FnOnce(&dyn TextMapPropagator) -> T) -> T {
        match &self.inner.propagator {
            Some(propagator) => f(propagator.as_ref()),
            None => {
                let mut f = Some(f);
                opentelemetry::global::get_text_map_propagator(|p| {
                    (f.take().expect("called once"))(p)
                })
            }
        }
    }
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("session_id", &self.inner.session_id)
            .field("tool_io", &self.inner.tool_io)
            .finish_non_exhaustive()
    }
}
