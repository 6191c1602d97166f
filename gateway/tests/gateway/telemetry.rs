//! Server-side telemetry (feature `otel`): a request the gateway answers is
//! a SERVER span under the client's trace context, the member's CLIENT
//! span is its child, and the metrics count it by tool and member.

use mcp_connect::telemetry::Telemetry;
use mcp_connect_gateway::ServerTelemetry;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

use super::*;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";

fn text(span: &SpanData, key: &str) -> Option<String> {
    (span.attributes.iter())
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

#[tokio::test]
async fn a_forwarded_call_is_a_server_span_over_the_members_client_span() {
    let spans = InMemorySpanExporter::default();
    let tracers = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let metrics = InMemoryMetricExporter::default();
    let meters = SdkMeterProvider::builder()
        .with_periodic_exporter(metrics.clone())
        .build();
    let demo = DemoServer::start().await.unwrap();
    let client_side =
        Telemetry::new(&tracers, &meters).with_propagator(TraceContextPropagator::new());
    let stack = EstablishBuilder::new(Connector::new()).build();
    let request = ConnectRequest::http(&demo.url())
        .unwrap()
        .with_name("one")
        .with_telemetry(client_side);
    let group = ServerGroup::new();
    group.add(Server::new(stack, request)).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let server_side =
        ServerTelemetry::new(&tracers, &meters).with_propagator(TraceContextPropagator::new());
    let addr = serve(Gateway::builder(group).telemetry(server_side).build()).await;

    let (_, session, _) = exchange(
        addr,
        http::Method::POST,
        &[JSON_IN, BOTH_OUT],
        &initialize(),
    )
    .await;
    let session = session.unwrap();
    let named = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let traceparent = format!("00-{TRACE}-{CALLER}-01");
    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "add", "arguments": { "a": 2, "b": 3 },
        "_meta": { "traceparent": traceparent } } });
    let (_, _, answer) = exchange(addr, http::Method::POST, &named, &call.to_string()).await;
    assert_eq!(answer["result"]["content"][0]["text"], "5");
    let unknown = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": { "name": "nope", "arguments": {} } });
    exchange(addr, http::Method::POST, &named, &unknown.to_string()).await;

    let finished = spans.get_finished_spans().unwrap();
    let server = (finished.iter())
        .find(|s| s.name == "tools/call add" && s.span_kind == SpanKind::Server)
        .expect("the gateway's span");
    assert_eq!(server.span_context.trace_id().to_string(), TRACE);
    assert_eq!(server.parent_span_id.to_string(), CALLER);
    assert_eq!(text(server, "gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(
        text(server, "mcp_connect.server.name").as_deref(),
        Some("one")
    );
    assert_eq!(text(server, "jsonrpc.request.id").as_deref(), Some("7"));
    assert_eq!(
        text(server, "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );
    assert!(text(server, "mcp.session.id").is_none());
    let upstream = (finished.iter())
        .find(|s| s.name == "tools/call add" && s.span_kind == SpanKind::Client)
        .expect("the member's client span");
    assert_eq!(upstream.parent_span_id, server.span_context.span_id());
    assert_eq!(upstream.span_context.trace_id().to_string(), TRACE);
    let failed = (finished.iter())
        .find(|s| s.name == "tools/call nope")
        .expect("the refused call's span");
    assert_eq!(text(failed, "error.type").as_deref(), Some("-32602"));

    meters.force_flush().unwrap();
    let (mut points, mut sessions) = (Vec::new(), None);
    for resource in metrics.get_finished_metrics().unwrap() {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                match (metric.name(), metric.data()) {
                    (
                        "mcp.server.operation.duration",
                        AggregatedMetrics::F64(MetricData::Histogram(h)),
                    ) => points.extend(
                        h.data_points()
                            .map(|p| p.attributes().cloned().collect::<Vec<_>>()),
                    ),
                    (
                        "mcp_connect.gateway.sessions",
                        AggregatedMetrics::U64(MetricData::Gauge(g)),
                    ) => {
                        sessions = g.data_points().next().map(|p| p.value());
                    }
                    _ => {}
                }
            }
        }
    }
    let add = KeyValue::new("gen_ai.tool.name", "add");
    let one = KeyValue::new("mcp_connect.server.name", "one");
    assert!(
        points.iter().any(|p| p.contains(&add) && p.contains(&one)),
        "{points:?}"
    );
    assert_eq!(sessions, Some(1));
}
