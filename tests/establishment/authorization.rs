//! Issue 16: OAuth 2.1 authorization as an establishment stage, against a
//! scripted protected resource and authorization server on one loopback
//! origin. Tokens reach only the resource; secrets, tokens, codes and
//! verifiers reach no diagnostic, error or `Debug`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use crate::support::oauth::{key, start, As};
use crate::support::{watchdog, Recorded, ScriptServer};
use mcp_connect::auth::{AuthError, Authorization};
use mcp_connect::error::ConfigError;
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::protocol::RawRequest;
use mcp_connect::session::Call;
use mcp_connect::store::{MemoryTokenStore, TokenStore};
use mcp_connect::testkit::AutoApprove;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(15);

fn request(server: &ScriptServer, auth: Authorization) -> ConnectRequest {
    ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_authorization(auth)
}

fn at(server: &ScriptServer, route: &str) -> Vec<Recorded> {
    server
        .recorded()
        .into_iter()
        .filter(|r| r.route() == route)
        .collect()
}

#[tokio::test]
async fn client_credentials_authorize_the_establishment_and_the_token_goes_only_to_the_resource() {
    watchdog(LIMIT, async {
        let server = start(As::default()).await;
        let auth = Authorization::client_credentials("svc", "canary-secret");
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();
        session.call_tool("x", &json!({})).await.unwrap();
        let token_requests = at(&server, "/as/token");
        assert_eq!(token_requests.len(), 1);
        let asked = &token_requests[0];
        assert_eq!(
            asked.field("resource"),
            Some(server.url()),
            "RFC 8707 resource"
        );
        assert_eq!(
            asked.field("scope").as_deref(),
            Some("mcp:tools"),
            "the challenge's scope"
        );
        for r in server.recorded() {
            let carries = r
                .header("authorization")
                .is_some_and(|h| h.starts_with("Bearer"));
            if carries {
                assert_eq!(r.route(), "/mcp", "a token went elsewhere");
            }
        }
        assert!(at(&server, "/mcp")
            .iter()
            .any(|r| r.header("authorization").is_some()));
    })
    .await;
}

#[tokio::test]
async fn the_authorization_code_flow_registers_uses_pkce_and_checks_state_and_issuer() {
    watchdog(LIMIT, async {
        let server = start(As::default()).await;
        let auth = Authorization::authorization_code(AutoApprove::new());
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();
        session.call_tool("x", &json!({})).await.unwrap();
        assert_eq!(at(&server, "/as/register").len(), 1, "dynamic registration");
        let authorize = &at(&server, "/as/authorize")[0];
        assert_eq!(
            authorize.field("code_challenge_method").as_deref(),
            Some("S256")
        );
        assert_eq!(
            authorize.field("client_id").as_deref(),
            Some("registered-client")
        );
        assert_eq!(authorize.field("resource"), Some(server.url()));
        let token = &at(&server, "/as/token")[0];
        assert_eq!(
            token.field("client_id").as_deref(),
            Some("registered-client"),
            "a public client"
        );
        assert!(token.header("authorization").is_none());
    })
    .await;
}

/// An authorization code flow against a server that behaves so; the
/// server and the establishment's error, an authorization failure.
async fn code_flow_fails(behaviour: As) -> (ScriptServer, mcp_connect::Error) {
    let server = start(behaviour).await;
    let auth = Authorization::authorization_code(AutoApprove::new());
    let error = Connector::new()
        .connect(request(&server, auth))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Auth, "{error}");
    (server, error)
}

#[tokio::test]
async fn a_forged_state_is_an_authorization_failure_never_retried() {
    watchdog(LIMIT, async {
        let (server, error) = code_flow_fails(As {
            wrong_state: true,
            ..As::default()
        })
        .await;
        assert!(
            matches!(error.kind(), ErrorKind::Auth(AuthError::StateMismatch)),
            "{error}"
        );
        assert!(
            at(&server, "/as/token").is_empty(),
            "the code was never exchanged"
        );
        assert_eq!(at(&server, "/as/authorize").len(), 1);
    })
    .await;
}

