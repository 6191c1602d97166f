//! Issue 31: replicas sharing tokens through a real redis-server (Debian's,
//! started here with a password on a loopback port; CI installs it, and
//! these tests fail without it). Eight replicas (each its own
//! `Authorization`, HTTP client and Redis connection, sharing nothing but
//! Redis) against an authorization server that rotates refresh tokens and
//! revokes the grant on reuse; a replica started later; Redis killed and
//! back; Redis answering garbage; and what Redis holds after a run.
//!
//! `cargo test -p mcp-connect-cli --test installed -- --ignored
//! --test-threads=1 redis::` (ignored by the plain test command, which needs
//! nothing installed; one at a time: the outage soak and the eight
//! processes load both cores of a small machine, and every store operation
//! has a 500 ms bound).

use crate::support;

mod replicas;

use std::sync::Arc;
use std::time::Duration;

use mcp_connect::auth::Authorization;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::store::redis::{RedisStores, RedisTokenStore, SealingKey};
use mcp_connect::store::{LeaseKind, TokenKey, TokenStore};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

use support::oauth::{call_together, grants, key, person, rotating, start, As, TOKEN};
use support::redis::{Redis, PASSWORD};
use support::{watchdog, ScriptServer};

const LIMIT: Duration = Duration::from_secs(60);
const REPLICAS: usize = 8;
const KEY: [u8; 32] = [42; 32];

fn stores(redis: &Redis) -> RedisStores {
    RedisStores::new(&redis.url(), "app", SealingKey::from_bytes(&KEY).unwrap()).unwrap()
}

fn store(redis: &Redis) -> RedisTokenStore {
    stores(redis).tokens()
}

fn replica(server: &ScriptServer, redis: &Redis) -> ConnectRequest {
    let auth =
        Authorization::client_credentials("svc", "canary-secret").with_token_store(store(redis));
    ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_authorization(auth)
}

/// Eight replicas connected, each its own `Authorization` and store.
async fn replicas(server: &ScriptServer, redis: &Redis) -> Vec<mcp_connect::Session> {
    let mut sessions = Vec::new();
    for _ in 0..REPLICAS {
        sessions.push(
            Connector::new()
                .connect(replica(server, redis))
                .await
                .unwrap(),
        );
    }
    sessions
}

/// Done when, item 1 and 2: eight replicas refused together make exactly
/// one refresh; a replica started after the first authorized makes no
/// authorization request at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn eight_replicas_sharing_redis_refresh_once_and_later_ones_ask_nothing() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let (server, rotation, expired) = rotating().await;
        let sessions = replicas(&server, &redis).await;
        assert_eq!(
            grants(&server),
            ["client_credentials"],
            "the replicas after the first asked the authorization server nothing"
        );

        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            call_together(&sessions).await,
            REPLICAS,
            "every call went through"
        );
        let books = rotation.books();
        assert_eq!(books.refreshed, 1, "exactly one refresh reached the server");
        assert_eq!(books.invalid_grants, 0);
        assert!(!books.revoked);
        assert_eq!(grants(&server), ["client_credentials", "refresh_token"]);
    })
    .await;
}

/// The same eight with a store each: the failure Redis prevents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn eight_replicas_with_their_own_stores_lose_the_grant() {
    watchdog(LIMIT, async {
        let (server, rotation, expired) = rotating().await;
        let first = Arc::new(mcp_connect::store::MemoryTokenStore::new());
        let auth = Authorization::client_credentials("svc", "canary-secret")
            .with_token_store(Arc::clone(&first));
        let request = |auth: Authorization| {
            ConnectRequest::http(&server.url())
                .unwrap()
                .with_pin(ProtocolVersion::V2025_11_25)
                .with_authorization(auth)
        };
        let mut sessions = vec![Connector::new().connect(request(auth)).await.unwrap()];
        let copied = first.load(&key(&server, "svc")).await.unwrap().unwrap();
        for _ in 1..REPLICAS {
            let own = Arc::new(mcp_connect::store::MemoryTokenStore::new());
            own.save(&key(&server, "svc"), &copied).await.unwrap();
            let auth =
                Authorization::client_credentials("svc", "canary-secret").with_token_store(own);
            sessions.push(Connector::new().connect(request(auth)).await.unwrap());
        }
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        call_together(&sessions).await;
        let books = rotation.books();
        assert!(books.invalid_grants >= 1 && books.revoked, "{books:?}");
    })
    .await;
}

/// Item 2: two stores on one Redis see each other's tokens; the
/// compare-and-set refuses stale tokens; a lease has one holder at a time
/// and only its holder frees it.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn the_store_shares_tokens_compares_before_it_sets_and_leases_once() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let (a, b) = (store(&redis), store(&redis));
        let resource = &TokenKey::new("https://mcp.example/mcp", "https://as.example", "svc");
        assert_eq!(a.load(resource).await.unwrap(), None);
        let tokens = |access: &str, refresh: &str| -> mcp_connect::store::Tokens {
            serde_json::from_value(json!({ "access_token": access, "refresh_token": refresh }))
                .unwrap()
        };
        a.save(resource, &tokens("at-1", "rt-1")).await.unwrap();
        assert_eq!(
            b.load(resource).await.unwrap(),
            Some(tokens("at-1", "rt-1"))
        );

        assert!(b
            .replace(resource, Some("rt-1"), &tokens("at-2", "rt-2"))
            .await
            .unwrap());
        assert!(
            !a.replace(resource, Some("rt-1"), &tokens("at-3", "rt-3"))
                .await
                .unwrap(),
            "a holder late with the old refresh token does not overwrite"
        );
        assert_eq!(
            a.load(resource).await.unwrap(),
            Some(tokens("at-2", "rt-2"))
        );

        let lease = a
            .lease(resource, LeaseKind::Refresh, Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap();
        assert!(b
            .lease(resource, LeaseKind::Refresh, Duration::from_secs(5))
            .await
            .unwrap()
            .is_none());
        b.release(
            resource,
            LeaseKind::Refresh,
            &mcp_connect::store::Lease("not-the-holder".into()),
        )
        .await
        .unwrap();
        assert!(b
            .lease(resource, LeaseKind::Refresh, Duration::from_secs(5))
            .await
            .unwrap()
            .is_none());
        a.release(resource, LeaseKind::Refresh, &lease)
            .await
            .unwrap();
        assert!(b
            .lease(resource, LeaseKind::Refresh, Duration::from_secs(5))
            .await
            .unwrap()
            .is_some());

        // A lease whose holder died ends by itself.
        let short = &TokenKey::new("https://short.example/mcp", "https://as.example", "svc");
        a.lease(short, LeaseKind::Refresh, Duration::from_millis(50))
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(b
            .lease(short, LeaseKind::Refresh, Duration::from_secs(5))
            .await
            .unwrap()
            .is_some());
    })
    .await;
}

