//! Issue 29, item 1 (SEP-2549): a 2026-07-28 session answers a cacheable
//! request from the response cache while the server says it is fresh, per
//! server and authorization context, invalidated by the server's change
//! notifications; a legacy session ignores the hints.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{legacy, result, watchdog, Recorded, Script, ScriptServer};
use mcp_connect::protocol::Era;
use mcp_connect::protocol::ReadResource;
use mcp_connect::protocol::{ListTools, RawRequest};
use mcp_connect::response_cache::{CacheMode, ResponseCache};
use mcp_connect::session::Call;
use mcp_connect::session::RequestOptions;
use mcp_connect::store::MemoryResponseStore;
use mcp_connect::{ConnectRequest, Connector, Session};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(10);

/// How the scripted server marks its results.
#[derive(Clone)]
struct Hints {
    ttl_ms: i64,
    scope: &'static str,
}

fn tools() -> Value {
    json!([
        { "name": "route", "inputSchema": { "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" }
        }}},
        { "name": "echo", "inputSchema": { "type": "object" } }
    ])
}

/// A 2026-07-28 server whose listings and reads carry `hints`; its
/// `tools/call` answer streams the notification `notify` first, when set.
/// Every tools/list answer names how many came before it.
fn modern(
    hints: Hints,
    notify: Option<Value>,
) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    let listed = Arc::new(AtomicU64::new(0));
    move |request: &Recorded| {
        let hinted = |mut body: Value| {
            body["ttlMs"] = hints.ttl_ms.into();
            body["cacheScope"] = hints.scope.into();
            Script::Json(200, result(request, body))
        };
        match request.rpc_method() {
            "server/discover" => Script::Json(
                200,
                result(
                    request,
                    json!({ "supportedVersions": ["2026-07-28"], "capabilities": {
                        "tools": { "listChanged": true }, "resources": {}
                    }}),
                ),
            ),
            "tools/list" => {
                let n = listed.fetch_add(1, Ordering::Relaxed);
                hinted(json!({ "tools": tools(), "_meta": { "listing": n } }))
            }
            "resources/read" => hinted(json!({ "contents": [{
                "uri": request.body["params"]["uri"], "text": "x"
            }]})),
            "tools/call" => {
                let answer = result(request, json!({ "resultType": "complete", "content": [] }));
                match &notify {
                    Some(notification) => Script::Sse(vec![
                        format!("data: {notification}\n\n"),
                        format!("data: {answer}\n\n"),
                    ]),
                    None => Script::Json(200, answer),
                }
            }
            _ => Script::Json(200, crate::support::error(request, -32601, None)),
        }
    }
}

fn public(ttl_ms: i64) -> Hints {
    Hints {
        ttl_ms,
        scope: "public",
    }
}

async fn connect(url: &str, cache: &ResponseCache) -> Session {
    connect_as(url, cache, None).await
}

async fn connect_as(url: &str, cache: &ResponseCache, token: Option<&str>) -> Session {
    let mut request = ConnectRequest::http(url)
        .unwrap()
        .with_response_cache(cache.clone());
    if let Some(token) = token {
        request = request
            .with_header("authorization", &format!("Bearer {token}"))
            .unwrap();
    }
    watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap()
}

/// One listing on a new session with `token`.
async fn list_as(url: &str, cache: &ResponseCache, token: &str) {
    connect_as(url, cache, Some(token))
        .await
        .list_tools()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_second_listing_within_the_ttl_sends_nothing() {
    let server = ScriptServer::start(modern(public(60_000), None)).await;
    let cache = ResponseCache::new();
    let session = connect(&server.url(), &cache).await;
    assert_eq!(session.era(), Era::Modern);
    let first = session.list_tools().await.unwrap();
    let sent = session.stats().http_requests;
    let second = session.list_tools().await.unwrap();
    assert_eq!(
        session.stats().http_requests,
        sent,
        "the second listing went out"
    );
    assert_eq!(server.count("tools/list"), 1);
    assert_eq!(first.tools.len(), second.tools.len());
    // Another session of the same server and context reads it too.
    let other = connect(&server.url(), &cache).await;
    other.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 1);
}

