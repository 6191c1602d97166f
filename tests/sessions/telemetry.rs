//! Issue 28: OpenTelemetry per the MCP semantic conventions, read back
//! through the SDK's in-memory exporters: request spans (success, JSON-RPC
//! error, `isError`), trace context in `params._meta`, an establishment
//! with a stalled probe and a fresh attempt, the histograms' buckets, a
//! server request joining the server's trace, and no payload anywhere.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_connect::inbound::ClientHandler;
use mcp_connect::protocol::server_requests::CreateMessageResult;
use mcp_connect::request::Limits;
use mcp_connect::telemetry::{names, Telemetry, DURATION_BUCKETS};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt};
use opentelemetry::{KeyValue, Value as OtelValue};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;

use crate::support::{error, legacy, result, watchdog, Recorded, Script, ScriptServer};
use mcp_connect::protocol::RawRequest;

const LIMIT: Duration = Duration::from_secs(20);

struct Otel {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
    _tracers: SdkTracerProvider,
    telemetry: Telemetry,
}

fn otel() -> Otel {
    let spans = InMemorySpanExporter::default();
    let tracers = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let metrics = InMemoryMetricExporter::default();
    let meters = SdkMeterProvider::builder()
        .with_periodic_exporter(metrics.clone())
        .build();
    let telemetry =
        Telemetry::new(&tracers, &meters).with_propagator(TraceContextPropagator::new());
    Otel {
        spans,
        metrics,
        meters,
        _tracers: tracers,
        telemetry,
    }
}

impl Otel {
    /// A session to `url`, instrumented.
    async fn connect(&self, url: &str) -> mcp_connect::Session {
        let request = ConnectRequest::http(url)
            .unwrap()
            .with_telemetry(self.telemetry.clone());
        watchdog(LIMIT, Connector::new().connect(request))
            .await
            .unwrap()
    }

    fn spans(&self) -> Vec<SpanData> {
        self.spans.get_finished_spans().unwrap()
    }

    fn named(&self, name: &str) -> Vec<SpanData> {
        self.spans()
            .into_iter()
            .filter(|s| s.name == name)
            .collect()
    }

    /// Every histogram: its name, bounds and each point's attributes.
    fn histograms(&self) -> Vec<(String, Vec<f64>, Vec<Vec<KeyValue>>)> {
        self.meters.force_flush().unwrap();
        let mut found = Vec::new();
        for resource in self.metrics.get_finished_metrics().unwrap() {
            for scope in resource.scope_metrics() {
                for metric in scope.metrics() {
                    let (bounds, points) = match metric.data() {
                        AggregatedMetrics::F64(MetricData::Histogram(h)) => (
                            h.data_points().next().map(|p| p.bounds().collect()),
                            h.data_points()
                                .map(|p| p.attributes().cloned().collect())
                                .collect(),
                        ),
                        AggregatedMetrics::U64(MetricData::Histogram(h)) => (
                            h.data_points().next().map(|p| p.bounds().collect()),
                            h.data_points()
                                .map(|p| p.attributes().cloned().collect())
                                .collect(),
                        ),
                        _ => continue,
                    };
                    found.push((metric.name().to_owned(), bounds.unwrap_or_default(), points));
                }
            }
        }
        found
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|v| v.as_str().into_owned())
}

/// A 2025 server (legacy helper) whose tools answer by name: `ok`
/// succeeds, `broken` says `isError`, anything else is a JSON-RPC error.
fn tools(request: &Recorded) -> Script {
    match request.rpc_method() {
        "server/discover" => Script::Status(400),
        "tools/call" => match request.body["params"]["name"].as_str() {
            Some("ok") => Script::Json(200, result(request, json!({ "content": [] }))),
            Some("broken") => Script::Json(
                200,
                result(request, json!({ "content": [], "isError": true })),
            ),
            _ => Script::Json(200, error(request, -32602, None)),
        },
        _ => legacy(request),
    }
}