/// Item 2, keys: entries and leases are namespaced by the prefix, then by
/// issuer, client, principal and resource, each hashed. Tokens differing in
/// any part never serve each other, one key's lease holds up no other, and
/// one issuer's keys are listed by their leading segment.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn keys_are_namespaced_by_issuer_client_principal_and_resource() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let shared = store(&redis);
        let base = TokenKey::new("https://mcp.example/mcp", "https://as.example", "svc");
        let keys = [
            base.clone(),
            base.clone().for_principal("alice"),
            base.clone().for_principal("bob"),
            TokenKey::new("https://mcp.example/mcp", "https://as.example", "other"),
            TokenKey::new("https://mcp.example/mcp", "https://other-as.example", "svc"),
            TokenKey::new("https://other.example/mcp", "https://as.example", "svc"),
        ];
        for (n, key) in keys.iter().enumerate() {
            let tokens: mcp_connect::store::Tokens =
                serde_json::from_value(json!({ "access_token": format!("at-{n}") })).unwrap();
            shared.save(key, &tokens).await.unwrap();
        }
        for (n, key) in keys.iter().enumerate() {
            let loaded = shared.load(key).await.unwrap().unwrap();
            assert_eq!(loaded.access_token(), format!("at-{n}"), "{key:?}");
        }
        let listed = redis.cli(&["--scan", "--pattern", "app:tokens:*"]);
        assert_eq!(listed.lines().count(), keys.len());
        for line in listed.lines() {
            let segments: Vec<_> = line.split(':').collect();
            assert_eq!(segments.len(), 6, "prefix, kind and four parts: {line}");
            assert!(segments[2..].iter().all(|s| s.len() == 32));
        }
        // The first segment is the issuer's: five keys share one, the
        // other issuer's key has its own.
        let mut per_issuer = std::collections::HashMap::<_, usize>::new();
        for line in listed.lines() {
            *per_issuer
                .entry(line.split(':').nth(2).unwrap())
                .or_default() += 1;
        }
        let mut counts: Vec<_> = per_issuer.into_values().collect();
        counts.sort_unstable();
        assert_eq!(counts, [1, keys.len() - 1]);

        // Leases: per key and per kind.
        let lasting = Duration::from_secs(5);
        let alice = &keys[1];
        assert!(shared
            .lease(alice, LeaseKind::Refresh, lasting)
            .await
            .unwrap()
            .is_some());
        assert!(shared
            .lease(alice, LeaseKind::Refresh, lasting)
            .await
            .unwrap()
            .is_none());
        assert!(shared
            .lease(&keys[2], LeaseKind::Refresh, lasting)
            .await
            .unwrap()
            .is_some());
        assert!(shared
            .lease(alice, LeaseKind::Authorization, lasting)
            .await
            .unwrap()
            .is_some());

        // End to end: two principals of one service on one server each
        // authorize for themselves; neither is handed the other's token.
        let server = start(As::default()).await;
        for principal in ["alice", "bob", "alice"] {
            let auth = Authorization::client_credentials("svc", "canary-secret")
                .for_principal(principal)
                .with_token_store(store(&redis));
            Connector::new()
                .connect(
                    ConnectRequest::http(&server.url())
                        .unwrap()
                        .with_pin(ProtocolVersion::V2025_11_25)
                        .with_authorization(auth),
                )
                .await
                .unwrap();
        }
        assert_eq!(
            grants(&server),
            ["client_credentials", "client_credentials"],
            "alice once, bob once, alice's second run from the store"
        );
    })
    .await;
}

/// Item 3, the person: four replicas (each its own store over one Redis)
/// that need a new authorization at the same moment ask the person once,
/// register one client and make one authorization; the others wait for
/// the tokens through Redis and use them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn one_person_authorizes_for_the_fleet() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let server = start(As::default()).await;
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let connects = (0..4).map(|_| {
            let auth = Authorization::authorization_code(person(&asked, false))
                .with_token_store(store(&redis));
            let request = ConnectRequest::http(&server.url())
                .unwrap()
                .with_pin(ProtocolVersion::V2025_11_25)
                .with_authorization(auth);
            async move { Connector::new().connect(request).await }
        });
        let sessions = futures_util::future::join_all(connects).await;
        assert!(
            sessions.iter().all(Result::is_ok),
            "every replica connected"
        );
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one person"
        );
        let at = |route: &str| {
            server
                .recorded()
                .iter()
                .filter(|r| r.route() == route)
                .count()
        };
        assert_eq!(at("/as/authorize"), 1, "one authorization");
        assert_eq!(at("/as/register"), 1, "one registration");
    })
    .await;
}

/// Item 4: Redis killed mid-run: calls go on with the tokens the replicas
/// hold, nothing waits past its bound, no token is lost; Redis back, the
/// store works again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn with_redis_down_the_replicas_go_on_and_the_store_comes_back() {
    watchdog(LIMIT, async {
        let mut redis = Redis::start();
        let (server, rotation, expired) = rotating().await;
        let sessions = replicas(&server, &redis).await;
        // A store already connected before the crash.
        let kept = store(&redis);
        kept.load(&key(&server, "svc")).await.unwrap();
        redis.kill();
        let started = std::time::Instant::now();
        assert_eq!(
            call_together(&sessions).await,
            REPLICAS,
            "Redis down fails no call"
        );

        // Refused with Redis down: each refreshes on its own (the store is
        // passed over within its bound) and the call still goes through.
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        let session = &sessions[0];
        session.call_tool("x", &json!({})).await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "nothing waited for Redis"
        );

        assert!(
            kept.load(&key(&server, "svc")).await.is_err(),
            "down is an error"
        );
        redis.restart();
        // The restarted Redis is empty; the connected store reconnects,
        // and the tokens the first replica obtained while it was down are
        // written back: the rotated refresh token is not lost.
        let mut back = None;
        for _ in 0..100 {
            if let Ok(Some(tokens)) = kept.load(&key(&server, "svc")).await {
                back = Some(tokens);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let back = back.expect("the store came back with the tokens written back");
        assert_eq!(
            back.refresh_token(),
            Some(rotation.books().current.as_str())
        );
    })
    .await;
}