#[tokio::test]
async fn refresh_asks_the_server_and_bypass_neither_reads_nor_writes() {
    let server = ScriptServer::start(modern(public(60_000), None)).await;
    let store = Arc::new(MemoryResponseStore::default());
    let cache = ResponseCache::with_store(Arc::clone(&store));
    let session = connect(&server.url(), &cache).await;
    let bypass = RequestOptions::new().with_cache(CacheMode::Bypass);
    session
        .send(Call::new(ListTools::all()).with_options(bypass))
        .await
        .unwrap();
    assert!(store.is_empty(), "bypass wrote the cache");
    session.list_tools().await.unwrap();
    session.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 2);
    let refresh = RequestOptions::new().with_cache(CacheMode::Refresh);
    let refreshed = session
        .send(Call::new(RawRequest::new("tools/list", None)).with_options(refresh))
        .await
        .unwrap();
    let refreshed: Value = serde_json::from_str(refreshed.get()).unwrap();
    assert_eq!(server.count("tools/list"), 3);
    assert_eq!(refreshed["_meta"]["listing"], 2);
    // The refreshed answer is what the cache serves now.
    let served = session.send(RawRequest::new("tools/list", None)).await;
    let served: Value = serde_json::from_str(served.unwrap().get()).unwrap();
    assert_eq!(served["_meta"]["listing"], 2);
    assert_eq!(server.count("tools/list"), 3);
}

#[tokio::test]
async fn a_listing_goes_out_again_after_its_ttl_and_never_for_a_zero_one() {
    let server = ScriptServer::start(modern(public(150), None)).await;
    let cache = ResponseCache::new();
    let session = connect(&server.url(), &cache).await;
    session.list_tools().await.unwrap();
    session.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 1);
    tokio::time::sleep(Duration::from_millis(250)).await;
    session.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 2);

    let zero = ScriptServer::start(modern(public(0), None)).await;
    let session = connect(&zero.url(), &cache).await;
    session.list_tools().await.unwrap();
    session.list_tools().await.unwrap();
    assert_eq!(zero.count("tools/list"), 2);
}

#[tokio::test]
async fn list_changed_invalidates_the_listing() {
    let changed = json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" });
    let server = ScriptServer::start(modern(public(60_000), Some(changed))).await;
    let cache = ResponseCache::new();
    let session = connect(&server.url(), &cache).await;
    session.list_tools().await.unwrap();
    session.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 1);
    session.call_tool("echo", &json!({})).await.unwrap();
    session.list_tools().await.unwrap();
    assert_eq!(
        server.count("tools/list"),
        2,
        "list_changed did not invalidate"
    );
}

/// A store whose invalidations take their time (a shared store under
/// load), counting them.
struct SlowInvalidations {
    inner: MemoryResponseStore,
    invalidations: AtomicU64,
}

impl mcp_connect::store::ResponseStore for SlowInvalidations {
    fn get<'a>(
        &'a self,
        key: &'a mcp_connect::store::CacheKey,
    ) -> futures_util::future::BoxFuture<'a, Option<mcp_connect::store::CachedResult>> {
        self.inner.get(key)
    }

    fn put(
        &self,
        key: mcp_connect::store::CacheKey,
        value: mcp_connect::store::CachedResult,
    ) -> futures_util::future::BoxFuture<'_, ()> {
        self.inner.put(key, value)
    }

    fn invalidate<'a>(
        &'a self,
        server: &'a str,
        what: &'a mcp_connect::store::Invalidation,
    ) -> futures_util::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            self.invalidations.fetch_add(1, Ordering::Relaxed);
            self.inner.invalidate(server, what).await;
        })
    }
}