#[tokio::test]
async fn a_tools_call_span_has_the_conventions_name_kind_attributes_and_status() {
    let otel = otel();
    let server = ScriptServer::start(tools).await;
    let session = otel.connect(&server.url()).await;
    session.call_tool("ok", &json!({})).await.unwrap();
    let broken = session.call_tool("broken", &json!({})).await.unwrap();
    assert!(broken.is_error);
    session.call_tool("missing", &json!({})).await.unwrap_err();

    let port = server.addr().port();
    for (name, error_type) in [
        ("tools/call ok", None),
        ("tools/call broken", Some("tool_error")),
        ("tools/call missing", Some("-32602")),
    ] {
        let spans = otel.named(name);
        assert_eq!(spans.len(), 1, "{name}: {:?}", otel.spans());
        let span = &spans[0];
        assert_eq!(span.span_kind, SpanKind::Client);
        assert_eq!(text(span, names::METHOD).as_deref(), Some("tools/call"));
        let tool = name.trim_start_matches("tools/call ");
        assert_eq!(text(span, names::TOOL_NAME).as_deref(), Some(tool));
        assert_eq!(
            text(span, names::OPERATION_NAME).as_deref(),
            Some("execute_tool")
        );
        assert!(text(span, names::REQUEST_ID).is_some());
        assert_eq!(
            text(span, names::PROTOCOL_VERSION).as_deref(),
            Some("2025-11-25")
        );
        assert_eq!(text(span, names::NETWORK_TRANSPORT).as_deref(), Some("tcp"));
        assert_eq!(
            text(span, names::SERVER_ADDRESS).as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            attribute(span, names::SERVER_PORT),
            Some(&OtelValue::I64(i64::from(port)))
        );
        assert_eq!(attribute(span, names::SESSION_ID), None, "off by default");
        assert_eq!(text(span, names::ERROR_TYPE).as_deref(), error_type);
        match error_type {
            None => assert_eq!(span.status, Status::Unset),
            Some(code) => {
                assert!(matches!(span.status, Status::Error { .. }));
                let rpc = text(span, names::RPC_STATUS);
                assert_eq!(rpc.as_deref(), (code != "tool_error").then_some(code));
            }
        }
        // The server received this span's context in `params._meta`.
        let call = server
            .recorded_for("tools/call")
            .into_iter()
            .find(|r| r.body["params"]["name"] == tool)
            .unwrap();
        let context = span.span_context.clone();
        assert_eq!(
            call.body["params"]["_meta"]["traceparent"],
            format!("00-{}-{}-01", context.trace_id(), context.span_id())
        );
    }
    session.close().await.unwrap();
}

#[tokio::test]
async fn a_stalled_probe_and_a_fresh_attempt_show_in_one_establishment_span() {
    let otel = otel();
    let probes = Arc::new(AtomicUsize::new(0));
    let server = ScriptServer::start({
        let probes = Arc::clone(&probes);
        move |request: &Recorded| match request.rpc_method() {
            "server/discover" if probes.fetch_add(1, Ordering::Relaxed) == 0 => Script::Stall,
            "server/discover" => Script::Status(400),
            _ => legacy(request),
        }
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_limits(Limits::default().with_probe_timeout(Duration::from_millis(200)))
        .with_telemetry(otel.telemetry.clone());
    let stack = crate::support::recovering(3);
    let session = watchdog(LIMIT, stack.connect(request)).await.unwrap();
    drop(session);

    let establish = otel.named("establish");
    assert_eq!(establish.len(), 1);
    let establish = &establish[0];
    assert_eq!(
        attribute(establish, names::ATTEMPTS),
        Some(&OtelValue::I64(2))
    );
    assert_eq!(text(establish, names::ERA).as_deref(), Some("legacy"));
    assert_eq!(establish.status, Status::Unset);
    let mut attempts = otel.named("establish attempt");
    attempts.sort_by_key(|s| attribute(s, names::ATTEMPT).map(|v| v.as_str().into_owned()));
    assert_eq!(attempts.len(), 2);
    for attempt in &attempts {
        assert_eq!(
            attempt.parent_span_id,
            establish.span_context.span_id(),
            "attempts are children of the establishment"
        );
        assert_eq!(
            attempt.span_context.trace_id(),
            establish.span_context.trace_id()
        );
    }
    let first = &attempts[0];
    assert!(matches!(first.status, Status::Error { .. }));
    assert_eq!(text(first, names::FAILURE_KIND).as_deref(), Some("timeout"));
    let stalled = first
        .events
        .iter()
        .find(|e| {
            e.attributes
                .iter()
                .any(|kv| kv.key.as_str() == names::OUTCOME && kv.value.as_str() == "failed")
        })
        .expect("a failed stage event");
    let event_text = |key: &str| {
        stalled
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.as_str().into_owned())
    };
    assert_eq!(event_text(names::STAGE).as_deref(), Some("probe"));
    assert_eq!(
        event_text(names::CANCEL_SOURCE).as_deref(),
        Some("probe_timeout")
    );
    let second = &attempts[1];
    assert_eq!(second.status, Status::Unset);
    let stages: Vec<String> = second
        .events
        .iter()
        .filter(|e| {
            e.attributes
                .iter()
                .any(|kv| kv.key.as_str() == names::OUTCOME && kv.value.as_str() == "succeeded")
        })
        .filter_map(|e| {
            e.attributes
                .iter()
                .find(|kv| kv.key.as_str() == names::STAGE)
                .map(|kv| kv.value.as_str().into_owned())
        })
        .collect();
    assert_eq!(stages, ["initialize", "initialized"], "{second:?}");

    let histograms = otel.histograms();
    let find = |name: &str| {
        histograms
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("{name} in {histograms:?}"))
    };
    let (_, _, points) = find(names::ESTABLISHMENT_DURATION);
    assert!(points[0]
        .iter()
        .any(|kv| kv.key.as_str() == names::OUTCOME && kv.value.as_str() == "established"));
    find(names::ESTABLISHMENT_ATTEMPTS);
    let (_, _, stages) = find(names::STAGE_DURATION);
    assert!(stages.iter().any(|point| point
        .iter()
        .any(|kv| kv.key.as_str() == names::STAGE && kv.value.as_str() == "probe")));
    // The session ended (dropped): its duration was recorded.
    let (_, bounds, _) = find(names::SESSION_DURATION);
    assert_eq!(bounds, &DURATION_BUCKETS);
}