#[tokio::test]
async fn stored_tokens_are_used_before_a_refresh_and_a_refresh_before_a_new_authorization() {
    watchdog(LIMIT, async {
        let expired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let server = start(As {
            refresh: true,
            expired: Some(Arc::clone(&expired)),
            ..As::default()
        })
        .await;
        let store = Arc::new(MemoryTokenStore::new());
        let auth = Authorization::client_credentials("svc", "canary-secret")
            .with_token_store(Arc::clone(&store));
        // The first establishment authorizes; its token is stored.
        Connector::new()
            .connect(request(&server, auth.clone()))
            .await
            .unwrap();
        assert_eq!(at(&server, "/as/token").len(), 1);
        let stored = store.load(&key(&server, "svc")).await.unwrap().unwrap();
        assert_eq!(stored.refresh_token(), Some("canary-refresh-token"));

        // A new process (a new Authorization over the same store) uses the
        // stored access token: nothing goes to the authorization server.
        let second = Authorization::client_credentials("svc", "canary-secret")
            .with_token_store(Arc::clone(&store));
        Connector::new()
            .connect(request(&server, second))
            .await
            .unwrap();
        assert_eq!(
            at(&server, "/as/token").len(),
            1,
            "the stored token was used"
        );

        // Once the server no longer takes it, a third refreshes with the
        // stored refresh token instead of authorizing anew.
        expired.store(true, std::sync::atomic::Ordering::SeqCst);
        let third = Authorization::client_credentials("svc", "canary-secret")
            .with_token_store(Arc::clone(&store));
        Connector::new()
            .connect(request(&server, third))
            .await
            .unwrap();
        let grants: Vec<_> = at(&server, "/as/token")
            .iter()
            .map(|r| r.field("grant_type").unwrap())
            .collect();
        assert_eq!(grants, ["client_credentials", "refresh_token"]);
    })
    .await;
}

#[test]
fn no_secret_token_code_or_state_reaches_diagnostics_errors_or_debug() {
    let (capture, _guard, runtime) = crate::support::capture::on_this_thread();
    let mut printed = String::new();
    runtime.block_on(async {
        let stack = mcp_connect::EstablishBuilder::new(Connector::new()).build();
        let server = start(As {
            refresh: true,
            ..As::default()
        })
        .await;
        let auth = Authorization::authorization_code(AutoApprove::new());
        let _ = write!(printed, "{auth:?}");
        let session = stack.connect(request(&server, auth.clone())).await.unwrap();
        let _ = write!(printed, "{session:?}");
        let cc = Authorization::client_credentials("svc", "canary-secret");
        let _ = write!(printed, "{cc:?} {:?}", request(&server, cc.clone()));
        stack.connect(request(&server, cc)).await.unwrap();
        let bad = start(As {
            wrong_state: true,
            ..As::default()
        })
        .await;
        let error = stack
            .connect(request(
                &bad,
                Authorization::authorization_code(AutoApprove::new()),
            ))
            .await
            .unwrap_err();
        let _ = write!(printed, "{error} {error:?}");
    });
    let traced = capture.text();
    assert!(
        traced.contains("authorize"),
        "the stage was traced: {traced}"
    );
    for canary in [
        "canary-secret",
        "canary-access-token",
        "canary-refresh-token",
        "canary-code",
    ] {
        assert!(!traced.contains(canary), "{canary} traced: {traced}");
        assert!(!printed.contains(canary), "{canary} printed: {printed}");
    }
}

/// A person slower than the whole establishment deadline: their wait does
/// not count against it.
struct SlowPerson(Duration);

