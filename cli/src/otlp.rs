//! `--otlp URL`: the run's spans and metrics exported over OTLP/HTTP
//! (protobuf) to `URL/v1/traces` and `URL/v1/metrics`.
//!
//! The SDK's batch span processor and periodic metric reader run on their
//! own thread (the SDK's `TokioCurrentThread` runtime), so the command's
//! single-threaded runtime never waits on itself; [`Otlp::shutdown`]
//! flushes both before the command exits. The export goes through the
//! command's own HTTP client, so `--proxy`, `--cacert` and `--cert` apply
//! to it as to the server. Export failures are reported on stderr by kind,
//! never with a body.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_connect::telemetry::Telemetry;
use mcp_connect::transport::HttpClient;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::runtime::TokioCurrentThread;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tower::ServiceExt;

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest export response read.
const RESPONSE_LIMIT: usize = 64 * 1024;

/// The exporter's HTTP client: the command's own.
#[derive(Debug, Clone)]
struct Exporter(HttpClient);

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Exporter {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        send(self.0.clone(), request).await
    }
}

async fn send(
    client: HttpClient,
    request: http::Request<Bytes>,
) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
    let sent = client.oneshot(request.map(Full::new));
    let response = match tokio::time::timeout(EXPORT_TIMEOUT, sent).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => return Err(error),
        Err(elapsed) => return Err(Box::new(elapsed)),
    };
    let (parts, mut body) = response.into_parts();
    let mut read = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            read.extend_from_slice(&data);
            if read.len() > RESPONSE_LIMIT {
                return Err("the OTLP response is too large".into());
            }
        }
    }
    Ok(http::Response::from_parts(parts, Bytes::from(read)))
}

/// The run's providers, exporting to one OTLP/HTTP endpoint.
pub(super) struct Otlp {
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

impl Otlp {
    /// Providers exporting to `base` (`http(s)://host:port`, with or
    /// without a path prefix) through `client`.
    pub(super) fn start(base: &str, client: &HttpClient) -> Result<Otlp, String> {
        let base = base.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err("--otlp: the URL must start with http:// or https://".to_owned());
        }
        let resource = Resource::builder().with_service_name("mcp-connect").build();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(Exporter(client.clone()))
            .with_endpoint(format!("{base}/v1/traces"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|_| "--otlp: the trace exporter cannot be built".to_owned())?;
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(Exporter(client.clone()))
            .with_endpoint(format!("{base}/v1/metrics"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|_| "--otlp: the metric exporter cannot be built".to_owned())?;
        let batch =
            opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
                spans,
                TokioCurrentThread,
            )
            .build();
        let tracers = SdkTracerProvider::builder()
            .with_span_processor(batch)
            .with_resource(resource.clone())
            .build();
        let reader =
            opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader::builder(
                metrics,
                TokioCurrentThread,
            )
            .build();
        let meters = SdkMeterProvider::builder()
            .with_reader(reader)
            .with_resource(resource)
            .build();
        Ok(Otlp { tracers, meters })
    }

    /// What the run's requests are instrumented with.
    pub(super) fn telemetry(&self) -> Telemetry {
        Telemetry::new(&self.tracers, &self.meters).with_propagator(TraceContextPropagator::new())
    }

    /// What `serve`'s gateway is instrumented with: its SERVER spans the
    /// parents of the members' CLIENT spans, on the same providers.
    pub(super) fn server_telemetry(&self) -> mcp_connect_gateway::ServerTelemetry {
        mcp_connect_gateway::ServerTelemetry::new(&self.tracers, &self.meters)
            .with_propagator(TraceContextPropagator::new())
    }

    /// Flushes and stops both providers; an export that failed is one line
    /// on stderr.
    pub(super) fn shutdown(self) {
        if self.tracers.shutdown().is_err() {
            eprintln!("mcp-connect: --otlp: the spans could not all be exported");
        }
        if self.meters.shutdown().is_err() {
            eprintln!("mcp-connect: --otlp: the metrics could not all be exported");
        }
    }
}