#[tokio::test]
async fn the_operation_histogram_has_the_conventions_buckets_and_labels() {
    let otel = otel();
    let server = ScriptServer::start(tools).await;
    let session = otel.connect(&server.url()).await;
    session.call_tool("ok", &json!({})).await.unwrap();
    session.call_tool("missing", &json!({})).await.unwrap_err();
    session.close().await.unwrap();
    drop(session);
    let histograms = otel.histograms();
    let (_, bounds, points) = histograms
        .iter()
        .find(|(n, _, _)| n == names::OPERATION_DURATION)
        .expect("the operation histogram");
    assert_eq!(bounds, &DURATION_BUCKETS);
    let has = |point: &Vec<KeyValue>, key: &str, value: &str| {
        point
            .iter()
            .any(|kv| kv.key.as_str() == key && kv.value.as_str() == value)
    };
    assert!(points.iter().any(|p| has(p, names::TOOL_NAME, "ok")
        && has(p, names::METHOD, "tools/call")
        && !p.iter().any(|kv| kv.key.as_str() == names::ERROR_TYPE)));
    assert!(points.iter().any(|p| has(p, names::TOOL_NAME, "missing")
        && has(p, names::ERROR_TYPE, "-32602")
        && has(p, names::RPC_STATUS, "-32602")));
    assert!(
        points
            .iter()
            .all(|p| !p.iter().any(|kv| kv.key.as_str() == names::REQUEST_ID)),
        "no per-request label on a metric"
    );
    assert!(histograms
        .iter()
        .any(|(n, b, _)| n == names::SESSION_DURATION && b == &DURATION_BUCKETS));
}

#[tokio::test]
async fn a_server_request_is_handled_inside_the_servers_trace() {
    let otel = otel();
    let remote_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let remote_span = "00f067aa0ba902b7";
    let server = ScriptServer::start(move |request: &Recorded| {
        if request.method == http::Method::GET {
            return Script::Status(405);
        }
        if request.body.get("method").is_none() && request.body.get("id").is_some() {
            return Script::Status(202);
        }
        match request.rpc_method() {
            "server/discover" => Script::Status(400),
            "tools/call" => Script::Sse(vec![
                format!(
                    "event: message\ndata: {}\n\n",
                    json!({ "jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage",
                            "params": { "messages": [], "maxTokens": 5, "_meta": {
                                "traceparent": format!("00-{remote_trace}-{remote_span}-01") } } })
                ),
                format!(
                    "event: message\ndata: {}\n\n",
                    result(request, json!({ "content": [] }))
                ),
            ]),
            _ => legacy(request),
        }
    })
    .await;
    let seen = Arc::new(std::sync::Mutex::new(None));
    let handler = ClientHandler::new().on_sampling({
        let seen = Arc::clone(&seen);
        move |_| {
            let seen = Arc::clone(&seen);
            async move {
                let cx = opentelemetry::Context::current();
                *seen.lock().unwrap() = Some(cx.span().span_context().trace_id().to_string());
                Ok(CreateMessageResult::text("canned", "hi"))
            }
        }
    });
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_handler(handler)
        .with_telemetry(otel.telemetry.clone());
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    session.call_tool("any", &json!({})).await.unwrap();
    session.close().await.unwrap();
    assert_eq!(
        seen.lock().unwrap().as_deref(),
        Some(remote_trace),
        "the handler ran in the server's trace"
    );
    let handled = otel.named("sampling/createMessage");
    assert_eq!(handled.len(), 1);
    assert_eq!(handled[0].span_kind, SpanKind::Server);
    assert_eq!(handled[0].parent_span_id.to_string(), remote_span);
    assert!(handled[0].parent_span_is_remote);
}