/// Item 4, write-back: writes that failed while Redis was down go in once
/// it answers again, but never over tokens obtained after them.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_write_back_goes_in_but_never_over_newer_tokens() {
    watchdog(LIMIT, async {
        let mut redis = Redis::start();
        let (late, other) = (store(&redis), store(&redis));
        let tokens = |access: &str| -> mcp_connect::store::Tokens {
            serde_json::from_value(json!({ "access_token": access, "refresh_token": access }))
                .unwrap()
        };
        let contested = TokenKey::new("https://a.example/mcp", "https://as.example", "svc");
        let alone = TokenKey::new("https://b.example/mcp", "https://as.example", "svc");
        redis.kill();
        late.save(&contested, &tokens("older")).await.unwrap_err();
        late.replace(&alone, None, &tokens("kept"))
            .await
            .unwrap_err();
        redis.restart();
        // Another replica stores newer tokens before the write-back runs.
        other.save(&contested, &tokens("newer")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let loaded = |key| {
            let other = &other;
            async move {
                other
                    .load(key)
                    .await
                    .unwrap()
                    .map(|t| t.access_token().to_owned())
            }
        };
        assert_eq!(loaded(&contested).await.as_deref(), Some("newer"));
        assert_eq!(loaded(&alone).await.as_deref(), Some("kept"));
    })
    .await;
}

/// Item 4, slow: a Redis that takes connections and answers nothing
/// (stopped with SIGSTOP). Eight replicas keep calling with the tokens
/// they hold; one refused meanwhile refreshes on its own, its store
/// operations each given up at their 500 ms bound; once Redis goes on, the
/// tokens that replica obtained are written back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_stalled_redis_holds_no_call_past_its_bound() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let (server, rotation, expired) = rotating().await;
        let sessions = replicas(&server, &redis).await;
        redis.freeze();
        assert_eq!(call_together(&sessions).await, REPLICAS);
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        let started = std::time::Instant::now();
        sessions[0].call_tool("x", &json!({})).await.unwrap();
        let took = started.elapsed();
        // A read and a write, 500 ms each at most, plus the HTTP.
        assert!(took < Duration::from_secs(3), "took {took:?}");
        redis.thaw();
        let kept = store(&redis);
        let mut written_back = None;
        for _ in 0..100 {
            if let Ok(Some(tokens)) = kept.load(&key(&server, "svc")).await {
                if tokens.refresh_token() == Some(rotation.books().current.as_str()) {
                    written_back = Some(tokens);
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(written_back.is_some(), "the refreshed tokens reached Redis");
        assert_eq!(rotation.books().invalid_grants, 0);
    })
    .await;
}

/// Item 4, "one diagnostic event": an outage is one warning per store,
/// however many operations fail in it, and its end one info event. The
/// token store fails a read and a write in one refresh; the era cache fails
/// three lookups; each warns once, and the era cache says once that Redis
/// answers again.
#[test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
fn an_outage_is_one_warning_per_store_and_one_event_when_it_ends() {
    let (capture, _guard, runtime) = support::capture::on_this_thread();
    runtime.block_on(watchdog(LIMIT, async {
        let mut redis = Redis::start();
        let (server, _rotation, expired) = rotating().await;
        let session = Connector::new()
            .connect(replica(&server, &redis))
            .await
            .unwrap();
        let cache = eras(&redis);
        let request = ConnectRequest::http(&server.url()).unwrap();
        redis.kill();
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        session.call_tool("x", &json!({})).await.unwrap();
        for _ in 0..3 {
            assert!(cache.lookup(request.target()).await.is_none());
        }
        redis.restart();
        assert!(cache.lookup(request.target()).await.is_none());
    }));
    let traced = capture.text();
    let count = |needle: &str| traced.matches(needle).count();
    assert_eq!(count("store=\"tokens\" operation=\"read\""), 1, "{traced}");
    assert_eq!(
        count("the store failed; going on"),
        2,
        "one per store: {traced}"
    );
    assert!(count("the store failed again") >= 3, "{traced}");
    assert_eq!(count("the store answers again"), 1, "{traced}");
}

/// Item 4: a Redis that answers something else than what was stored is a
/// typed store failure, never a panic, and authorization goes on.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn garbage_in_redis_is_a_store_error_not_a_panic() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let server = start(As::default()).await;
        let resource = server.url();
        let store = store(&redis);
        let stored = key(&server, "svc");
        store
            .save(
                &stored,
                &serde_json::from_value(json!({ "access_token": "x" })).unwrap(),
            )
            .await
            .unwrap();
        let keys = redis.cli(&["--scan", "--pattern", "app:tokens:*"]);
        let key = keys.lines().next().expect("the tokens' key");
        redis.cli(&["HSET", key, "v", "not sealed at all"]);
        assert!(
            store.load(&stored).await.is_err(),
            "garbage is a StoreError"
        );
        redis.cli(&["DEL", key]);
        redis.cli(&["SET", key, "a string where a hash was"]);
        assert!(
            store.load(&stored).await.is_err(),
            "the wrong type is a StoreError"
        );
        // The establishment authorizes regardless.
        Connector::new()
            .connect(
                ConnectRequest::http(&resource)
                    .unwrap()
                    .with_pin(ProtocolVersion::V2025_11_25)
                    .with_authorization(
                        Authorization::client_credentials("svc", "canary-secret")
                            .with_token_store(store),
                    ),
            )
            .await
            .unwrap();
    })
    .await;
}