/// Issue 40, items 8 and 11: with a store whose invalidation is slow, a
/// listing made on hearing `list_changed` is fresh all the same (the
/// entry is passed over until the store has dropped it), and a flood of
/// notifications makes at most two store invalidations in flight, not one
/// per notification.
#[tokio::test(start_paused = true)]
async fn a_slow_invalidation_never_serves_the_stale_listing_and_floods_coalesce() {
    let changed = json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" });
    let server = ScriptServer::start(modern(public(60_000), Some(changed))).await;
    let store = Arc::new(SlowInvalidations {
        inner: MemoryResponseStore::default(),
        invalidations: AtomicU64::new(0),
    });
    let cache = ResponseCache::with_store(Arc::clone(&store));
    let session = connect(&server.url(), &cache).await;
    session.list_tools().await.unwrap();
    session.call_tool("echo", &json!({})).await.unwrap();
    session.list_tools().await.unwrap();
    assert_eq!(
        server.count("tools/list"),
        2,
        "the stale listing was served"
    );
    // Fifty notifications while the first invalidation runs.
    for _ in 0..50 {
        session.call_tool("echo", &json!({})).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let ran = store.invalidations.load(Ordering::Relaxed);
    assert!(
        (1..=3).contains(&ran),
        "{ran} store invalidations for 51 notifications"
    );
    // Settled: the cache serves again.
    session.list_tools().await.unwrap();
    let listed = server.count("tools/list");
    session.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), listed);
}

#[tokio::test]
async fn resources_updated_invalidates_that_resource_only() {
    let updated = json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated",
        "params": { "uri": "file:///a" } });
    let server = ScriptServer::start(modern(public(60_000), Some(updated))).await;
    let cache = ResponseCache::new();
    let session = connect(&server.url(), &cache).await;
    for uri in ["file:///a", "file:///b", "file:///a", "file:///b"] {
        session.send(ReadResource::new(uri)).await.unwrap();
    }
    assert_eq!(server.count("resources/read"), 2);
    session.call_tool("echo", &json!({})).await.unwrap();
    session.send(ReadResource::new("file:///a")).await.unwrap();
    session.send(ReadResource::new("file:///b")).await.unwrap();
    assert_eq!(server.count("resources/read"), 3);
}

#[tokio::test]
async fn a_private_entry_never_serves_another_token() {
    let private = Hints {
        ttl_ms: 60_000,
        scope: "private",
    };
    let server = ScriptServer::start(modern(private, None)).await;
    let cache = ResponseCache::new();
    let alice = connect_as(&server.url(), &cache, Some("alice-token")).await;
    alice.list_tools().await.unwrap();
    let bob = connect_as(&server.url(), &cache, Some("bob-token")).await;
    bob.list_tools().await.unwrap();
    assert_eq!(
        server.count("tools/list"),
        2,
        "bob was served alice's entry"
    );
    let anonymous = connect_as(&server.url(), &cache, None).await;
    anonymous.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 3);
    // The same token again is the same context.
    let alice_again = connect_as(&server.url(), &cache, Some("alice-token")).await;
    alice_again.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 3);

    // A result without a scope is private too.
    let unscoped = Hints {
        ttl_ms: 60_000,
        scope: "",
    };
    let server = ScriptServer::start(modern(unscoped, None)).await;
    list_as(&server.url(), &cache, "alice-token").await;
    list_as(&server.url(), &cache, "bob-token").await;
    assert_eq!(server.count("tools/list"), 2);

    // A public one serves every token.
    let server = ScriptServer::start(modern(public(60_000), None)).await;
    list_as(&server.url(), &cache, "alice-token").await;
    list_as(&server.url(), &cache, "bob-token").await;
    assert_eq!(server.count("tools/list"), 1);
}

