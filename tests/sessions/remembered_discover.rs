//! Issue 29, item 2: the era cache remembers a fresh `server/discover`
//! result, so a modern establishment within its TTL sends nothing and the
//! first request is the application's; a refused remembered version falls
//! back to the full ladder in one extra round trip.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{legacy, result, watchdog, Recorded, Script, ScriptServer};
use mcp_connect::era_cache::{EraCache, Verdict};
use mcp_connect::error::VersionError;
use mcp_connect::extensions::tasks::TaskCall;
use mcp_connect::protocol::CallTool;
use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::{ConnectRequest, Connector, ErrorKind, EstablishBuilder, McpClient, Session};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

/// How the server answers once it is no longer the 2026-07-28 server it
/// was.
#[derive(Clone, Copy)]
enum Downgrade {
    /// A 2025 server: a stateless request is refused with 400 and a
    /// JSON-RPC error without id, as the TypeScript SDK's servers do.
    SessionsOnly,
    /// It refuses 2026-07-28 with `-32022`, naming 2025-11-25.
    Unsupported,
}

/// A 2026-07-28 server whose discover result carries `ttl_ms` and
/// `scope`, until `downgraded` is set.
fn server(
    ttl_ms: u64,
    scope: &'static str,
    downgraded: Arc<AtomicBool>,
    downgrade: Downgrade,
) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request: &Recorded| {
        if downgraded.load(Ordering::Relaxed) {
            let stateless = request.header("mcp-session-id").is_none();
            return match (downgrade, request.rpc_method()) {
                (Downgrade::SessionsOnly, "server/discover") => {
                    Script::Json(400, crate::support::error(request, -32601, None))
                }
                (Downgrade::SessionsOnly, "tools/call") if stateless => Script::Json(
                    400,
                    json!({ "jsonrpc": "2.0", "id": null,
                        "error": { "code": -32000, "message": "no valid session" } }),
                ),
                (Downgrade::Unsupported, "server/discover" | "tools/call") if stateless => {
                    Script::Json(
                        400,
                        crate::support::error(
                            request,
                            -32022,
                            Some(json!({ "supported": ["2025-11-25"] })),
                        ),
                    )
                }
                _ => legacy(request),
            };
        }
        match request.rpc_method() {
            "server/discover" => Script::Json(
                200,
                result(
                    request,
                    json!({ "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} },
                        "instructions": "remembered", "ttlMs": ttl_ms, "cacheScope": scope }),
                ),
            ),
            "tools/call" => Script::Json(
                200,
                result(request, json!({ "resultType": "complete", "content": [] })),
            ),
            _ => Script::Json(200, crate::support::error(request, -32601, None)),
        }
    }
}

fn request(url: &str, cache: &EraCache) -> ConnectRequest {
    ConnectRequest::http(url)
        .unwrap()
        .with_era_cache(cache.clone())
}

async fn connect(request: ConnectRequest) -> Session {
    watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_remembered_discover_sends_nothing_before_the_first_call() {
    let server = ScriptServer::start(server(
        60_000,
        "public",
        Default::default(),
        Downgrade::SessionsOnly,
    ))
    .await;
    let cache = EraCache::new();
    connect(request(&server.url(), &cache)).await;
    assert_eq!(server.count("server/discover"), 1);

    let session = connect(request(&server.url(), &cache)).await;
    assert_eq!(
        session.stats().http_requests,
        0,
        "establishment sent something"
    );
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.instructions(), Some("remembered"));
    assert!(session.capabilities().get("tools").is_some());
    session.call_tool("t", &json!({})).await.unwrap();
    assert_eq!(server.methods(), ["server/discover", "tools/call"]);

    // Persisted and read back, it still stands in for the probe.
    let restored = EraCache::from_json(&cache.to_json()).unwrap();
    let session = connect(request(&server.url(), &restored)).await;
    assert_eq!(session.stats().http_requests, 0);
    assert_eq!(server.count("server/discover"), 1);
}

#[tokio::test]
async fn an_expired_or_another_contexts_discover_is_sent_again() {
    let short = ScriptServer::start(server(
        150,
        "public",
        Default::default(),
        Downgrade::SessionsOnly,
    ))
    .await;
    let cache = EraCache::new();
    connect(request(&short.url(), &cache)).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    connect(request(&short.url(), &cache)).await;
    assert_eq!(
        short.count("server/discover"),
        2,
        "an expired result was used"
    );

    let private = ScriptServer::start(server(
        60_000,
        "private",
        Default::default(),
        Downgrade::SessionsOnly,
    ))
    .await;
    let as_tenant = |tenant: &str| {
        request(&private.url(), &cache)
            .with_header("x-tenant", tenant)
            .unwrap()
    };
    connect(as_tenant("a")).await;
    connect(as_tenant("b")).await;
    assert_eq!(
        private.count("server/discover"),
        2,
        "b used a's private result"
    );
    let again = connect(as_tenant("b")).await;
    assert_eq!(again.stats().http_requests, 0);
    assert_eq!(private.count("server/discover"), 2);
}