/// Done when, canary: after a run Redis holds no token, refresh token,
/// secret or password in clear; no log line or `Debug` shows them either.
#[test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
fn redis_holds_nothing_in_clear_and_nothing_is_logged() {
    support::capture::keep_every_call_site_open();
    let capture = support::capture::Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let redis = Redis::start();
    let printed = runtime.block_on(async {
        let (server, _rotation, expired) = rotating().await;
        let session = Connector::new()
            .connect(replica(&server, &redis))
            .await
            .unwrap();
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        session.call_tool("x", &json!({})).await.unwrap();
        format!("{:?} {:?}", store(&redis), replica(&server, &redis))
    });
    let held = redis.dump();
    assert!(
        held.contains("app:tokens:"),
        "the tokens are in Redis: {held}"
    );
    let traced = capture.text();
    for canary in [
        TOKEN,
        "canary-refreshed-token",
        "canary-refresh",
        "canary-secret",
        PASSWORD,
    ] {
        assert!(!held.contains(canary), "{canary} in Redis: {held}");
        assert!(!traced.contains(canary), "{canary} traced");
        assert!(!printed.contains(canary), "{canary} printed: {printed}");
    }
}

/// An `mcp-connect` run as a service (client credentials, the secret in
/// the environment) against `server`, its tokens in `store` (a file or a
/// Redis URL), with `extra` options; with `call`, it calls the tool `x`.
fn service_command(
    server: &ScriptServer,
    store: impl AsRef<std::ffi::OsStr>,
    extra: &[&str],
    call: bool,
) -> std::process::Command {
    let mut args = vec![
        "--json",
        "--pin",
        "2025-11-25",
        "--client-credentials",
        "--client-id",
        "svc",
        "--client-secret-env",
        "MCP_TEST_SECRET",
    ];
    args.extend(extra);
    if call {
        args.extend(["--call-tool", "x"]);
    }
    let mut command = support::cli::command(&args);
    command
        .arg("--token-store")
        .arg(store)
        .arg(server.url())
        .env("MCP_TEST_SECRET", "canary-secret");
    command
}

/// Done when, item 1 as written: eight `mcp-connect` processes sharing one
/// Redis (`--token-store redis://...`), their tokens expired together, each
/// calling a tool at the same instant: exactly one refresh reaches the
/// rotating authorization server, no `invalid_grant`, no new authorization,
/// eight calls succeed; no process prints a token, the key or the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn eight_command_processes_sharing_redis_refresh_once() {
    const KEY_HEX: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";
    let redis = Redis::start();
    let (server, rotation, expired) = rotating().await;
    let run = |call: bool| {
        let mut command = service_command(
            &server,
            redis.url(),
            &["--store-key-env", "MCP_TEST_STORE_KEY"],
            call,
        );
        command.env("MCP_TEST_STORE_KEY", KEY_HEX);
        command.spawn().unwrap()
    };
    // The first run authorizes and leaves its tokens in Redis.
    let first = tokio::task::spawn_blocking({
        let child = run(false);
        move || support::cli::finish(child, support::cli::COMMAND_LIMIT)
    })
    .await
    .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(grants(&server), ["client_credentials"]);

    expired.store(true, std::sync::atomic::Ordering::SeqCst);
    let children: Vec<_> = (0..REPLICAS).map(|_| run(true)).collect();
    let outputs = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|child| support::cli::finish(child, support::cli::COMMAND_LIMIT))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    for output in outputs.iter().chain([&first]) {
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert!(output.status.success(), "{stdout}\n{stderr}");
        for canary in [TOKEN, "canary-refresh", "canary-secret", PASSWORD, KEY_HEX] {
            assert!(
                !stdout.contains(canary) && !stderr.contains(canary),
                "{canary} printed"
            );
        }
    }
    let books = rotation.books();
    assert_eq!(books.refreshed, 1, "exactly one refresh: {books:?}");
    assert_eq!(books.invalid_grants, 0);
    assert_eq!(
        grants(&server),
        ["client_credentials", "refresh_token"],
        "no new authorization"
    );
}

/// Done when, item 1, the other half: the same eight processes with the
/// shared store off, each with its own token file (a copy of the first
/// run's, as replicas deployed with the same state would hold), refused
/// together: each refreshes with the one refresh token, and the rotating
/// server sees the reuse and revokes the grant. This is what the test
/// above shows does not happen through Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn eight_command_processes_with_their_own_files_lose_the_grant() {
    let dir = std::env::temp_dir().join(format!("mcp-connect-own-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (server, rotation, expired) = rotating().await;
    let run = |file: &std::path::Path, call: bool| {
        service_command(&server, file, &[], call).spawn().unwrap()
    };
    let first = dir.join("first.json");
    let output = support::cli::finish(run(&first, false), support::cli::COMMAND_LIMIT);
    assert!(output.status.success());
    let files: Vec<_> = (0..REPLICAS)
        .map(|n| {
            let own = dir.join(format!("{n}.json"));
            std::fs::copy(&first, &own).unwrap();
            own
        })
        .collect();
    expired.store(true, std::sync::atomic::Ordering::SeqCst);
    let children: Vec<_> = files.iter().map(|file| run(file, true)).collect();
    tokio::task::spawn_blocking(move || {
        for child in children {
            support::cli::finish(child, support::cli::COMMAND_LIMIT);
        }
    })
    .await
    .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let books = rotation.books();
    assert_eq!(books.refreshed, 1, "{books:?}");
    assert!(
        books.invalid_grants as usize >= REPLICAS - 1,
        "every other process reused the refresh token: {books:?}"
    );
    assert!(books.revoked, "the grant was revoked");
}

/// The command with its Redis down: the run goes on (authorizing with what
/// it can), and nothing it prints names the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn the_command_with_redis_down_goes_on_and_prints_no_password() {
    let mut redis = Redis::start();
    let url = redis.url();
    redis.kill();
    let server = start(As::default()).await;
    let target = server.url();
    let mut command = support::cli::command(&[
        "--json",
        "--pin",
        "2025-11-25",
        "--client-credentials",
        "--client-id",
        "svc",
        "--client-secret-env",
        "MCP_TEST_SECRET",
        "--token-store",
        &url,
        "--store-in-clear",
        &target,
    ]);
    command.env("MCP_TEST_SECRET", "canary-secret");
    let output = tokio::task::spawn_blocking(move || {
        support::cli::finish(command.spawn().unwrap(), support::cli::COMMAND_LIMIT)
    })
    .await
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success(),
        "the run went on: {stdout}\n{stderr}"
    );
    for text in [&stdout, &stderr] {
        assert!(!text.contains(PASSWORD), "the password was printed: {text}");
    }
}

