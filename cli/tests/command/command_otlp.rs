//! Issue 28, item 6: `--otlp URL` exports the run's spans and metrics over
//! OTLP/HTTP to a loopback receiver, decoded here with the OpenTelemetry
//! protobuf types.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;

use crate::support::cli::run_async;
use crate::support::{Script, ScriptServer};

#[tokio::test]
async fn otlp_exports_the_runs_spans_and_metrics() {
    let receiver = ScriptServer::start(|_| Script::Status(200)).await;
    let output = run_async(&["--json", "--list-tools", "--otlp", &receiver.url_for("")]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{text}");

    let recorded = receiver.recorded();
    let traces: Vec<_> = recorded.iter().filter(|r| r.path == "/v1/traces").collect();
    assert!(
        !traces.is_empty(),
        "spans arrived: {:?}",
        receiver.methods()
    );
    assert_eq!(
        traces[0].headers["content-type"], "application/x-protobuf",
        "OTLP/HTTP protobuf"
    );
    let mut names = Vec::new();
    let mut service = None;
    for request in &traces {
        let decoded = ExportTraceServiceRequest::decode(request.raw.clone()).expect("protobuf");
        for resource in decoded.resource_spans {
            for attribute in resource.resource.iter().flat_map(|r| &r.attributes) {
                if attribute.key == "service.name" {
                    if let Some(AnyValue::StringValue(name)) =
                        attribute.value.as_ref().and_then(|v| v.value.clone())
                    {
                        service = Some(name);
                    }
                }
            }
            for scope in resource.scope_spans {
                names.extend(scope.spans.into_iter().map(|span| span.name));
            }
        }
    }
    assert_eq!(service.as_deref(), Some("mcp-connect"));
    for expected in ["establish", "establish attempt", "tools/list"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }

    let metrics: Vec<String> = recorded
        .iter()
        .filter(|r| r.path == "/v1/metrics")
        .flat_map(|r| {
            ExportMetricsServiceRequest::decode(r.raw.clone())
                .expect("protobuf")
                .resource_metrics
        })
        .flat_map(|r| r.scope_metrics)
        .flat_map(|s| s.metrics)
        .map(|m| m.name)
        .collect();
    for expected in [
        "mcp.client.operation.duration",
        "mcp.client.session.duration",
        "mcp_connect.establishment.duration",
    ] {
        assert!(
            metrics.iter().any(|n| n == expected),
            "{expected} in {metrics:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_otlp_url_is_a_usage_error() {
    let output = run_async(&["--otlp", "ftp://127.0.0.1:1"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--otlp"));
}

/// Issue 66: `serve --otlp` exports the gateway's SERVER span of a
/// forwarded call as the parent of the member's CLIENT span, and the
/// server-side metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_its_server_spans_over_the_members_client_spans() {
    use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
    let receiver = ScriptServer::start(|_| Script::Status(200)).await;
    let demo = mcp_connect::demo::DemoServer::start().await.unwrap();
    let config = std::env::temp_dir().join(format!("mcp-connect-otlp-{}.json", std::process::id()));
    let servers = serde_json::json!({ "mcpServers": { "one": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let otlp = receiver.url_for("");
    let (mut child, url) =
        crate::support::cli::serve(config.to_str().unwrap(), &["--otlp", &otlp]).await;
    let session = crate::command_serve_sessions::used_session_at(&url).await;
    assert!(!session.is_empty());
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    crate::support::cli::wait(&mut child, crate::support::cli::COMMAND_LIMIT);
    let _ = std::fs::remove_file(&config);

    let recorded = receiver.recorded();
    let spans: Vec<_> = (recorded.iter())
        .filter(|r| r.path == "/v1/traces")
        .flat_map(|r| {
            ExportTraceServiceRequest::decode(r.raw.clone())
                .unwrap()
                .resource_spans
        })
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect();
    let call = |kind: SpanKind| {
        (spans.iter())
            .find(|s| s.name == "tools/call add" && s.kind == kind as i32)
            .unwrap_or_else(|| {
                panic!(
                    "a {kind:?} span in {:?}",
                    spans.iter().map(|s| &s.name).collect::<Vec<_>>()
                )
            })
    };
    let (server, client) = (call(SpanKind::Server), call(SpanKind::Client));
    assert_eq!(client.parent_span_id, server.span_id);
    assert_eq!(client.trace_id, server.trace_id);
    let metrics: Vec<String> = (recorded.iter())
        .filter(|r| r.path == "/v1/metrics")
        .flat_map(|r| {
            ExportMetricsServiceRequest::decode(r.raw.clone())
                .unwrap()
                .resource_metrics
        })
        .flat_map(|r| r.scope_metrics)
        .flat_map(|s| s.metrics)
        .map(|m| m.name)
        .collect();
    for expected in [
        "mcp.server.operation.duration",
        "mcp_connect.gateway.sessions",
    ] {
        assert!(
            metrics.iter().any(|n| n == expected),
            "{expected} in {metrics:?}"
        );
    }
}