/// G14 with instrumentation on (and nothing opted in): no credential,
/// session id, argument, result or server message in any exported span,
/// event, attribute or metric.
#[tokio::test]
async fn no_payload_reaches_an_exported_span_or_metric() {
    let otel = otel();
    let server = ScriptServer::start(|request: &Recorded| match request.rpc_method() {
        "server/discover" => Script::Status(400),
        "initialize" => Script::JsonWith(
            200,
            result(
                request,
                json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                        "serverInfo": { "name": "canary-server-name", "version": "1" } }),
            ),
            vec![("mcp-session-id", "canary-session-id".into())],
        ),
        "tools/call" => Script::Json(
            200,
            json!({ "jsonrpc": "2.0", "id": request.body["id"],
                    "error": { "code": -32000, "message": "canary-server-error" } }),
        ),
        "resources/read" => Script::Json(
            200,
            result(
                request,
                json!({ "contents": [{ "uri": "x", "text": "canary-result" }] }),
            ),
        ),
        _ => legacy(request),
    })
    .await;
    let url = server
        .url()
        .replace("http://", "http://user:canary-userinfo@")
        + "?token=canary-query";
    let request = ConnectRequest::http(&url)
        .unwrap()
        .with_header("authorization", "Bearer canary-authorization")
        .unwrap()
        .with_telemetry(otel.telemetry.clone());
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    let _ = session
        .call_tool("t", &json!({ "secret": "canary-tool-argument" }))
        .await;
    let _ = session
        .send(RawRequest::new(
            "resources/read",
            Some(json!({ "uri": "https://u:canary-uri-password@h/r?key=canary-uri-query" })),
        ))
        .await;
    session.close().await.unwrap();
    drop(session);
    let read = otel.named("resources/read");
    assert_eq!(
        text(&read[0], names::RESOURCE_URI).as_deref(),
        Some("https://h/r"),
        "the URI without userinfo and query"
    );
    let exported = format!("{:?}\n{:?}", otel.spans(), otel.histograms());
    assert!(exported.contains("tools/call"), "{exported}");
    for canary in [
        "canary-authorization",
        "canary-session-id",
        "canary-query",
        "canary-userinfo",
        "canary-tool-argument",
        "canary-server-error",
        "canary-result",
        "canary-uri-password",
        "canary-uri-query",
    ] {
        assert!(!exported.contains(canary), "{canary} exported: {exported}");
    }
}

/// The group instruments every server it is given: a call routed through
/// the group is a span of the server it went to, under its establishment.
#[tokio::test]
async fn a_group_instruments_each_server() {
    use mcp_connect::demo::DemoServer;
    use mcp_connect::group::{Server, ServerGroup};

    let otel = otel();
    let (alpha, beta) = (
        DemoServer::start().await.unwrap(),
        DemoServer::start().await.unwrap(),
    );
    let group = ServerGroup::builder()
        .with_telemetry(otel.telemetry.clone())
        .build();
    let stack = EstablishBuilder::new(Connector::new()).build();
    for (name, server) in [("alpha", &alpha), ("beta", &beta)] {
        group
            .add(Server::new(
                stack.clone(),
                ConnectRequest::http(&server.url()).unwrap().with_name(name),
            ))
            .unwrap();
    }
    watchdog(LIMIT, group.settled()).await;
    let sum = watchdog(
        LIMIT,
        group.call_tool("beta__add", &json!({ "a": 1, "b": 2 })),
    )
    .await
    .unwrap();
    assert_eq!(sum.text(), "3");
    assert_eq!(otel.named("establish").len(), 2, "one per server");
    let calls = otel.named("tools/call add");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        attribute(&calls[0], names::SERVER_PORT),
        Some(&OtelValue::I64(i64::from(beta.addr().port())))
    );
    // Issue 43, item 2: every span and metric names the member.
    assert_eq!(text(&calls[0], names::SERVER_NAME).as_deref(), Some("beta"));
    let mut establishing: Vec<String> = otel
        .named("establish")
        .iter()
        .chain(otel.named("establish attempt").iter())
        .filter_map(|span| text(span, names::SERVER_NAME))
        .collect();
    establishing.sort();
    assert_eq!(establishing, ["alpha", "alpha", "beta", "beta"]);
    // Issue 43, item 2: the listings a new member makes are children of
    // its `establish` span, not traces of their own.
    let establishments = otel.named("establish");
    let listings = otel.named("tools/list");
    assert_eq!(listings.len(), 2, "one per server");
    for listing in &listings {
        let parent = establishments
            .iter()
            .find(|e| e.span_context.span_id() == listing.parent_span_id);
        let parent = parent.expect("the listing's parent is an establish span");
        assert_eq!(
            parent.span_context.trace_id(),
            listing.span_context.trace_id()
        );
        assert_eq!(
            text(parent, names::SERVER_NAME),
            text(listing, names::SERVER_NAME)
        );
    }
    for (metric, _, labels) in otel.histograms() {
        let named: Vec<Option<String>> = labels
            .iter()
            .map(|set| {
                set.iter()
                    .find(|kv| kv.key.as_str() == names::SERVER_NAME)
                    .map(|kv| kv.value.to_string())
            })
            .collect();
        assert!(
            named
                .iter()
                .all(|name| matches!(name.as_deref(), Some("alpha" | "beta"))),
            "{metric}: {named:?}"
        );
    }
    group.shutdown().await;
}