fn eras(redis: &Redis) -> mcp_connect::era_cache::EraCache {
    mcp_connect::era_cache::EraCache::new().with_store(stores(redis).eras())
}

/// Done when, item 2 (eras): a replica started after another learnt a
/// server's era sends it no probe; what Redis holds names no URL.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_replica_started_later_sends_no_era_probe() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let legacy = support::LegacyServer::new();
        let server = ScriptServer::start(legacy.responder()).await;
        let first = eras(&redis);
        let request = |cache| {
            ConnectRequest::http(&server.url())
                .unwrap()
                .with_era_cache(cache)
        };
        Connector::new()
            .connect(request(first.clone()))
            .await
            .unwrap();
        assert_eq!(
            server.count("server/discover"),
            1,
            "the first replica probed"
        );
        // Its write goes in the background; a process about to exit waits.
        first.save_to_store().await.unwrap();

        let second = eras(&redis);
        assert!(second.is_empty(), "nothing local");
        let session = Connector::new().connect(request(second)).await.unwrap();
        assert_eq!(
            server.count("server/discover"),
            1,
            "the second sent no probe"
        );
        session.call_tool("x", &json!({})).await.unwrap();

        let held = redis.dump();
        assert!(held.contains("app:era:"), "{held}");
        assert!(
            !held.contains("127.0.0.1") && !held.contains("legacy"),
            "sealed: {held}"
        );
    })
    .await;
}

/// Item 5: two runs of the command with `--era-cache redis://...`: the
/// second sends no probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn two_command_runs_share_eras_through_redis() {
    two_command_runs_share_eras(&Redis::start(), &[]).await;
}

/// Two runs of the command against one server, sharing eras through
/// `redis`, with `extra` arguments: the second sends no probe.
async fn two_command_runs_share_eras(redis: &Redis, extra: &[&str]) {
    const KEY_HEX: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";
    let legacy = support::LegacyServer::new();
    let server = ScriptServer::start(legacy.responder()).await;
    for _ in 0..2 {
        let url = redis.url();
        let mut args = vec![
            "--json",
            "--era-cache",
            &url,
            "--store-key-env",
            "MCP_TEST_STORE_KEY",
        ];
        args.extend(extra);
        let target = server.url();
        args.push(&target);
        let mut command = support::cli::command(&args);
        command.env("MCP_TEST_STORE_KEY", KEY_HEX);
        let output = tokio::task::spawn_blocking(move || {
            support::cli::finish(command.spawn().unwrap(), support::cli::COMMAND_LIMIT)
        })
        .await
        .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert!(output.status.success(), "{stdout}\n{stderr}");
        assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
    }
    assert_eq!(
        server.count("server/discover"),
        1,
        "the second run sent no probe"
    );
}