impl mcp_connect::auth::Authorize for SlowPerson {
    fn authorize(
        &self,
        url: String,
    ) -> futures_util::future::BoxFuture<'static, Result<String, mcp_connect::error::BoxError>>
    {
        let delay = self.0;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            AutoApprove::new().authorize(url).await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn the_wait_for_the_person_does_not_count_against_the_deadline_but_has_its_own_limit() {
    use mcp_connect::layers::CancelSource;

    watchdog(LIMIT, async {
        let server = start(As::default()).await;
        let stack = mcp_connect::EstablishBuilder::new(Connector::new())
            .with_deadline(Duration::from_millis(400))
            .build();
        // 900 ms at the authorization page, within a 400 ms deadline.
        let auth = Authorization::authorization_code(SlowPerson(Duration::from_millis(900)));
        let session = stack.connect(request(&server, auth)).await.unwrap();
        session.close().await.unwrap();

        let auth = Authorization::authorization_code(SlowPerson(Duration::from_secs(5)))
            .with_person_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let error = stack.connect(request(&server, auth)).await.unwrap_err();
        let failure = error.failure();
        assert_eq!(failure.kind, FailureKind::Timeout, "{error}");
        assert_eq!(failure.cancel_source, Some(CancelSource::Interaction));
        assert!(started.elapsed() < Duration::from_secs(2));
        // Never shown to the person twice: no fresh attempt.
        assert_eq!(at(&server, "/as/register").len(), 2);
    })
    .await;
}

/// A token the server stops accepting mid-session is refreshed with the
/// same registered client (no second registration, no second visit to the
/// person) and the refused call is sent once more.
#[tokio::test]
async fn an_expired_token_is_refreshed_mid_session_by_the_registered_client() {
    use std::sync::atomic::{AtomicBool, Ordering};

    use mcp_connect::McpClient;

    watchdog(LIMIT, async {
        let expired = Arc::new(AtomicBool::new(false));
        let server = start(As {
            refresh: true,
            expired: Some(Arc::clone(&expired)),
            ..As::default()
        })
        .await;
        let auth = Authorization::authorization_code(AutoApprove::new());
        let client = McpClient::builder(
            mcp_connect::EstablishBuilder::new(Connector::new()).build(),
            request(&server, auth),
        )
        .build();
        client.call_tool("x", &json!({})).await.unwrap();
        expired.store(true, Ordering::SeqCst);
        // Refused mid-session: the session refreshes and sends the call
        // once more.
        client.call_tool("x", &json!({})).await.unwrap();
        let grants: Vec<_> = at(&server, "/as/token")
            .iter()
            .map(|r| (r.field("grant_type").unwrap(), r.field("client_id")))
            .collect();
        assert_eq!(
            grants,
            [
                (
                    "authorization_code".to_owned(),
                    Some("registered-client".to_owned())
                ),
                (
                    "refresh_token".to_owned(),
                    Some("registered-client".to_owned())
                ),
            ]
        );
        assert_eq!(at(&server, "/as/register").len(), 1, "registered once");
        assert_eq!(
            at(&server, "/as/authorize").len(),
            1,
            "the person was asked once"
        );
    })
    .await;
}

/// A request sent again under a new id after its refusal (401) is the one
/// a cancellation names: the server never ran the first id.
#[tokio::test]
async fn a_cancellation_after_a_reauthorization_names_the_id_sent_last() {
    use std::sync::atomic::{AtomicBool, Ordering};

    use mcp_connect::session::RequestOptions;

    watchdog(LIMIT, async {
        let expired = Arc::new(AtomicBool::new(false));
        let server = start(As {
            refresh: true,
            expired: Some(Arc::clone(&expired)),
            stall_slow: true,
            ..As::default()
        })
        .await;
        let auth = Authorization::authorization_code(AutoApprove::new());
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();
        expired.store(true, Ordering::SeqCst);
        let options = RequestOptions::new().with_timeout(Duration::from_millis(300));
        let params = json!({ "name": "slow", "arguments": {} });
        let error = session
            .send(
                Call::new(RawRequest::new("tools/call", Some(params)))
                    .with_options(options.clone()),
            )
            .await
            .unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Timeout(_)), "{error}");
        let sent: Vec<_> = at(&server, "/mcp")
            .into_iter()
            .filter(|r| r.body["params"]["name"] == "slow")
            .map(|r| r.id())
            .collect();
        assert_eq!(sent.len(), 2, "refused once, sent once more");
        assert_ne!(sent[0], sent[1]);
        let notice = crate::support::cancellation(&server).await;
        let notice = notice.expect("notifications/cancelled sent");
        assert_eq!(notice.body["params"]["requestId"], sent[1]);
    })
    .await;
}

/// A config entry's `oauth` block (the draft standard `mcp.json`) starts
/// the flow with its pre-registered client id, its scopes and its
/// redirect URI: no dynamic registration, the scopes asked for instead of
/// the server's suggestion.
#[tokio::test]
async fn a_config_entrys_oauth_block_drives_the_flow() {
    use mcp_connect::config::ServersConfig;

    watchdog(LIMIT, async {
        let server = start(As::default()).await;
        let text = format!(
            r#"{{ "mcpServers": {{ "s": {{ "type": "streamable-http", "url": "{}",
                "oauth": {{ "clientId": "pre-registered", "scopes": ["mcp:tools", "extra"],
                            "redirectUri": "http://127.0.0.1:9/callback" }} }} }} }}"#,
            server.url()
        );
        let config = ServersConfig::parse(&text).unwrap();
        let entry = config.get("s").unwrap();
        let auth = entry.oauth().unwrap().authorization(AutoApprove::new());
        let request = entry
            .request()
            .with_pin(ProtocolVersion::V2025_11_25)
            .with_authorization(auth);
        let session = Connector::new().connect(request).await.unwrap();
        session.call_tool("x", &json!({})).await.unwrap();
        assert!(at(&server, "/as/register").is_empty(), "no registration");
        let asked = &at(&server, "/as/authorize")[0];
        assert_eq!(asked.field("client_id").as_deref(), Some("pre-registered"));
        assert_eq!(asked.field("scope").as_deref(), Some("mcp:tools extra"));
        assert_eq!(
            asked.field("redirect_uri").as_deref(),
            Some("http://127.0.0.1:9/callback")
        );
    })
    .await;
}

