//! The dual-era establishment ladder (src/handshake.rs), branch by branch,
//! against scripted loopback HTTP servers.

use mcp_connect::establish::stage;
use std::time::Duration;

use crate::support::{error, legacy, result, watchdog, Script, ScriptServer};
use mcp_connect::layers::{CancelSource, FailureKind};
use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::request::{Limits, VersionPolicy};
use mcp_connect::{ConnectRequest, Connector, Error, ErrorKind, Session};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(10);

fn discover_ok(request: &crate::support::Recorded) -> Script {
    Script::Json(
        200,
        result(
            request,
            json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": { "tools": {} },
                "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "modern", "version": "9" } }
            }),
        ),
    )
}

async fn connect(server: &ScriptServer, policy: VersionPolicy) -> Result<Session, Error> {
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_versions(policy);
    watchdog(LIMIT, Connector::new().connect(request)).await
}

/// A server whose probe answer is `probe`, and that otherwise behaves as a
/// normal legacy server.
async fn probe_answered(
    probe: impl Fn(&crate::support::Recorded) -> Script + Send + Sync + 'static,
) -> ScriptServer {
    ScriptServer::start(move |r| match r.rpc_method() {
        "server/discover" => probe(r),
        _ => legacy(r),
    })
    .await
}

#[tokio::test]
async fn discover_result_naming_our_version_makes_a_modern_session() {
    let server = probe_answered(discover_ok).await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(session.server_info().name, "modern");
    let probe = &server.recorded()[0];
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(probe.header("mcp-method"), Some("server/discover"));
    assert_eq!(
        probe.header("accept"),
        Some("application/json, text/event-stream")
    );
    let meta = &probe.body["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "mcp-connect"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    assert_eq!(server.methods(), ["server/discover"]);
}

#[tokio::test]
async fn modern_requests_carry_meta_and_routing_headers() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => discover_ok(r),
        _ => Script::Json(200, result(r, json!({ "content": [] }))),
    })
    .await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    session.call_tool("add", &json!({ "a": 1 })).await.unwrap();
    let call = &server.recorded()[1];
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("add"));
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(
        call.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(call.body["params"]["arguments"], json!({ "a": 1 }));
    assert!(call.header("mcp-session-id").is_none());
}

#[tokio::test]
async fn unsupported_version_naming_a_mutual_modern_version_probes_again() {
    let server = probe_answered(|r| {
        if r.id() == json!(1) {
            Script::Json(
                400,
                error(
                    r,
                    -32022,
                    Some(json!({ "supported": ["2026-07-28", "2099-01-01"] })),
                ),
            )
        } else {
            discover_ok(r)
        }
    })
    .await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(server.methods(), ["server/discover", "server/discover"]);
}

#[tokio::test]
async fn unsupported_version_listing_only_legacy_versions_initializes_with_the_best_mutual_one() {
    let server = probe_answered(|r| {
        Script::Json(
            400,
            error(
                r,
                -32022,
                Some(json!({ "supported": ["2025-03-26", "2025-06-18"] })),
            ),
        )
    })
    .await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_06_18);
    let init = &server.recorded()[1];
    assert_eq!(init.body["params"]["protocolVersion"], "2025-06-18");
}

#[tokio::test]
async fn unsupported_version_with_nothing_in_common_fails_without_initialize() {
    let server = probe_answered(|r| {
        Script::Json(
            400,
            error(r, -32022, Some(json!({ "supported": ["2099-01-01"] }))),
        )
    })
    .await;
    let error = connect(&server, VersionPolicy::Auto).await.unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Version);
    assert_eq!(server.methods(), ["server/discover"]);
}

#[tokio::test]
async fn modern_rejections_are_fatal_and_never_downgraded() {
    for code in [-32020, -32021] {
        let server = probe_answered(move |r| Script::Json(400, error(r, code, None))).await;
        let error = connect(&server, VersionPolicy::Auto).await.unwrap_err();
        let failure = error.failure();
        assert_eq!(
            (failure.kind, failure.jsonrpc_code),
            (FailureKind::Rejected, Some(code))
        );
        assert_eq!(server.methods(), ["server/discover"], "code {code}");
    }
}

