//! Issue 31, item 3 (in one process): holders of one token store refresh
//! once when they are refused together. Eight `Authorization`s (as eight
//! replicas would hold, with nothing shared but the store) against an
//! authorization server that rotates refresh tokens and revokes the grant
//! when one is reused: with the store shared, exactly one refresh, no
//! `invalid_grant`, no new authorization, every call through; with a copy
//! of the tokens each, the race the store prevents.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_connect::auth::Authorization;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::store::{
    Lease, LeaseKind, MemoryTokenStore, StoreError, TokenKey, TokenStore, Tokens,
};
use mcp_connect::{ConnectRequest, Connector};

use crate::support::oauth::{call_together, grants, key, person, rotating, start, As};
use crate::support::{watchdog, ScriptServer};

const LIMIT: Duration = Duration::from_secs(30);
const HOLDERS: usize = 8;

fn request(server: &ScriptServer, auth: Authorization) -> ConnectRequest {
    ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_authorization(auth)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_of_one_store_refresh_once_when_refused_together() {
    watchdog(LIMIT, async {
        let (server, rotation, expired) = rotating().await;
        let store = Arc::new(MemoryTokenStore::new());
        let holder = || {
            Authorization::client_credentials("svc", "canary-secret")
                .with_token_store(Arc::clone(&store))
        };
        let mut sessions = Vec::new();
        for _ in 0..HOLDERS {
            sessions.push(
                Connector::new()
                    .connect(request(&server, holder()))
                    .await
                    .unwrap(),
            );
        }
        // The first authorized; the seven after it used what it stored.
        assert_eq!(grants(&server), ["client_credentials"]);

        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            call_together(&sessions).await,
            HOLDERS,
            "every call went through"
        );
        let books = rotation.books();
        assert_eq!(books.refreshed, 1, "exactly one refresh reached the server");
        assert_eq!(books.invalid_grants, 0);
        assert!(!books.revoked);
        assert_eq!(
            grants(&server),
            ["client_credentials", "refresh_token"],
            "no new authorization"
        );
        let stored = store.load(&key(&server, "svc")).await.unwrap().unwrap();
        assert_eq!(
            stored.refresh_token(),
            Some("canary-refresh-1"),
            "the rotated one is kept"
        );
    })
    .await;
}

/// The failure the shared store prevents: holders with a copy each of the
/// same tokens all refresh with one refresh token, and the server revokes
/// the grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_with_a_copy_each_lose_the_grant() {
    watchdog(LIMIT, async {
        let (server, rotation, expired) = rotating().await;
        let first = Arc::new(MemoryTokenStore::new());
        let auth = Authorization::client_credentials("svc", "canary-secret")
            .with_token_store(Arc::clone(&first));
        let mut sessions = vec![Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap()];
        let copied = first.load(&key(&server, "svc")).await.unwrap().unwrap();
        for _ in 1..HOLDERS {
            let own = Arc::new(MemoryTokenStore::new());
            own.save(&key(&server, "svc"), &copied).await.unwrap();
            let auth =
                Authorization::client_credentials("svc", "canary-secret").with_token_store(own);
            sessions.push(
                Connector::new()
                    .connect(request(&server, auth))
                    .await
                    .unwrap(),
            );
        }
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        call_together(&sessions).await;
        let books = rotation.books();
        assert!(books.refreshed >= 1);
        assert!(
            books.invalid_grants >= 1,
            "a refresh token was reused: {books:?}"
        );
        assert!(books.revoked, "and the grant was revoked");
    })
    .await;
}

/// Issue 31, item 3: holders of one store that need a person at the same
/// moment ask the person once; the others use the tokens.
#[tokio::test(start_paused = true)]
async fn one_person_authorizes_for_every_holder_of_the_store() {
    watchdog(LIMIT, async {
        let server = start(As::default()).await;
        let store = Arc::new(MemoryTokenStore::new());
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let connector = Connector::new();
        let requests: Vec<_> = (0..4)
            .map(|_| {
                let auth = Authorization::authorization_code(person(&asked, false))
                    .with_token_store(Arc::clone(&store));
                request(&server, auth)
            })
            .collect();
        let connects = requests.into_iter().map(|r| connector.connect(r));
        let sessions = futures_util::future::join_all(connects).await;
        assert!(sessions.iter().all(Result::is_ok), "every holder connected");
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one person"
        );
        let authorize = server
            .recorded()
            .iter()
            .filter(|r| r.route() == "/as/authorize")
            .count();
        assert_eq!(authorize, 1, "one authorization at the server");
        let registrations = server
            .recorded()
            .iter()
            .filter(|r| r.route() == "/as/register")
            .count();
        assert_eq!(
            registrations, 1,
            "the holders that waited registered nothing"
        );
    })
    .await;
}