/// A server that refuses every token: the person is asked once, then the
/// establishment fails as an authorization failure, never a loop.
#[tokio::test]
async fn a_server_that_refuses_every_token_asks_the_person_once() {
    use std::sync::atomic::AtomicBool;

    watchdog(LIMIT, async {
        let (server, error) = code_flow_fails(As {
            expired: Some(Arc::new(AtomicBool::new(true))),
            ..As::default()
        })
        .await;
        assert!(
            matches!(error.kind(), ErrorKind::Auth(AuthError::TokenRefused)),
            "{error}"
        );
        assert_eq!(
            at(&server, "/as/authorize").len(),
            1,
            "the person was asked once"
        );
    })
    .await;
}

/// Issue 24, item 3.7: a token request carries a credential (here the
/// client secret), so it is never sent over cleartext to a host that is
/// not this machine, even one whose name resolves to 127.0.0.1. The
/// failure is typed, classified as an authorization failure and never
/// retried; the token endpoint sees nothing.
#[tokio::test]
async fn a_secret_is_never_sent_to_a_cleartext_token_endpoint_elsewhere() {
    use mcp_connect::transport::HttpClient;
    watchdog(LIMIT, async {
        let server = crate::support::oauth::start_named(As::default(), "auth.example.test").await;
        let live = server.addr();
        let resolver = tower::service_fn(move |_name| {
            std::future::ready(Ok::<_, std::io::Error>(std::iter::once(live)))
        });
        let connector = Connector::with_client(HttpClient::http_only_with_resolver(resolver));
        let url = format!("http://auth.example.test:{}/mcp", live.port());
        let request = ConnectRequest::http(&url)
            .unwrap()
            .with_pin(ProtocolVersion::V2025_11_25)
            .with_authorization(Authorization::client_credentials("svc", "canary-secret"));
        let error = connector.connect(request).await.unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Auth(AuthError::InsecureEndpoint)),
            "{error:?}"
        );
        assert_eq!(error.failure().kind, FailureKind::Auth);
        assert!(at(&server, "/as/token").is_empty(), "the secret was sent");
        assert!(server
            .recorded()
            .iter()
            .all(
                |r| !String::from_utf8_lossy(&r.raw).contains("canary-secret")
                    && r.header("authorization")
                        .is_none_or(|h| !h.starts_with("Basic"))
            ));
    })
    .await;
}

/// A URL `http::Uri` reads and the `url` crate does not cannot have a
/// bearer layer or authorization keyed to it: with authorization that is a
/// configuration error before any I/O, never a connection without the
/// token. Without authorization the URL is not read that way at all.
#[test]
fn authorizing_a_url_the_url_crate_refuses_is_a_configuration_error_before_io() {
    let connector = Connector::new();
    let plain = ConnectRequest::http("http://1.2.3.400/mcp").unwrap();
    assert!(connector.validate(&plain).is_ok());
    let authorized = plain.with_authorization(Authorization::client_credentials("svc", "s"));
    let error = connector.validate(&authorized).unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Config(ConfigError::Url)));
}

/// Issue 65, item 7: the bearer layer is a tower layer on any HTTP client:
/// the token the authorization holds goes to its server's origin and to
/// no other.
#[tokio::test]
async fn the_bearer_layer_puts_the_token_on_any_tower_client_for_its_origin_only() {
    use bytes::Bytes;
    use http_body_util::Full;
    use tower::{Layer, ServiceExt};
    watchdog(LIMIT, async {
        let server = start(As::default()).await;
        let elsewhere =
            ScriptServer::start(|_: &Recorded| mcp_connect::testkit::Script::Status(204)).await;
        let auth = Authorization::client_credentials("svc", "canary-secret");
        let session = Connector::new()
            .connect(request(&server, auth.clone()))
            .await
            .unwrap();
        let url = url::Url::parse(&server.url()).unwrap();
        let client = auth
            .bearer_layer(&url)
            .layer(mcp_connect::transport::HttpClient::default_client());
        let post = |to: &str| {
            http::Request::post(to)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from_static(
                    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                )))
                .unwrap()
        };
        client.clone().oneshot(post(&server.url())).await.unwrap();
        client.oneshot(post(&elsewhere.url())).await.unwrap();
        let last = at(&server, "/mcp").pop().unwrap();
        assert!(
            last.header("authorization")
                .is_some_and(|h| h.starts_with("Bearer ")),
            "the token went to its server"
        );
        let other = elsewhere.recorded();
        assert_eq!(other.len(), 1);
        assert_eq!(
            other[0].header("authorization"),
            None,
            "a token went elsewhere"
        );
        let sent = last.header("authorization").unwrap();
        let token = sent.trim_start_matches("Bearer ");
        let shown = format!("{:?}", auth.bearer_layer(&url));
        assert!(!shown.contains(token), "{shown}");
        session.close().await.unwrap();
    })
    .await;
}