#[tokio::test]
async fn auth_throttling_and_server_errors_on_the_probe_surface_without_a_downgrade() {
    let cases: [(u16, FailureKind); 5] = [
        (401, FailureKind::Auth),
        (403, FailureKind::Auth),
        (429, FailureKind::Throttled),
        (500, FailureKind::HttpStatus),
        (503, FailureKind::HttpStatus),
    ];
    for (status, kind) in cases {
        // As a bare status (with Retry-After) and with a JSON-RPC body.
        let bare =
            probe_answered(move |_| Script::StatusWith(status, vec![("retry-after", "7".into())]))
                .await;
        let failure = connect(&bare, VersionPolicy::Auto)
            .await
            .unwrap_err()
            .failure();
        assert_eq!(
            (failure.stage, failure.kind, failure.http_status),
            (stage::PROBE, kind, Some(status))
        );
        if status == 429 {
            assert_eq!(failure.retry_after, Some(Duration::from_secs(7)));
        }
        assert_eq!(bare.methods(), ["server/discover"]);

        let with_body = probe_answered(move |r| Script::Json(status, error(r, -32000, None))).await;
        let failure = connect(&with_body, VersionPolicy::Auto)
            .await
            .unwrap_err()
            .failure();
        assert_eq!((failure.kind, failure.http_status), (kind, Some(status)));
        assert_eq!(with_body.methods(), ["server/discover"]);
    }
}

#[tokio::test]
async fn any_other_error_or_4xx_is_legacy_evidence_whatever_its_body() {
    type Probe = fn(&crate::support::Recorded) -> Script;
    let cases: [(&str, Probe); 8] = [
        ("method not found at 200", |r| {
            Script::Json(200, error(r, -32601, None))
        }),
        ("server not initialized at 400", |r| {
            Script::Json(400, error(r, -32000, None))
        }),
        ("invalid request at 400", |r| {
            Script::Json(400, error(r, -32600, None))
        }),
        ("plain-text 400", |_| {
            Script::Raw(400, "text/plain", "Bad Request".into())
        }),
        ("JSON-RPC error as text/plain", |r| {
            Script::Raw(400, "text/plain", error(r, -32601, None).to_string().into())
        }),
        ("empty 404", |_| Script::Status(404)),
        ("405", |_| Script::Status(405)),
        ("JSON that is not JSON-RPC", |_| {
            Script::Json(400, json!({ "error": "bad request" }))
        }),
    ];
    for (name, probe) in cases {
        let server = probe_answered(probe).await;
        let session = connect(&server, VersionPolicy::Auto)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(session.era(), Era::Legacy, "{name}");
        assert_eq!(
            session.protocol_version(),
            &ProtocolVersion::V2025_11_25,
            "{name}"
        );
        assert_eq!(
            server.methods(),
            ["server/discover", "initialize", "notifications/initialized"],
            "{name}"
        );
    }
}

#[tokio::test]
async fn legacy_session_sends_its_session_id_and_version_on_every_later_request() {
    let server = probe_answered(|r| Script::Json(400, error(r, -32000, None))).await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    session.call_tool("add", &json!({})).await.unwrap();
    session.close().await.unwrap();
    let recorded = server.recorded();
    assert!(
        recorded[1].header("mcp-session-id").is_none(),
        "initialize carries no session"
    );
    for later in &recorded[2..] {
        assert_eq!(later.header("mcp-session-id"), Some("session-canary-0001"));
        assert_eq!(later.header("mcp-protocol-version"), Some("2025-11-25"));
        assert!(
            later.header("mcp-method").is_none(),
            "legacy requests carry no modern headers"
        );
    }
    assert_eq!(server.methods().last().map(String::as_str), Some("DELETE"));
}

#[tokio::test(start_paused = true)]
async fn probe_timeout_over_http_is_an_outage_unless_configured_as_legacy() {
    let server = probe_answered(|_| Script::Stall).await;
    let limits = Limits::default().with_probe_timeout(Duration::from_millis(200));
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_limits(limits);
    let error = watchdog(LIMIT, Connector::new().connect(request.clone()))
        .await
        .unwrap_err();
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert_eq!(failure.cancel_source, Some(CancelSource::ProbeTimeout));
    assert_eq!(server.methods(), ["server/discover"]);

    let request = request.with_probe_timeout_as_legacy(true);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert_eq!(session.era(), Era::Legacy);
}

#[tokio::test]
async fn refused_connection_surfaces_as_a_connect_failure() {
    let port = crate::support::ClosedPort::new();
    let url = port.url("/mcp");
    let request = ConnectRequest::http(&url).unwrap();
    let error = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Connect);
    assert_eq!(error.stage(), stage::PROBE);
}