/// Issue 43, item 2: a call that fails before anything is sent (no
/// session could be had, a breaker refused it) still counts in
/// `mcp.client.operation.duration`, with its `error.type` and the tool.
#[tokio::test]
async fn a_call_that_fails_before_it_is_sent_still_counts() {
    let otel = otel();
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let request = ConnectRequest::http(&format!("http://127.0.0.1:{closed}/mcp"))
        .unwrap()
        .with_telemetry(otel.telemetry.clone());
    let client =
        mcp_connect::McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request)
            .build();
    let error = watchdog(LIMIT, client.call_tool("add", &json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(error, mcp_connect::client::ClientError::Connect(_)),
        "{error:?}"
    );
    let operations: Vec<Vec<KeyValue>> = otel
        .histograms()
        .into_iter()
        .filter(|(name, _, _)| name == names::OPERATION_DURATION)
        .flat_map(|(_, _, points)| points)
        .collect();
    let label = |point: &[KeyValue], key: &str| {
        point
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(operations.len(), 1, "{operations:?}");
    let point = &operations[0];
    assert_eq!(label(point, names::METHOD).as_deref(), Some("tools/call"));
    assert_eq!(label(point, names::TOOL_NAME).as_deref(), Some("add"));
    assert_eq!(label(point, names::ERROR_TYPE).as_deref(), Some("connect"));
    assert_eq!(
        label(point, names::SERVER_PORT).as_deref(),
        Some(closed.to_string().as_str())
    );
}

/// Issue 43, item 2: the establishment that replaces a lost session links
/// to the call whose failure lost it (a link: that call does not wait for
/// it), and stays out of that call's trace.
#[tokio::test]
async fn a_reconnects_establish_links_to_the_call_that_lost_the_session() {
    let otel = otel();
    let server = ScriptServer::start(|request| match request.rpc_method() {
        "tools/call" if request.body["params"]["name"] == "lose" => Script::Status(404),
        _ => tools(request),
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_telemetry(otel.telemetry.clone());
    let client =
        mcp_connect::McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request)
            .build();
    watchdog(LIMIT, client.call_tool("ok", &json!({})))
        .await
        .unwrap();
    let error = watchdog(LIMIT, client.call_tool("lose", &json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            mcp_connect::client::ClientError::Call {
                session_lost: true,
                ..
            }
        ),
        "{error:?}"
    );
    watchdog(LIMIT, client.call_tool("ok", &json!({})))
        .await
        .unwrap();

    let lost = otel.named("tools/call lose");
    assert_eq!(lost.len(), 1);
    let establishments = otel.named("establish");
    assert_eq!(
        establishments.len(),
        2,
        "the first connect and the reconnect"
    );
    assert!(
        establishments[0].links.is_empty(),
        "the first connect has no cause"
    );
    let links: Vec<_> = establishments[1]
        .links
        .iter()
        .map(|link| (link.span_context.trace_id(), link.span_context.span_id()))
        .collect();
    assert_eq!(
        links,
        [(
            lost[0].span_context.trace_id(),
            lost[0].span_context.span_id()
        )]
    );
    assert_ne!(
        establishments[1].parent_span_id,
        lost[0].span_context.span_id(),
        "a link, not a child"
    );
}