/// Issue 40, item 1: a key in the query (`?api_key=`) selects a principal
/// (or a server): neither a private nor a public entry crosses to another
/// query, and the same query is served again.
#[tokio::test]
async fn a_key_in_the_query_is_another_principal() {
    for scope in ["private", "public"] {
        let hints = Hints {
            ttl_ms: 60_000,
            scope,
        };
        let server = ScriptServer::start(modern(hints, None)).await;
        let cache = ResponseCache::new();
        let url = |key: &str| format!("{}?api_key={key}", server.url());
        connect(&url("alice"), &cache)
            .await
            .list_tools()
            .await
            .unwrap();
        connect(&url("bob"), &cache)
            .await
            .list_tools()
            .await
            .unwrap();
        assert_eq!(
            server.count("tools/list"),
            2,
            "bob's key was served alice's {scope} listing"
        );
        connect(&url("alice"), &cache)
            .await
            .list_tools()
            .await
            .unwrap();
        assert_eq!(server.count("tools/list"), 2, "{scope}");
    }
}

#[tokio::test]
async fn a_new_sessions_first_call_sends_the_cached_tools_param_headers() {
    let server = ScriptServer::start(modern(public(60_000), None)).await;
    let cache = ResponseCache::new();
    connect(&server.url(), &cache)
        .await
        .list_tools()
        .await
        .unwrap();
    let fresh = connect(&server.url(), &cache).await;
    fresh
        .call_tool("route", &json!({ "region": "eu-west" }))
        .await
        .unwrap();
    assert_eq!(server.count("tools/list"), 1);
    let calls = server.recorded_for("tools/call");
    assert_eq!(
        calls[0].header("mcp-param-region"),
        Some("eu-west"),
        "the cached declarations were not used"
    );
}

#[tokio::test]
async fn a_legacy_session_ignores_the_hints() {
    let server = ScriptServer::start(|request: &Recorded| match request.rpc_method() {
        "server/discover" => Script::Json(400, crate::support::error(request, -32601, None)),
        "tools/list" => Script::Json(
            200,
            result(
                request,
                json!({ "tools": [], "ttlMs": 60_000, "cacheScope": "public" }),
            ),
        ),
        _ => legacy(request),
    })
    .await;
    let cache = ResponseCache::new();
    let session = connect(&server.url(), &cache).await;
    assert_eq!(session.era(), Era::Legacy);
    session.list_tools().await.unwrap();
    session.list_tools().await.unwrap();
    assert_eq!(server.count("tools/list"), 2);
}

#[tokio::test]
async fn a_header_mismatch_lists_past_the_cache() {
    // The cached listing declares no header; the server has since added
    // one and refuses calls without it.
    let declared = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = ScriptServer::start({
        let declared = Arc::clone(&declared);
        move |request: &Recorded| {
            let now = declared.load(Ordering::Relaxed);
            match request.rpc_method() {
                "tools/list" => {
                    let schema = if now {
                        json!({ "type": "object", "properties": {
                            "region": { "type": "string", "x-mcp-header": "Region" } } })
                    } else {
                        json!({ "type": "object" })
                    };
                    Script::Json(
                        200,
                        result(
                            request,
                            json!({ "tools": [{ "name": "route", "inputSchema": schema }],
                                "ttlMs": 60_000, "cacheScope": "public" }),
                        ),
                    )
                }
                "tools/call" if now && request.header("mcp-param-region").is_none() => {
                    Script::Json(400, crate::support::error(request, -32020, None))
                }
                _ => modern(public(60_000), None)(request),
            }
        }
    })
    .await;
    let cache = ResponseCache::new();
    let session = connect(&server.url(), &cache).await;
    session.list_tools().await.unwrap();
    declared.store(true, Ordering::Relaxed);
    session
        .call_tool("route", &json!({ "region": "eu" }))
        .await
        .expect("relisted from the server and sent again");
    assert_eq!(server.count("tools/list"), 2);
    let calls = server.recorded_for("tools/call");
    assert_eq!(calls.last().unwrap().header("mcp-param-region"), Some("eu"));
}