#[tokio::test]
async fn a_legacy_pin_skips_the_probe_and_is_offered_exactly() {
    let server = probe_answered(discover_ok).await;
    let session = connect(&server, VersionPolicy::Pin(ProtocolVersion::V2025_03_26))
        .await
        .unwrap();
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_03_26);
    assert_eq!(
        server.methods(),
        ["initialize", "notifications/initialized"]
    );
    assert_eq!(
        server.recorded()[0].body["params"]["protocolVersion"],
        "2025-03-26"
    );
}

#[tokio::test]
async fn a_server_answering_a_version_outside_the_pin_ends_the_attempt() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "initialize" => Script::JsonWith(
            200,
            result(
                r,
                json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {} }),
            ),
            vec![("mcp-session-id", "s-1".into())],
        ),
        _ => legacy(r),
    })
    .await;
    let error = connect(&server, VersionPolicy::Pin(ProtocolVersion::V2025_06_18))
        .await
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Version(_)), "{error:?}");
    assert_eq!(error.stage(), stage::INITIALIZE);
    assert_eq!(
        server.methods(),
        ["initialize", "DELETE"],
        "no initialized; the session is ended"
    );
}

#[tokio::test]
async fn a_modern_pin_never_falls_back_to_initialize() {
    let server = probe_answered(|r| Script::Json(400, error(r, -32000, None))).await;
    let error = connect(&server, VersionPolicy::Pin(ProtocolVersion::V2026_07_28))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Version);
    assert_eq!(server.methods(), ["server/discover"]);
}

#[tokio::test]
async fn a_legacy_ceiling_skips_the_probe_and_caps_the_offer() {
    let server = probe_answered(discover_ok).await;
    let session = connect(
        &server,
        VersionPolicy::Ceiling(ProtocolVersion::V2025_06_18),
    )
    .await
    .unwrap();
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_06_18);
    assert_eq!(
        server.methods(),
        ["initialize", "notifications/initialized"]
    );
}

#[tokio::test]
async fn unsupported_version_answer_to_initialize_is_modern_evidence_and_earns_one_more_probe() {
    let server = ScriptServer::start(|r| match (r.rpc_method(), r.id()) {
        // A probe lost to a slow start: the server locks modern and refuses initialize.
        ("server/discover", id) if id == json!(1) => Script::Json(400, error(r, -32601, None)),
        ("server/discover", _) => discover_ok(r),
        ("initialize", _) => Script::Json(
            400,
            error(r, -32022, Some(json!({ "supported": ["2026-07-28"] }))),
        ),
        _ => legacy(r),
    })
    .await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(
        server.methods(),
        ["server/discover", "initialize", "server/discover"]
    );
}

#[tokio::test]
async fn sse_replies_with_priming_events_and_a_notification_answered_with_a_body_are_accepted() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Raw(404, "text/html", "<h1>Not Found</h1>".into()),
        "initialize" => {
            let reply = result(r, json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": { "name": "sse", "version": "1" } }));
            Script::Sse(vec![
                "id: prime-1\nretry: 500\ndata:\n\n".into(),
                ": keep-alive comment\n\n".into(),
                "event: message\nid: 2\n".into(),
                format!("data: {reply}\n\n"),
            ])
        }
        "notifications/initialized" => Script::Json(200, json!({ "ok": true })),
        _ => legacy(r),
    })
    .await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    assert_eq!(session.server_info().name, "sse");
}

#[tokio::test]
async fn server_requests_on_a_reply_stream_are_answered_before_the_reply() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Status(404),
        "tools/call" => {
            let reply = result(r, json!({ "content": [{ "type": "text", "text": "done" }] }));
            Script::Sse(vec![
                "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n".into(),
                "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n".into(),
                "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-2\",\"method\":\"sampling/createMessage\"}\n\n".into(),
                format!("data: {reply}\n\n"),
            ])
        }
        "" => Script::Status(202),
        _ => legacy(r),
    })
    .await;
    let session = connect(&server, VersionPolicy::Auto).await.unwrap();
    let result = session.call_tool("slow", &json!({})).await.unwrap();
    assert_eq!(result.text(), "done");
    let answers: Vec<Value> = server
        .recorded()
        .into_iter()
        .filter(|r| r.body.get("method").is_none() && r.body.get("id").is_some())
        .map(|r| r.body)
        .collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(
        answers[0],
        json!({ "jsonrpc": "2.0", "id": "srv-1", "result": {} })
    );
    assert_eq!(answers[1]["error"]["code"], -32601);
}