/// A holder waiting for another's person fails typed after its own
/// person's limit, and never asks its person.
#[tokio::test(start_paused = true)]
async fn a_holder_waiting_for_anothers_person_fails_typed_at_its_limit() {
    watchdog(LIMIT, async {
        let server = start(As::default()).await;
        let store = Arc::new(MemoryTokenStore::new());
        let (first, second) = (
            Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        );
        // The first holder's person never comes back.
        let slow = Authorization::authorization_code(person(&first, true))
            .with_token_store(Arc::clone(&store));
        let server_url = server.url();
        let stuck = tokio::spawn({
            let request = request(&server, slow);
            async move { Connector::new().connect(request).await }
        });
        while first.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let waiting = Authorization::authorization_code(person(&second, false))
            .with_token_store(Arc::clone(&store))
            .with_person_timeout(Duration::from_millis(300));
        let error = Connector::new()
            .connect(request(&server, waiting))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error.kind(),
                mcp_connect::ErrorKind::Auth(mcp_connect::auth::AuthError::PendingElsewhere)
            ),
            "{error:?}"
        );
        assert_eq!(
            second.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "no second person"
        );
        stuck.abort();
        drop(server_url);
    })
    .await;
}

/// Issue 31, item 1 (registrations): a holder that uses tokens another
/// holder obtained as a dynamically registered client refreshes as that
/// client, and registers nothing itself.
#[tokio::test]
async fn holders_of_one_store_share_the_registered_client() {
    watchdog(LIMIT, async {
        let expired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let server = start(As {
            refresh: true,
            expired: Some(Arc::clone(&expired)),
            ..As::default()
        })
        .await;
        let store = Arc::new(MemoryTokenStore::new());
        let holder = || {
            Authorization::authorization_code(mcp_connect::testkit::AutoApprove::new())
                .with_token_store(Arc::clone(&store))
        };
        Connector::new()
            .connect(request(&server, holder()))
            .await
            .unwrap();
        let second = Connector::new()
            .connect(request(&server, holder()))
            .await
            .unwrap();
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        second.call_tool("x", &serde_json::json!({})).await.unwrap();
        let routes: Vec<String> = server
            .recorded()
            .iter()
            .map(|r| r.route().to_owned())
            .collect();
        let count = |route: &str| routes.iter().filter(|r| *r == route).count();
        assert_eq!(
            count("/as/register"),
            1,
            "one registration for both: {routes:?}"
        );
        assert_eq!(count("/as/authorize"), 1, "one person");
        let refresh = server
            .recorded()
            .into_iter()
            .find(|r| r.field("grant_type").as_deref() == Some("refresh_token"))
            .expect("the second refreshed");
        assert_eq!(
            refresh.field("client_id").as_deref(),
            Some("registered-client")
        );
    })
    .await;
}

/// Issue 41, item 5: tokens that expire within a tenth of their lifetime
/// (at most a minute) are refreshed before a server sees them expire,
/// once for every holder of the store. Eight holders find such tokens in
/// the store: exactly one refresh, under the lease, and no new grant
/// (they used to take the stored token as it was and meet its expiry
/// later, at a server that may revoke the refresh token by then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_about_to_expire_are_refreshed_once_before_they_do() {
    watchdog(LIMIT, async {
        let (server, rotation, _expired) = rotating().await;
        let store = Arc::new(MemoryTokenStore::new());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // An hour's token with 30 s left: inside its last minute.
        let expiring: mcp_connect::store::Tokens = serde_json::from_value(serde_json::json!({
            "access_token": crate::support::oauth::TOKEN,
            "refresh_token": "canary-refresh-token",
            "expires_at": now + 30,
            "issued_at": now + 30 - 3600,
        }))
        .unwrap();
        store.save(&key(&server, "svc"), &expiring).await.unwrap();
        let holder = || {
            Authorization::client_credentials("svc", "canary-secret")
                .with_token_store(Arc::clone(&store))
        };
        let connector = Connector::new();
        let connects = (0..HOLDERS).map(|_| connector.connect(request(&server, holder())));
        let sessions: Vec<_> = futures_util::future::join_all(connects)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(grants(&server), ["refresh_token"], "one refresh, no grant");
        assert_eq!(rotation.books().refreshed, 1);
        assert_eq!(rotation.books().invalid_grants, 0);
        assert_eq!(call_together(&sessions).await, HOLDERS);
        assert_eq!(grants(&server), ["refresh_token"]);
    })
    .await;
}

