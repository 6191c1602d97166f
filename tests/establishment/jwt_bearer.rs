//! Issue 30, items 2 and 3: the JWT bearer grant with an assertion from
//! elsewhere. A workload token file that changes between two token requests
//! is read anew; an identity provider that refuses the exchange is a typed
//! failure with nothing sent to the authorization server; no assertion,
//! ID-JAG or token reaches a diagnostic, error or `Debug`.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_connect::auth::{AssertionSource, AuthError, Authorization, IdentityProvider};
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::json;

use crate::support::{watchdog, LegacyServer, Recorded, Script, ScriptServer};

const LIMIT: Duration = Duration::from_secs(15);
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What the scripted servers do.
#[derive(Clone, Default)]
struct Servers {
    /// Access tokens `/mcp` accepts; the token endpoint adds each it issues.
    accepted: Arc<Mutex<Vec<String>>>,
    /// The identity provider refuses every exchange.
    idp_refuses: bool,
}

impl Servers {
    /// `/mcp` (a 2025 server wanting a token), `/as` (an authorization
    /// server taking the JWT bearer grant, issuing `access-for-ASSERTION`)
    /// and `/idp/token` (token exchange: `id-jag-for-SUBJECT`).
    async fn start(&self) -> ScriptServer {
        let this = self.clone();
        let legacy = LegacyServer::new();
        ScriptServer::start(move |r: &Recorded| {
            let base = format!("http://{}", r.header("host").unwrap_or_default());
            match r.route() {
                "/mcp" => {
                    let presented = r.header("authorization").unwrap_or_default();
                    let accepted = this.accepted.lock().unwrap();
                    if accepted.iter().any(|t| presented == format!("Bearer {t}")) {
                        legacy.respond(r)
                    } else {
                        Script::JsonWith(
                            401,
                            json!({ "error": "invalid_token" }),
                            vec![(
                                "www-authenticate",
                                format!(r#"Bearer resource_metadata="{base}/prm""#),
                            )],
                        )
                    }
                }
                "/prm" => Script::Json(
                    200,
                    json!({ "resource": format!("{base}/mcp"), "authorization_servers": [format!("{base}/as")] }),
                ),
                "/.well-known/oauth-authorization-server/as" => Script::Json(
                    200,
                    json!({
                        "issuer": format!("{base}/as"),
                        "token_endpoint": format!("{base}/as/token"),
                        "grant_types_supported": [JWT_BEARER],
                        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                    }),
                ),
                "/as/token" if r.field("grant_type").as_deref() == Some(JWT_BEARER) => {
                    let assertion = r.field("assertion").unwrap_or_default();
                    let token = format!("access-for-{assertion}");
                    this.accepted.lock().unwrap().push(token.clone());
                    Script::Json(200, json!({ "access_token": token, "token_type": "Bearer" }))
                }
                "/idp/token" if this.idp_refuses => {
                    Script::Json(400, json!({ "error": "invalid_grant" }))
                }
                "/idp/token" => Script::Json(
                    200,
                    json!({
                        "access_token": format!("id-jag-for-{}", r.field("subject_token").unwrap_or_default()),
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                        "token_type": "N_A",
                    }),
                ),
                _ => Script::Json(400, json!({ "error": "unsupported_grant_type" })),
            }
        })
        .await
    }
}

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

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-connect-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("token")
}