#[tokio::test]
async fn a_result_without_ttl_is_not_remembered() {
    let server = ScriptServer::start(server(
        0,
        "public",
        Default::default(),
        Downgrade::SessionsOnly,
    ))
    .await;
    let cache = EraCache::new();
    connect(request(&server.url(), &cache)).await;
    connect(request(&server.url(), &cache)).await;
    assert_eq!(server.count("server/discover"), 2);
}

/// What a remembered session's first call costs once the server changed:
/// the refused call, the full ladder, the call again.
const FALLBACK: &[&str] = &[
    "tools/call",
    "server/discover",
    "initialize",
    "notifications/initialized",
    "tools/call",
];

async fn falls_back_in_one_extra_round_trip(downgrade: Downgrade) {
    let downgraded = Arc::new(AtomicBool::new(false));
    let server =
        ScriptServer::start(server(60_000, "public", Arc::clone(&downgraded), downgrade)).await;
    let cache = EraCache::new();
    connect(request(&server.url(), &cache)).await;
    downgraded.store(true, Ordering::Relaxed);
    let before = server.recorded().len();

    let client = McpClient::builder(
        EstablishBuilder::new(Connector::new()).build(),
        request(&server.url(), &cache),
    )
    .build();
    watchdog(LIMIT, client.call_tool("t", &json!({})))
        .await
        .expect("the call went through on the fallback");
    let methods: Vec<String> = server.methods().into_iter().skip(before).collect();
    assert_eq!(methods, FALLBACK);
    assert!(matches!(
        cache.get(
            &ConnectRequest::http(&server.url())
                .unwrap()
                .target()
                .clone()
        ),
        Some(Verdict::Legacy { .. })
    ));
}

#[tokio::test]
async fn a_server_gone_back_to_sessions_costs_one_extra_round_trip() {
    // A cold client of that legacy server sends discover, initialize,
    // initialized and the call: four. The remembered one, five.
    falls_back_in_one_extra_round_trip(Downgrade::SessionsOnly).await;
}

#[tokio::test]
async fn a_version_refused_with_32022_costs_one_extra_round_trip() {
    falls_back_in_one_extra_round_trip(Downgrade::Unsupported).await;
}

#[tokio::test]
async fn a_session_fails_a_refused_remembered_version_typed_and_forgets_it() {
    let downgraded = Arc::new(AtomicBool::new(false));
    let server = ScriptServer::start(server(
        60_000,
        "public",
        Arc::clone(&downgraded),
        Downgrade::Unsupported,
    ))
    .await;
    let cache = EraCache::new();
    let target = ConnectRequest::http(&server.url())
        .unwrap()
        .target()
        .clone();
    connect(request(&server.url(), &cache)).await;
    downgraded.store(true, Ordering::Relaxed);
    let session = connect(request(&server.url(), &cache)).await;
    let error = session.call_tool("t", &json!({})).await.unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::Version(VersionError::RememberedRefused)
        ),
        "{error:?}"
    );
    assert!(mcp_connect::client::session_loss::session_lost(&error));
    assert!(cache.get(&target).is_none(), "the verdict was kept");
    // The next establishment runs the ladder and lands on legacy.
    let session = connect(request(&server.url(), &cache)).await;
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_11_25);
}

/// G8 for tasks (issue 30, item 5): a call refused for a remembered
/// version is resent whatever the replay policy, but a task creation never
/// is: a second sending could start a second task.
#[tokio::test]
async fn a_refused_task_creation_is_not_sent_again() {
    let downgraded = Arc::new(AtomicBool::new(false));
    let server = ScriptServer::start(server(
        60_000,
        "public",
        Arc::clone(&downgraded),
        Downgrade::Unsupported,
    ))
    .await;
    let cache = EraCache::new();
    connect(request(&server.url(), &cache)).await;
    downgraded.store(true, Ordering::Relaxed);
    let before = server.recorded().len();

    let client = McpClient::builder(
        EstablishBuilder::new(Connector::new()).build(),
        request(&server.url(), &cache),
    )
    .build();
    let error = watchdog(
        LIMIT,
        client.send(TaskCall::new(CallTool::new("t", &json!({})))),
    )
    .await
    .unwrap_err();
    let mcp_connect::client::ClientError::Call { error, .. } = error else {
        panic!("{error:?}")
    };
    assert!(matches!(
        error.kind(),
        ErrorKind::Version(VersionError::RememberedRefused)
    ));
    let methods: Vec<String> = server.methods().into_iter().skip(before).collect();
    assert_eq!(methods, ["tools/call"], "sent once");
}