/// The same on an established session: a token that lives 2 s is used as
/// it is at first, and refreshed before the call that would have met its
/// last 200 ms; the server never refuses a token.
#[tokio::test]
async fn a_session_refreshes_before_its_token_expires() {
    watchdog(LIMIT, async {
        let server = start(As {
            refresh: true,
            lifetime: Some(2),
            ..As::default()
        })
        .await;
        let auth = Authorization::client_credentials("svc", "canary-secret");
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();
        let arguments = serde_json::json!({});
        session.call_tool("x", &arguments).await.unwrap();
        assert_eq!(grants(&server), ["client_credentials"]);
        // Real time: expiry is wall-clock time, which tokio's clock does
        // not move.
        tokio::time::sleep(Duration::from_millis(1900)).await;
        session.call_tool("x", &arguments).await.unwrap();
        assert_eq!(grants(&server), ["client_credentials", "refresh_token"]);
        let calls: Vec<_> = server
            .recorded()
            .into_iter()
            .filter(|r| r.route() == "/mcp" && r.rpc_method() == "tools/call")
            .collect();
        assert_eq!(
            calls.last().unwrap().header("authorization"),
            Some("Bearer canary-refreshed-token")
        );
        let refusals = server
            .recorded()
            .iter()
            .filter(|r| r.route() == "/mcp")
            .count();
        assert!(refusals > 0);
        session.close().await.unwrap();
    })
    .await;
}

/// A store in which another holder finishes its refresh, and gives the
/// lease back, between this holder's read and its lease.
struct RefreshedMeanwhile {
    inner: MemoryTokenStore,
    newer: std::sync::Mutex<Option<(TokenKey, Tokens)>>,
}

impl TokenStore for RefreshedMeanwhile {
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        self.inner.load(key)
    }
    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.save(key, tokens)
    }
    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.forget(key)
    }
    fn lease<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lasting: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        let newer = self.newer.lock().unwrap().take();
        Box::pin(async move {
            if let Some((key, tokens)) = newer {
                self.inner.save(&key, &tokens).await?;
            }
            self.inner.lease(key, kind, lasting).await
        })
    }
}

/// The CI failure of wave 4 (one of eight command processes refused at
/// its limit): a holder that read the old tokens and then got the lease
/// just after another holder stored new ones refreshed with the rotated
/// refresh token (`invalid_grant`, the grant lost, a new one asked). It
/// looks again once it holds the lease, and uses the other's tokens.
#[tokio::test]
async fn a_holder_leasing_after_anothers_refresh_uses_its_tokens() {
    watchdog(LIMIT, async {
        let (server, rotation, expired) = rotating().await;
        let store = Arc::new(RefreshedMeanwhile {
            inner: MemoryTokenStore::new(),
            newer: std::sync::Mutex::new(None),
        });
        let auth = Authorization::client_credentials("svc", "canary-secret")
            .with_token_store(Arc::clone(&store));
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();
        let theirs: Tokens = serde_json::from_value(serde_json::json!({
            "access_token": "canary-refreshed-token",
            "refresh_token": "canary-refresh-1",
        }))
        .unwrap();
        *store.newer.lock().unwrap() = Some((key(&server, "svc"), theirs));
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        session
            .call_tool("x", &serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(
            grants(&server),
            ["client_credentials"],
            "no refresh with the old refresh token"
        );
        assert_eq!(rotation.books().invalid_grants, 0);
    })
    .await;
}

/// The same for a person: a holder that gets the authorization lease
/// just after another holder's person authorized (and the lease was
/// given back) uses those tokens instead of asking the person again.
#[tokio::test]
async fn a_holder_leasing_after_anothers_person_asks_nobody() {
    watchdog(LIMIT, async {
        let server = start(As {
            refresh: true,
            ..As::default()
        })
        .await;
        let theirs: Tokens = serde_json::from_value(serde_json::json!({
            "access_token": "canary-refreshed-token",
        }))
        .unwrap();
        let store = Arc::new(RefreshedMeanwhile {
            inner: MemoryTokenStore::new(),
            newer: std::sync::Mutex::new(Some((key(&server, ""), theirs))),
        });
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let auth = Authorization::authorization_code(person(&asked, false))
            .with_token_store(Arc::clone(&store));
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();
        session
            .call_tool("x", &serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0);
    })
    .await;
}