#[tokio::test]
async fn a_workload_token_file_that_changes_is_read_anew_for_the_next_token() {
    watchdog(LIMIT, async {
        let servers = Servers::default();
        let server = servers.start().await;
        let file = scratch("workload");
        std::fs::write(&file, "workload-one\n").unwrap();
        let auth = Authorization::workload_identity("agent", AssertionSource::file(&file));
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();

        // The platform rotates the token; the server stops accepting the
        // access token obtained with the old one.
        std::fs::write(&file, "workload-two\n").unwrap();
        servers.accepted.lock().unwrap().clear();
        session.call_tool("x", &json!({})).await.unwrap();

        let grants = at(&server, "/as/token");
        assert_eq!(grants.len(), 2, "one grant each time a token was needed");
        for grant in &grants {
            assert_eq!(grant.field("grant_type").as_deref(), Some(JWT_BEARER));
            assert_eq!(grant.field("client_id").as_deref(), Some("agent"));
            assert_eq!(grant.field("resource"), Some(server.url()));
        }
        assert_eq!(
            grants[0].field("assertion").as_deref(),
            Some("workload-one")
        );
        assert_eq!(
            grants[1].field("assertion").as_deref(),
            Some("workload-two")
        );
        std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_missing_workload_token_is_a_typed_failure_before_any_token_request() {
    watchdog(LIMIT, async {
        let server = Servers::default().start().await;
        let missing = scratch("missing").with_file_name("absent");
        let auth = Authorization::workload_identity("agent", AssertionSource::file(missing));
        let error = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap_err();
        let ErrorKind::Auth(AuthError::Assertion(source)) = error.kind() else {
            panic!("{error:?}");
        };
        assert!(source.downcast_ref::<std::io::Error>().is_some());
        assert_eq!(error.failure().kind, FailureKind::Auth);
        assert!(at(&server, "/as/token").is_empty());
    })
    .await;
}

#[tokio::test]
async fn enterprise_managed_authorization_exchanges_at_the_idp_then_grants_the_id_jag() {
    watchdog(LIMIT, async {
        let server = Servers::default().start().await;
        let idp = IdentityProvider::new(&server.url_for("/idp/token"), "idp-client").unwrap();
        let assertion = AssertionSource::from_fn(|| async { Ok("canary-id-token".to_owned()) });
        let auth = Authorization::enterprise_managed(idp, assertion)
            .with_client_id("mcp-client")
            .with_client_secret("canary-secret");
        let session = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap();
        session.call_tool("x", &json!({})).await.unwrap();

        let exchange = &at(&server, "/idp/token")[0];
        for (field, value) in [
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("subject_token", "canary-id-token"),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("client_id", "idp-client"),
        ] {
            assert_eq!(exchange.field(field).as_deref(), Some(value), "{field}");
        }
        assert_eq!(
            exchange.field("audience"),
            Some(server.url_for("/as")),
            "the ID-JAG is for the MCP server's authorization server"
        );
        assert_eq!(exchange.field("resource"), Some(server.url()));
        let grant = &at(&server, "/as/token")[0];
        assert_eq!(grant.field("grant_type").as_deref(), Some(JWT_BEARER));
        assert_eq!(
            grant.field("assertion").as_deref(),
            Some("id-jag-for-canary-id-token")
        );
        assert!(
            grant
                .header("authorization")
                .is_some_and(|h| h.starts_with("Basic ")),
            "the MCP client authenticates with its secret"
        );
        assert!(
            exchange.header("authorization").is_none(),
            "nothing of the MCP client's goes to the IdP"
        );
    })
    .await;
}

#[tokio::test]
async fn an_identity_provider_refusing_the_exchange_is_a_typed_failure() {
    watchdog(LIMIT, async {
        let server = Servers {
            idp_refuses: true,
            ..Servers::default()
        }
        .start()
        .await;
        let idp = IdentityProvider::new(&server.url_for("/idp/token"), "idp-client").unwrap();
        let assertion = AssertionSource::from_fn(|| async { Ok("canary-id-token".to_owned()) });
        let auth = Authorization::enterprise_managed(idp, assertion).with_client_id("mcp-client");
        let error = Connector::new()
            .connect(request(&server, auth))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Auth(AuthError::TokenExchange {
                    status: 400,
                    error: "invalid_grant"
                })
            ),
            "{error:?}"
        );
        assert_eq!(error.failure().kind, FailureKind::Auth, "never retried");
        assert_eq!(at(&server, "/idp/token").len(), 1, "no retry");
        assert!(
            at(&server, "/as/token").is_empty(),
            "no grant without an ID-JAG"
        );
    })
    .await;
}

/// G14 for assertions: no workload token, identity assertion, ID-JAG,
/// secret or access token in any diagnostic, error or `Debug`.
#[test]
fn no_assertion_or_token_reaches_diagnostics_errors_or_debug() {
    let (capture, _guard, runtime) = crate::support::capture::on_this_thread();
    let mut printed = String::new();
    runtime.block_on(async {
        let stack = mcp_connect::EstablishBuilder::new(Connector::new()).build();
        for idp_refuses in [false, true] {
            let server = Servers {
                idp_refuses,
                ..Servers::default()
            }
            .start()
            .await;
            let file = scratch("canary-workload");
            std::fs::write(&file, "canary-workload-token").unwrap();
            let workload = Authorization::workload_identity("agent", AssertionSource::file(&file));
            let idp = IdentityProvider::new(&server.url_for("/idp/token"), "idp-client")
                .unwrap()
                .with_client_secret("canary-idp-secret");
            let enterprise = Authorization::enterprise_managed(
                idp.clone(),
                AssertionSource::from_fn(|| async { Ok("canary-id-token".to_owned()) }),
            )
            .with_client_id("mcp-client")
            .with_client_secret("canary-secret");
            let _ = write!(printed, "{workload:?} {enterprise:?} {idp:?}");
            for auth in [workload, enterprise] {
                let request = request(&server, auth);
                let _ = write!(printed, "{request:?}");
                match stack.connect(request).await {
                    Ok(session) => {
                        let _ = write!(printed, "{session:?}");
                    }
                    Err(error) => {
                        let _ = write!(printed, "{error} {error:?}");
                    }
                }
            }
            std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
        }
    });
    let traced = capture.text();
    assert!(traced.contains("authorize"), "the stage was traced");
    for canary in [
        "canary-workload-token",
        "canary-id-token",
        "id-jag-for",
        "access-for",
        "canary-secret",
        "canary-idp-secret",
        "/idp/token",
    ] {
        assert!(!traced.contains(canary), "{canary} traced: {traced}");
        assert!(!printed.contains(canary), "{canary} printed: {printed}");
    }
}

/// A resource of the testkit's issuer: `/mcp` wants a bearer JWT the
/// issuer signed for it (checked at its introspection endpoint), and
/// records whose token each request carried.
async fn resource_of(
    issuer: &mcp_connect::testkit::TokenIssuer,
) -> (ScriptServer, Arc<Mutex<Vec<String>>>) {
    let subjects: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&subjects);
    let legacy = LegacyServer::new();
    let as_url = issuer.issuer();
    let server = ScriptServer::start(move |r: &Recorded| {
        let base = format!("http://{}", r.header("host").unwrap_or_default());
        match r.route() {
            "/mcp" => match r
                .header("authorization")
                .and_then(|h| h.strip_prefix("Bearer "))
            {
                Some(token) => {
                    use base64::Engine as _;
                    let claims = token.split('.').nth(1).unwrap_or_default();
                    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(claims);
                    let claims: serde_json::Value =
                        serde_json::from_slice(&claims.unwrap_or_default()).unwrap_or_default();
                    let who = format!("{}/{}", claims["sub"], claims["act"]["sub"]);
                    seen.lock().unwrap().push(who);
                    legacy.respond(r)
                }
                None => Script::JsonWith(
                    401,
                    json!({ "error": "invalid_token" }),
                    vec![(
                        "www-authenticate",
                        format!(r#"Bearer resource_metadata="{base}/prm""#),
                    )],
                ),
            },
            "/prm" => Script::Json(
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [as_url] }),
            ),
            _ => Script::Status(404),
        }
    })
    .await;
    (server, subjects)
}