/// Issue 41, item 3: `rediss://` against a redis-server that speaks only
/// TLS, its certificate from a private CA (openssl's). Without the CA the
/// store's error says what TLS refused (an unknown issuer), at once; with
/// it (`with_root_certificates_pem`, the command's `--cacert`) tokens go
/// in and come back, and two command runs share eras.
#[cfg(feature = "rustls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server and openssl; CI runs it"]
async fn rediss_with_a_private_ca() {
    watchdog(LIMIT, async {
        let dir = support::openssl::certificates("rediss");
        let redis = Redis::start_tls(&dir);
        assert!(redis.url().starts_with("rediss://"));
        let key = &TokenKey::new("https://mcp.example/mcp", "https://as.example", "svc");

        let untrusting = store(&redis);
        let error = untrusting.load(key).await.unwrap_err();
        assert_eq!(
            mcp_connect::transport::tls_problem(&error),
            Some(mcp_connect::transport::TlsProblem::UnknownIssuer),
            "{:?}",
            mcp_connect::error::report::Report::new(&error).to_string()
        );

        let ca = std::fs::read(dir.join("ca.pem")).unwrap();
        let trusting = stores(&redis)
            .with_root_certificates_pem(&ca)
            .unwrap()
            .tokens();
        let tokens: mcp_connect::store::Tokens =
            serde_json::from_value(json!({ "access_token": "canary-access-token" })).unwrap();
        trusting.save(key, &tokens).await.unwrap();
        let back = trusting.load(key).await.unwrap().expect("the tokens");
        assert_eq!(back.access_token(), "canary-access-token");
        assert!(redis.cli(&["--scan"]).contains("app:tokens:"));

        let ca = dir.join("ca.pem");
        two_command_runs_share_eras(&redis, &["--cacert", ca.to_str().unwrap()]).await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

/// Done when, item 3: Redis killed while eight replicas run for 30 s with
/// calls every 100 ms. No call fails because of Redis, no replica loses
/// the token it holds, and after Redis comes back (empty, as a restart
/// without persistence leaves it) the fleet coordinates through it again:
/// refused together, the replicas make one refresh and the store holds the
/// tokens in force.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn thirty_seconds_of_calls_across_a_redis_outage() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    let mut redis = Redis::start();
    let (server, rotation, expired) = rotating().await;
    let sessions: Vec<_> = replicas(&server, &redis)
        .await
        .into_iter()
        .map(Arc::new)
        .collect();
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let started = Instant::now();
    let run_for = Duration::from_secs(30);
    let callers: Vec<_> = sessions
        .iter()
        .map(|session| {
            let (session, ok, failed) = (Arc::clone(session), Arc::clone(&ok), Arc::clone(&failed));
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                while started.elapsed() < run_for {
                    tick.tick().await;
                    match session.call_tool("x", &json!({})).await {
                        Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(5)).await;
    redis.kill();
    tokio::time::sleep(Duration::from_secs(10)).await;
    redis.restart();
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Back for 5 s: now the servers refuse the token for everyone.
    expired.store(true, std::sync::atomic::Ordering::SeqCst);
    for caller in callers {
        caller.await.unwrap();
    }
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert_eq!(failed, 0, "{failed} calls failed ({ok} went through)");
    assert!(ok >= REPLICAS * 250, "the replicas kept calling: {ok}");
    let books = rotation.books();
    assert_eq!(
        books.refreshed, 1,
        "one refresh after Redis came back: {books:?}"
    );
    assert_eq!(books.invalid_grants, 0);
    let stored = store(&redis)
        .load(&key(&server, "svc"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.refresh_token(),
        Some(books.current.as_str()),
        "the store holds the tokens in force"
    );
}

/// Item 1 and 2 (results): a listing one replica fetched serves another
/// from Redis while the server says it is fresh; an invalidation drops
/// what it names, every context, and nothing else.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_listing_one_replica_fetched_serves_another() {
    use mcp_connect::response_cache::ResponseCache;
    use mcp_connect::store::{CacheKey, CachedResult, Invalidation, ResponseStore};
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let server = ScriptServer::start(|r: &support::Recorded| match r.rpc_method() {
            "server/discover" => support::Script::Json(
                200,
                support::result(r, json!({ "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} } })),
            ),
            "tools/list" => support::Script::Json(
                200,
                support::result(
                    r,
                    json!({ "resultType": "complete", "ttlMs": 60000, "cacheScope": "public",
                            "tools": [{ "name": "canary-tool", "inputSchema": { "type": "object" } }] }),
                ),
            ),
            _ => support::Script::Json(200, support::error(r, -32601, None)),
        })
        .await;
        let shared = || stores(&redis).responses();
        let replica = |cache: ResponseCache| {
            ConnectRequest::http(&server.url())
                .unwrap()
                .with_response_cache(cache)
        };
        let first = Connector::new()
            .connect(replica(ResponseCache::with_store(shared())))
            .await
            .unwrap();
        assert_eq!(first.list_tools().await.unwrap().tools.len(), 1);
        assert_eq!(server.count("tools/list"), 1);
        let second = Connector::new()
            .connect(replica(ResponseCache::with_store(shared())))
            .await
            .unwrap();
        assert_eq!(second.list_tools().await.unwrap().tools[0].name, "canary-tool");
        assert_eq!(server.count("tools/list"), 1, "served from Redis");
        let held = redis.dump();
        assert!(held.contains("app:resp:") && !held.contains("canary-tool"), "{held}");

        // Invalidations, through the store itself.
        let store = shared();
        let entry = CachedResult::new(Arc::from("{}"), std::time::SystemTime::now() + Duration::from_secs(60));
        let read = |uri: &str, context: Option<&str>| {
            CacheKey::new("srv", context, "resources/read", format!(r#"{{"uri":"{uri}"}}"#))
        };
        for key in [read("a", None), read("a", Some("ctx")), read("b", None)] {
            store.put(key, entry.clone()).await;
        }
        assert!(store.get(&read("a", Some("ctx"))).await.is_some());
        store.invalidate("srv", &Invalidation::Resource("a".into())).await;
        assert!(store.get(&read("a", None)).await.is_none());
        assert!(store.get(&read("a", Some("ctx"))).await.is_none(), "every context");
        assert!(store.get(&read("b", None)).await.is_some(), "nothing else");
        store.invalidate("srv", &Invalidation::Method("resources/read")).await;
        assert!(store.get(&read("b", None)).await.is_none());
    })
    .await;
}

/// Item 1 (registrations): a client registered by one replica is read by
/// another from Redis, and its secret is not there in clear.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_registered_client_is_shared_sealed() {
    use mcp_connect::store::Registration;
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let (a, b) = (store(&redis), store(&redis));
        let issuer = "https://as.example";
        assert_eq!(b.load_registration(issuer).await.unwrap(), None);
        let registration: Registration = serde_json::from_value(json!({
            "client_id": "replica-client",
            "client_secret": "canary-registration-secret",
        }))
        .unwrap();
        a.save_registration(issuer, &registration).await.unwrap();
        assert_eq!(
            b.load_registration(issuer).await.unwrap(),
            Some(registration)
        );
        let held = redis.dump();
        assert!(held.contains("app:registration:"), "{held}");
        assert!(!held.contains("canary-registration-secret") && !held.contains("replica-client"));
    })
    .await;
}

/// Issue 40, item 13: tokens whose expiry is as late as `expires_in` =
/// u64::MAX makes it are written whole (the script's `EXPIREAT` used to
/// fail after its `HSET`, leaving a half-written hash and an error), and
/// read back.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_token_expiring_at_the_end_of_time_is_written_whole() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let store = store(&redis);
        let key = &TokenKey::new("https://mcp.example/mcp", "https://as.example", "svc");
        let tokens: mcp_connect::store::Tokens =
            serde_json::from_value(json!({ "access_token": "at-1", "expires_at": u64::MAX }))
                .unwrap();
        store.save(key, &tokens).await.expect("written");
        let back = store.load(key).await.unwrap().expect("read back");
        assert_eq!(back.access_token(), "at-1");
        let keys = redis.cli(&["--scan", "--pattern", "*tokens*"]);
        let place = keys.lines().next().expect("one key");
        let ttl: i64 = redis.cli(&["TTL", place]).trim().parse().unwrap();
        assert!(ttl > 0, "an expiry is set: {ttl}");
    })
    .await;
}

/// Issue 40, items 8 and 11, through Redis: a listing made on hearing
/// `list_changed` is fresh (it returned the pre-change listing in 2 of 3
/// runs), and a flood of notifications scans no keyspace: each is at most
/// one `INCR` of a generation, on the cache's one worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_list_changed_flood_through_redis_is_fresh_and_cheap() {
    use mcp_connect::response_cache::ResponseCache;
    use std::sync::atomic::{AtomicU64, Ordering};
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let listed = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&listed);
        let server = ScriptServer::start(move |r: &support::Recorded| match r.rpc_method() {
            "server/discover" => support::Script::Json(
                200,
                support::result(r, json!({ "supportedVersions": ["2026-07-28"],
                    "capabilities": { "tools": { "listChanged": true } } })),
            ),
            "tools/list" => {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                support::Script::Json(
                    200,
                    support::result(r, json!({ "resultType": "complete", "ttlMs": 60000,
                        "cacheScope": "public",
                        "tools": [{ "name": format!("v{n}"), "inputSchema": { "type": "object" } }] })),
                )
            }
            "tools/call" => {
                let answer = support::result(r, json!({ "resultType": "complete", "content": [] }));
                support::Script::Sse(vec![
                    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n".into(),
                    format!("data: {answer}\n\n"),
                ])
            }
            _ => support::Script::Json(200, support::error(r, -32601, None)),
        })
        .await;
        let store = stores(&redis).responses();
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_response_cache(ResponseCache::with_store(store));
        let session = Connector::new().connect(request).await.unwrap();
        assert_eq!(session.list_tools().await.unwrap().tools[0].name, "v0");
        for round in 1..=3 {
            session.call_tool("change", &json!({})).await.unwrap();
            let now = session.list_tools().await.unwrap();
            assert_eq!(now.tools[0].name, format!("v{round}"), "a stale listing");
        }
        redis.cli(&["CONFIG", "RESETSTAT"]);
        for _ in 0..100 {
            session.call_tool("change", &json!({})).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let stats = redis.cli(&["INFO", "commandstats"]);
        assert!(!stats.contains("cmdstat_scan"), "{stats}");
        let incr = stats
            .lines()
            .find_map(|l| l.strip_prefix("cmdstat_incr:calls="))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse::<u64>().unwrap());
        // One O(1) move per notification at most (fewer when they come
        // faster than Redis answers), never a scan.
        assert!(
            (1..=100).contains(&incr),
            "{incr} generation moves for 100 notifications: {stats}"
        );
    })
    .await;
}

