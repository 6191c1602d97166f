//! The era cache: a second connection skips what the first learnt; a stale
//! verdict is dropped and the full ladder runs once; a pin always wins.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::sse_server::{SseBehaviour, SseServer};
use crate::support::{error, legacy, watchdog, Script, ScriptServer};
use mcp_connect::era_cache::{EraCache, Verdict};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::transport::{HttpClient, StdioCommand, TransportKind};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

/// A connector whose HTTP requests are counted.
fn counting_connector() -> (Connector, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let client = HttpClient::default_client().counting(Arc::clone(&count));
    (Connector::with_client(client), count)
}

async fn establish_counting(url: &str, cache: &EraCache) -> (TransportKind, u64) {
    let (connector, count) = counting_connector();
    let request = ConnectRequest::http(url)
        .unwrap()
        .with_era_cache(cache.clone());
    let session = watchdog(LIMIT, connector.connect(request)).await.unwrap();
    (session.transport_kind(), count.load(Ordering::Relaxed))
}

#[tokio::test]
async fn second_connection_to_an_sse_only_server_skips_the_doomed_posts() {
    let server = SseServer::start(SseBehaviour::default()).await;
    let cache = EraCache::new();
    let first = establish_counting(&server.url(), &cache).await;
    let second = establish_counting(&server.url(), &cache).await;
    assert_eq!(
        first,
        (TransportKind::Sse, 5),
        "discover, initialize, GET, initialize, initialized"
    );
    assert_eq!(
        second,
        (TransportKind::Sse, 3),
        "GET, initialize, initialized"
    );
    let target = ConnectRequest::http(&server.url())
        .unwrap()
        .target()
        .clone();
    assert_eq!(
        cache.get(&target),
        Some(Verdict::Legacy {
            transport: TransportKind::Sse,
            version: ProtocolVersion::V2025_11_25
        })
    );
}

#[tokio::test]
async fn second_connection_to_a_legacy_streamable_server_skips_the_probe() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Json(400, error(r, -32000, None)),
        _ => legacy(r),
    })
    .await;
    let cache = EraCache::new();
    assert_eq!(
        establish_counting(&server.url(), &cache).await,
        (TransportKind::StreamableHttp, 3)
    );
    assert_eq!(
        establish_counting(&server.url(), &cache).await,
        (TransportKind::StreamableHttp, 2)
    );
    assert_eq!(
        server.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "initialize",
            "notifications/initialized"
        ]
    );
}

#[tokio::test]
async fn a_stale_verdict_is_dropped_and_the_full_ladder_runs_once_on_a_fresh_transport() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Json(
            200,
            crate::support::result(
                r,
                json!({ "supportedVersions": ["2026-07-28"], "capabilities": {} }),
            ),
        ),
        _ => legacy(r),
    })
    .await;
    let target = ConnectRequest::http(&server.url())
        .unwrap()
        .target()
        .clone();
    let cache = EraCache::new();
    // The server was upgraded since: the cache still says SSE.
    cache.insert(
        &target,
        Verdict::Legacy {
            transport: TransportKind::Sse,
            version: ProtocolVersion::V2024_11_05,
        },
    );
    let (kind, _) = establish_counting(&server.url(), &cache).await;
    assert_eq!(kind, TransportKind::StreamableHttp);
    assert_eq!(
        cache.get(&target),
        Some(Verdict::Modern {
            version: ProtocolVersion::V2026_07_28,
            discover: None,
        })
    );
    assert_eq!(server.methods(), ["GET", "server/discover"]);
}

#[tokio::test]
async fn an_explicit_pin_wins_over_the_cache_and_leaves_it_alone() {
    let server = ScriptServer::start(legacy).await;
    let target = ConnectRequest::http(&server.url())
        .unwrap()
        .target()
        .clone();
    let cache = EraCache::new();
    let modern = Verdict::Modern {
        version: ProtocolVersion::V2026_07_28,
        discover: None,
    };
    cache.insert(&target, modern.clone());
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_era_cache(cache.clone())
        .with_pin(ProtocolVersion::V2025_06_18);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_06_18);
    assert_eq!(
        server.methods(),
        ["initialize", "notifications/initialized"]
    );
    assert_eq!(cache.get(&target), Some(modern));
}

#[tokio::test]
async fn second_stdio_connection_skips_the_probe_that_kills_old_servers() {
    let log = std::env::temp_dir().join(format!("mcp-connect-cache-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/stdio_server.py"
    );
    let command = StdioCommand::new("python3").args([
        script.as_ref(),
        "exit-on-discover".as_ref(),
        log.as_os_str(),
    ]);
    let cache = EraCache::new();
    for _ in 0..2 {
        let request = ConnectRequest::stdio(command.clone()).with_era_cache(cache.clone());
        let session = watchdog(LIMIT, Connector::new().connect(request))
            .await
            .unwrap();
        session.close().await.unwrap();
    }
    let spawns = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(
        spawns, 3,
        "two for the first connection (probe, then initialize), one for the second"
    );
}