/// Issue 68: token exchange (RFC 8693) for a caller. Two principals get
/// two upstream tokens, each with its own subject and the client as the
/// actor, kept apart in one store (a principal's second connection uses
/// its own stored token, never the other's); the caller's token never
/// reaches the resource; a refused exchange is a typed authorization
/// failure.
#[tokio::test]
async fn token_exchange_acts_for_each_caller_and_keeps_their_tokens_apart() {
    watchdog(LIMIT, async {
        let issuer = mcp_connect::testkit::TokenIssuer::start().await;
        let (server, subjects) = resource_of(&issuer).await;
        let store = Arc::new(mcp_connect::store::MemoryTokenStore::new());
        let callers: Vec<(String, String)> = ["alice", "bob"]
            .iter()
            .map(|who| {
                (
                    who.to_string(),
                    issuer.access_token(who, "http://gateway.invalid/mcp", "", 300),
                )
            })
            .collect();
        let connector = Connector::new();
        let connect = |(who, token): &(String, String)| {
            let token = token.clone();
            let subject = AssertionSource::from_fn(move || {
                let token = token.clone();
                async move { Ok(token) }
            });
            let auth = Authorization::token_exchange("gateway", "canary-secret", subject)
                .with_token_store(Arc::clone(&store))
                .for_principal(format!("{}|{who}", issuer.issuer()));
            let request = ConnectRequest::http(&server.url())
                .unwrap()
                .with_pin(ProtocolVersion::V2025_11_25)
                .with_authorization(auth);
            connector.connect(request)
        };
        for caller in callers.iter().chain(callers.iter()) {
            connect(caller).await.unwrap();
        }
        let exchanged: Vec<_> = issuer
            .exchanges()
            .into_iter()
            .map(|(who, client, _)| (who, client))
            .collect();
        assert_eq!(
            exchanged,
            [
                ("alice".into(), "gateway".into()),
                ("bob".into(), "gateway".into())
            ],
            "one exchange per caller; the second connection used its stored token"
        );
        let seen = subjects.lock().unwrap().clone();
        assert!(!seen.is_empty());
        let by_caller: Vec<_> = seen.iter().map(|s| s.as_str()).collect();
        assert!(
            by_caller
                .iter()
                .all(|s| *s == r#""alice"/"gateway""# || *s == r#""bob"/"gateway""#),
            "{seen:?}"
        );
        assert!(by_caller.contains(&r#""bob"/"gateway""#));
        // The callers' own tokens never reached the resource.
        for r in server.recorded() {
            let presented = r.header("authorization").unwrap_or_default();
            assert!(callers
                .iter()
                .all(|(_, token)| !presented.contains(token.as_str())));
        }
        // A refused exchange is an authorization failure, never retried as
        // something else.
        issuer.refuse_exchanges(true);
        let carol = (
            "carol".to_owned(),
            issuer.access_token("carol", "http://gateway.invalid/mcp", "", 300),
        );
        let refused = connect(&carol).await.unwrap_err();
        assert_eq!(refused.failure().kind, FailureKind::Auth, "{refused:?}");
        assert!(
            matches!(refused.kind(), ErrorKind::Auth(AuthError::Token { .. })),
            "{refused:?}"
        );
    })
    .await;
}
