//! Issue 30, item 1: DPoP (RFC 9449, SEP-1932) against the scripted
//! authorization server and resource: a proof on the token request, the
//! `DPoP` scheme and a fresh proof on every request to the resource, each
//! server's nonce honoured with one retry, and a nonce refused twice a typed
//! failure. Proofs and keys reach no diagnostic, error or `Debug`.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::Duration;

use base64::Engine as _;
use mcp_connect::auth::{AuthError, Authorization, DpopKey};
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::json;

use crate::support::oauth::{proof_claims, start, As, Dpop, Nonce, AS_NONCE, RS_NONCE, TOKEN};
use crate::support::{watchdog, Recorded, ScriptServer};

const LIMIT: Duration = Duration::from_secs(15);

fn request(server: &ScriptServer) -> ConnectRequest {
    let auth = Authorization::client_credentials("svc", "canary-secret")
        .with_dpop(DpopKey::generate().unwrap());
    ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_authorization(auth)
}

fn dpop(at_token: Nonce, at_resource: Nonce) -> As {
    As {
        dpop: Some(Dpop {
            at_token,
            at_resource,
        }),
        ..As::default()
    }
}

fn at(server: &ScriptServer, route: &str) -> Vec<Recorded> {
    server
        .recorded()
        .into_iter()
        .filter(|r| r.route() == route)
        .collect()
}

/// Requests to the resource that carried the token.
fn authorized(server: &ScriptServer) -> Vec<Recorded> {
    at(server, "/mcp")
        .into_iter()
        .filter(|r| r.header("authorization").is_some())
        .collect()
}

#[tokio::test]
async fn a_dpop_bound_token_goes_with_the_dpop_scheme_and_a_fresh_proof_per_request() {
    watchdog(LIMIT, async {
        let server = start(dpop(Nonce::None, Nonce::None)).await;
        let session = Connector::new().connect(request(&server)).await.unwrap();
        session.call_tool("x", &json!({})).await.unwrap();
        session.call_tool("x", &json!({})).await.unwrap();

        let token = &at(&server, "/as/token")[0];
        let claims = proof_claims(token).expect("a proof on the token request");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], format!("{}/as/token", server.url_for("")));
        assert!(claims.get("ath").is_none(), "no token to hash yet");

        let requests = authorized(&server);
        assert!(requests.len() >= 4, "initialize, initialized, two calls");
        let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(<sha2::Sha256 as sha2::Digest>::digest(TOKEN.as_bytes()));
        let mut jtis = HashSet::new();
        for r in &requests {
            assert_eq!(r.header("authorization"), Some(&*format!("DPoP {TOKEN}")));
            let claims = proof_claims(r).expect("a proof on every request");
            assert_eq!(claims["htm"], r.method.as_str());
            assert_eq!(claims["htu"], server.url());
            assert_eq!(claims["ath"], ath.as_str());
            assert!(jtis.insert(claims["jti"].as_str().unwrap().to_owned()));
        }
    })
    .await;
}

#[tokio::test]
async fn each_servers_nonce_is_honoured_with_one_retry_and_remembered() {
    watchdog(LIMIT, async {
        let server = start(dpop(Nonce::Required, Nonce::Required)).await;
        let session = Connector::new().connect(request(&server)).await.unwrap();
        session.call_tool("x", &json!({})).await.unwrap();

        let tokens = at(&server, "/as/token");
        assert_eq!(tokens.len(), 2, "one retry with the server's nonce");
        assert!(proof_claims(&tokens[0]).unwrap().get("nonce").is_none());
        assert_eq!(proof_claims(&tokens[1]).unwrap()["nonce"], AS_NONCE);

        let requests = authorized(&server);
        let without: Vec<_> = requests
            .iter()
            .filter(|r| proof_claims(r).unwrap().get("nonce").is_none())
            .collect();
        assert_eq!(without.len(), 1, "only the first request lacks the nonce");
        assert!(requests
            .iter()
            .skip(1)
            .all(|r| proof_claims(r).unwrap()["nonce"] == RS_NONCE));
        // Refused for its nonce, the request was sent once more, not
        // authorized again.
        assert_eq!(tokens.len(), 2);
    })
    .await;
}