/// Issue 40, item 15: a wrong password, an unknown user and a database
/// that does not exist surface as what Redis said (the redis crate's
/// typed error in the store error's chain), at once, instead of the
/// operation's bound running out ("deadline has elapsed") while the
/// connection retried.
#[tokio::test]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_refused_redis_login_is_said_as_such_and_at_once() {
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let url = redis.url();
        let port = url.rsplit(':').next().unwrap().trim_end_matches('/');
        let key = &TokenKey::new("https://mcp.example/mcp", "https://as.example", "svc");
        for (place, kind) in [
            (
                format!("redis://:wrong-password@127.0.0.1:{port}/"),
                redis::ErrorKind::AuthenticationFailed,
            ),
            (
                format!("redis://nobody:{PASSWORD}@127.0.0.1:{port}/"),
                redis::ErrorKind::AuthenticationFailed,
            ),
            (
                format!("redis://:{PASSWORD}@127.0.0.1:{port}/999"),
                redis::ErrorKind::ResponseError,
            ),
        ] {
            let store = RedisStores::new(&place, "app", SealingKey::from_bytes(&KEY).unwrap())
                .unwrap()
                .with_timeout(Duration::from_secs(2))
                .tokens();
            let started = std::time::Instant::now();
            let error = store.load(key).await.unwrap_err();
            assert!(
                started.elapsed() < Duration::from_millis(1500),
                "{:?}",
                started.elapsed()
            );
            let source = std::error::Error::source(&error).expect("a source");
            let said = source
                .downcast_ref::<redis::RedisError>()
                .unwrap_or_else(|| panic!("not Redis's own error: {source:?}"));
            assert_eq!(said.kind(), kind, "{said:?}");
            assert!(!format!("{error:?}").contains("wrong-password"));
        }
    })
    .await;
}

/// Issue 41, item 4: a store that cannot work as configured is a
/// configuration failure at first use, not an outage passed over. A
/// wrong password (WRONGPASS), none where one is needed (NOAUTH), another
/// sealing key than the fleet's and a URL that is not one are each
/// `is_configuration()`, found by `check()` at start-up; an establishment
/// whose token store refuses its login fails as `configuration` and asks
/// the authorization server nothing (it used to authorize alone, the
/// fleet's one refresh lost with one warning). A Redis that is down is
/// still an outage: not a configuration error, passed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_misconfigured_store_is_a_configuration_failure_at_once() {
    use mcp_connect::layers::FailureKind;
    watchdog(LIMIT, async {
        let mut redis = Redis::start();
        let port = redis
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .to_owned();
        let sealed = |url: &str, key: &[u8; 32]| {
            RedisStores::new(url, "app", SealingKey::from_bytes(key).unwrap())
                .unwrap()
                .with_timeout(Duration::from_secs(2))
        };
        sealed(&redis.url(), &KEY)
            .check()
            .await
            .expect("the fleet's own");
        for url in [
            format!("redis://:wrong-password@127.0.0.1:{port}/"),
            format!("redis://127.0.0.1:{port}/"),
        ] {
            let error = sealed(&url, &KEY).check().await.unwrap_err();
            assert!(error.is_configuration(), "{error:?}");
        }
        let error = sealed(&redis.url(), &[7; 32]).check().await.unwrap_err();
        assert!(error.is_configuration());
        assert_eq!(
            std::error::Error::source(&error)
                .and_then(|e| e.downcast_ref::<mcp_connect::store::redis::StoreConfigError>()),
            Some(&mcp_connect::store::redis::StoreConfigError::AnotherSealingKey)
        );
        let bad = RedisStores::new(
            "redis://127.0.0.1:notaport/",
            "app",
            SealingKey::from_bytes(&KEY).unwrap(),
        );
        assert!(bad.unwrap_err().is_configuration());

        // At first use: the establishment fails as configuration, at once,
        // and nothing reached the authorization server's token endpoint.
        let (server, _rotation, _expired) = rotating().await;
        let wrong = format!("redis://:wrong-password@127.0.0.1:{port}/");
        let auth = Authorization::client_credentials("svc", "canary-secret")
            .with_token_store(sealed(&wrong, &KEY).tokens());
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_pin(ProtocolVersion::V2025_11_25)
            .with_authorization(auth);
        let started = std::time::Instant::now();
        let error = Connector::new().connect(request).await.unwrap_err();
        assert_eq!(
            error.failure().kind,
            FailureKind::Configuration,
            "{}",
            error.report()
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(grants(&server).is_empty(), "{:?}", grants(&server));
        assert!(!format!("{error:?}{}", error.report()).contains("wrong-password"));

        // Down is an outage, not a configuration error.
        redis.kill();
        let error = sealed(&redis.url(), &KEY).check().await.unwrap_err();
        assert!(!error.is_configuration(), "{error:?}");
    })
    .await;
}

/// Issue 44, item 1 (the fleet's store): a lazy server of a replica
/// started after another reached it is listed at once from Redis, with no
/// connection made; what Redis holds is sealed (no tool name, no URL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_lazy_server_of_a_later_replica_is_listed_from_redis() {
    use mcp_connect::group::{HealthState, RememberedListings, Server, ServerGroup};
    watchdog(LIMIT, async {
        let redis = Redis::start();
        let server = ScriptServer::start(|r: &support::Recorded| match r.rpc_method() {
            "server/discover" => support::Script::Json(
                200,
                support::result(
                    r,
                    json!({ "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} } }),
                ),
            ),
            "tools/list" => support::Script::Json(
                200,
                support::result(
                    r,
                    json!({ "resultType": "complete",
                    "tools": [{ "name": "canary-tool", "inputSchema": { "type": "object" } }] }),
                ),
            ),
            _ => support::Script::Json(200, support::error(r, -32601, None)),
        })
        .await;
        let listings = || async {
            RememberedListings::from_store(stores(&redis).listings())
                .await
                .unwrap()
        };
        let group = |listings: RememberedListings, lazy: bool| {
            let group = ServerGroup::builder()
                .with_remembered_listings(listings)
                .build();
            let request = ConnectRequest::http(&server.url()).unwrap().with_name("s");
            let stack = mcp_connect::EstablishBuilder::new(Connector::new()).build();
            let member = Server::new(stack, request);
            group
                .add(if lazy { member.lazy() } else { member })
                .unwrap();
            group
        };

        let first = group(listings().await, false);
        first.settled().await;
        assert!(first.catalogue().tool("canary-tool").is_some());
        let started = std::time::Instant::now();
        while listings().await.is_empty() {
            assert!(started.elapsed() < Duration::from_secs(5), "never stored");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        first.shutdown().await;
        let reached = server.count("server/discover");

        let later = group(listings().await, true);
        assert!(
            later.catalogue().tool("canary-tool").is_some(),
            "listed at once from Redis"
        );
        assert_eq!(later.health("s").unwrap().state, HealthState::Idle);
        assert_eq!(server.count("server/discover"), reached, "no connection");
        later.shutdown().await;

        let held = redis.dump();
        assert!(held.contains("app:listings"), "{held}");
        assert!(
            !held.contains("canary-tool") && !held.contains("127.0.0.1"),
            "sealed: {held}"
        );
    })
    .await;
}

/// The command's `--catalogue-cache redis://...`: a run that reached a
/// server remembers its listing in Redis (sealed); a later run whose entry
/// says `"lazy": true` lists its tools from there without connecting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn two_command_runs_share_listings_through_redis() {
    const KEY_HEX: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";
    let redis = Redis::start();
    let server = ScriptServer::start(|r: &support::Recorded| match r.rpc_method() {
        "server/discover" => support::Script::Json(
            200,
            support::result(
                r,
                json!({ "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} } }),
            ),
        ),
        "tools/list" => support::Script::Json(
            200,
            support::result(
                r,
                json!({ "resultType": "complete",
                "tools": [{ "name": "canary-tool", "inputSchema": { "type": "object" } }] }),
            ),
        ),
        _ => support::Script::Json(200, support::error(r, -32601, None)),
    })
    .await;
    let config =
        std::env::temp_dir().join(format!("mcp-redis-listings-{}.json", std::process::id()));
    for lazy in [false, true] {
        std::fs::write(
            &config,
            format!(
                r#"{{ "mcpServers": {{ "s": {{ "url": "{}", "lazy": {lazy} }} }} }}"#,
                server.url()
            ),
        )
        .unwrap();
        let url = redis.url();
        let args = [
            "--json",
            "--config",
            config.to_str().unwrap(),
            "--list-tools",
            "--catalogue-cache",
            &url,
            "--store-key-env",
            "MCP_TEST_STORE_KEY",
        ];
        let mut command = support::cli::command(&args);
        command.env("MCP_TEST_STORE_KEY", KEY_HEX);
        let output = tokio::task::spawn_blocking(move || {
            support::cli::finish(command.spawn().unwrap(), support::cli::COMMAND_LIMIT)
        })
        .await
        .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert!(output.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains("canary-tool"), "{stdout}");
        assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
    }
    let _ = std::fs::remove_file(&config);
    assert_eq!(
        server.count("server/discover"),
        1,
        "the lazy run connected nowhere"
    );
    let held = redis.dump();
    assert!(
        held.contains("mcp-connect:listings") && !held.contains("canary-tool"),
        "{held}"
    );
}

/// Issue 68: two stores (two connections, as two replicas hold them)
/// taking from one bucket at once: exactly its count granted, never one
/// more, each refusal with the time until a token is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn buckets_shared_by_two_replicas_grant_exactly_their_count() {
    use mcp_connect::store::{BucketStore, Rate, Taken};
    watchdog(LIMIT, async {
        let redis = support::redis::Redis::start();
        let replicas = [stores(&redis).buckets(), stores(&redis).buckets()];
        let rate = Rate::new(5, Duration::from_secs(3600));
        let takes = (0..40).map(|n| replicas[n % 2].take("alice\0tool", rate));
        let taken = futures_util::future::join_all(takes).await;
        let granted = taken
            .iter()
            .filter(|t| matches!(t, Ok(Taken::Granted)))
            .count();
        assert_eq!(granted, 5, "{taken:?}");
        for refused in taken.iter().filter(|t| !matches!(t, Ok(Taken::Granted))) {
            let Ok(Taken::Refused { retry_after }) = refused else {
                panic!("{refused:?}")
            };
            assert!(
                *retry_after > Duration::from_secs(600) && *retry_after <= Duration::from_secs(720)
            );
        }
        // Another key, and another rate, are other buckets.
        assert!(matches!(
            replicas[0].take("bob\0tool", rate).await,
            Ok(Taken::Granted)
        ));
        let other = Rate::new(1, Duration::from_secs(60));
        assert!(matches!(
            replicas[1].take("alice\0tool", other).await,
            Ok(Taken::Granted)
        ));
    })
    .await;
}