#[tokio::test]
async fn an_authorization_server_refusing_its_own_nonce_twice_is_a_typed_failure() {
    watchdog(LIMIT, async {
        let server = start(dpop(Nonce::RefusedAlways, Nonce::None)).await;
        let error = Connector::new()
            .connect(request(&server))
            .await
            .unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Auth(AuthError::DpopNonceAtToken)),
            "{error:?}"
        );
        assert_eq!(error.failure().kind, FailureKind::Auth, "never retried");
        assert_eq!(at(&server, "/as/token").len(), 2, "one retry, no loop");
    })
    .await;
}

#[tokio::test]
async fn an_mcp_server_refusing_its_own_nonce_twice_is_a_typed_failure() {
    watchdog(LIMIT, async {
        let server = start(dpop(Nonce::None, Nonce::RefusedAlways)).await;
        let error = Connector::new()
            .connect(request(&server))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Auth(AuthError::DpopNonceAtResource)
            ),
            "{error:?}"
        );
        assert_eq!(error.failure().kind, FailureKind::Auth, "never retried");
        assert_eq!(authorized(&server).len(), 2, "one retry, no loop");
        assert_eq!(
            at(&server, "/as/token").len(),
            1,
            "the token was fine: no new authorization"
        );
    })
    .await;
}

#[tokio::test]
async fn an_authorization_server_without_the_keys_algorithm_gets_no_token_request() {
    watchdog(LIMIT, async {
        // The scripted metadata lists no DPoP algorithms: a key is sent.
        // A server listing only others is refused before any token request.
        let server = crate::support::ScriptServer::start(|r: &Recorded| {
            let base = format!("http://{}", r.header("host").unwrap_or_default());
            match r.route() {
                "/mcp" => crate::support::Script::JsonWith(
                    401,
                    json!({ "error": "invalid_token" }),
                    vec![(
                        "www-authenticate",
                        format!(r#"DPoP resource_metadata="{base}/prm""#),
                    )],
                ),
                "/prm" => crate::support::Script::Json(
                    200,
                    json!({ "resource": format!("{base}/mcp"), "authorization_servers": [format!("{base}/as")] }),
                ),
                "/.well-known/oauth-authorization-server/as" => crate::support::Script::Json(
                    200,
                    json!({
                        "issuer": format!("{base}/as"),
                        "token_endpoint": format!("{base}/as/token"),
                        "dpop_signing_alg_values_supported": ["RS256"],
                    }),
                ),
                _ => crate::support::Script::Status(404),
            }
        })
        .await;
        let error = Connector::new()
            .connect(request(&server))
            .await
            .unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Auth(AuthError::DpopAlgorithm)),
            "{error:?}"
        );
        assert!(at(&server, "/as/token").is_empty());
    })
    .await;
}

/// G14 for DPoP: no proof, key, token or nonce in any diagnostic, error
/// or `Debug`, on success and on both typed failures.
#[test]
fn no_proof_key_or_nonce_reaches_diagnostics_errors_or_debug() {
    let (capture, _guard, runtime) = crate::support::capture::on_this_thread();
    let mut printed = String::new();
    let mut proofs = Vec::new();
    runtime.block_on(async {
        let stack = mcp_connect::EstablishBuilder::new(Connector::new()).build();
        let key = DpopKey::generate().unwrap();
        let _ = write!(printed, "{key:?}");
        for behaviour in [
            dpop(Nonce::Required, Nonce::Required),
            dpop(Nonce::RefusedAlways, Nonce::None),
            dpop(Nonce::None, Nonce::RefusedAlways),
        ] {
            let server = start(behaviour).await;
            let request = request(&server);
            let _ = write!(printed, "{request:?}");
            match stack.connect(request).await {
                Ok(session) => {
                    session.call_tool("x", &json!({})).await.unwrap();
                    let _ = write!(printed, "{session:?}");
                }
                Err(error) => {
                    let _ = write!(printed, "{error} {error:?}");
                }
            }
            proofs.extend(
                server
                    .recorded()
                    .iter()
                    .filter_map(|r| r.header("dpop").map(str::to_owned)),
            );
        }
    });
    assert!(proofs.len() >= 6, "proofs were sent");
    let traced = capture.text();
    for proof in &proofs {
        let signature = proof.rsplit('.').next().unwrap();
        for text in [&traced, &printed] {
            assert!(!text.contains(proof.as_str()), "a proof leaked");
            assert!(!text.contains(signature), "a proof's signature leaked");
        }
    }
    for canary in [TOKEN, AS_NONCE, RS_NONCE, "canary-secret", "\"x\":", "jwk"] {
        assert!(!traced.contains(canary), "{canary} traced: {traced}");
        assert!(!printed.contains(canary), "{canary} printed: {printed}");
    }
}
