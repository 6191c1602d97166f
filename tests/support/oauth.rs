//! A scripted protected resource and OAuth authorization server on one
//! loopback origin: `/mcp` is a 2025 server that wants a bearer token, `/as`
//! an authorization server (metadata, registration, an authorization
//! endpoint that approves at once, a token endpoint that checks PKCE, the
//! client secret and refresh tokens).

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use mcp_connect::testkit::{LegacyServer, Recorded, Script, ScriptServer};
use serde_json::json;

pub const TOKEN: &str = "canary-access-token";
/// The assertions the scripted servers take.
pub const WORKLOAD_TOKEN: &str = "canary-workload-token";
pub const ID_TOKEN: &str = "canary-id-token";
pub const ID_JAG: &str = "canary-id-jag";

/// How the scripted authorization server behaves.
#[derive(Clone, Default)]
pub struct As {
    /// Redirect back with another `state`.
    pub wrong_state: bool,
    /// Issue a refresh token, and accept it.
    pub refresh: bool,
    /// The first access token is no longer accepted once this is set.
    pub expired: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Refresh-token rotation with reuse detection (OAuth 2.1): each
    /// refresh issues a new refresh token, and reusing an old one revokes
    /// the grant.
    pub rotation: Option<Arc<Rotation>>,
    /// DPoP: the token endpoint wants a proof and issues DPoP-bound tokens,
    /// `/mcp` accepts only `DPoP <token>` with a proof.
    pub dpop: Option<Dpop>,
    /// The `expires_in` of every token issued (3600 when not given).
    pub lifetime: Option<u64>,
    /// A call of the tool `slow` that is let in never answers.
    pub stall_slow: bool,
}

/// The rotating authorization server's books.
#[derive(Debug)]
pub struct Rotation {
    state: Mutex<Rotating>,
}

#[derive(Debug, Clone)]
pub struct Rotating {
    /// The one refresh token that works.
    pub current: String,
    /// Refreshes that got new tokens.
    pub refreshed: u32,
    /// `invalid_grant` answers to refreshes.
    pub invalid_grants: u32,
    /// Whether a reused refresh token revoked the grant.
    pub revoked: bool,
}

impl Default for Rotation {
    fn default() -> Self {
        Rotation {
            state: Mutex::new(Rotating {
                current: "canary-refresh-token".into(),
                refreshed: 0,
                invalid_grants: 0,
                revoked: false,
            }),
        }
    }
}

impl Rotation {
    pub fn books(&self) -> Rotating {
        self.state.lock().unwrap().clone()
    }

    /// The new refresh token for `presented`, or `None` (`invalid_grant`).
    fn refresh(&self, presented: &str) -> Option<String> {
        let mut state = self.state.lock().unwrap();
        if !state.revoked && presented == state.current {
            state.refreshed += 1;
            state.current = format!("canary-refresh-{}", state.refreshed);
            return Some(state.current.clone());
        }
        // A refresh token used twice: the grant is revoked.
        state.revoked = true;
        state.invalid_grants += 1;
        None
    }
}

/// How the DPoP servers treat nonces.
#[derive(Clone, Copy, Default)]
pub struct Dpop {
    /// The token endpoint's nonce (RFC 9449 §8).
    pub at_token: Nonce,
    /// The resource's nonce (RFC 9449 §9).
    pub at_resource: Nonce,
}

/// What a server asks of a proof's `nonce`.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub enum Nonce {
    /// Nothing.
    #[default]
    None,
    /// Its own nonce; a proof without it gets `use_dpop_nonce`.
    Required,
    /// `use_dpop_nonce` whatever the proof says.
    RefusedAlways,
}

pub const AS_NONCE: &str = "canary-as-nonce";
pub const RS_NONCE: &str = "canary-rs-nonce";

/// The claims of the request's DPoP proof, if it has one.
pub fn proof_claims(r: &Recorded) -> Option<serde_json::Value> {
    let proof = r.header("dpop")?;
    let claims = proof.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Whether the proof answers a server that wants `nonce` this way.
fn nonce_accepted(r: &Recorded, wanted: Nonce, nonce: &str) -> bool {
    let carried = proof_claims(r).and_then(|c| c["nonce"].as_str().map(str::to_owned));
    match wanted {
        Nonce::None => true,
        Nonce::Required => carried.as_deref() == Some(nonce),
        Nonce::RefusedAlways => false,
    }
}

/// One origin: `/mcp` is a 2025 server that wants `Bearer TOKEN` (or the
/// refreshed token), `/as` an authorization server.
fn server(behaviour: As, base: Arc<Mutex<String>>) -> impl Fn(&Recorded) -> Script + Send + Sync {
    let legacy = LegacyServer::new();
    let challenge = Arc::new(Mutex::new(String::new()));
    move |r: &Recorded| {
        let base = base.lock().unwrap().clone();
        let issuer = format!("{base}/as");
        match (r.method.as_str(), r.route()) {
            (_, "/mcp") if behaviour.dpop.is_some() => {
                let dpop = behaviour.dpop.unwrap_or_default();
                let presented = r.header("authorization") == Some(&format!("DPoP {TOKEN}"))
                    && r.header("dpop").is_some();
                if !presented {
                    Script::JsonWith(
                        401,
                        json!({ "error": "invalid_token" }),
                        vec![(
                            "www-authenticate",
                            format!(
                                r#"DPoP resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
                            ),
                        )],
                    )
                } else if !nonce_accepted(r, dpop.at_resource, RS_NONCE) {
                    Script::JsonWith(
                        401,
                        json!({ "error": "use_dpop_nonce" }),
                        vec![
                            (
                                "www-authenticate",
                                r#"DPoP error="use_dpop_nonce""#.to_owned(),
                            ),
                            ("dpop-nonce", RS_NONCE.to_owned()),
                        ],
                    )
                } else {
                    legacy.respond(r)
                }
            }
            (_, "/mcp") => {
                let bearer = r.header("authorization").unwrap_or_default();
                let expired = behaviour
                    .expired
                    .as_ref()
                    .is_some_and(|e| e.load(std::sync::atomic::Ordering::SeqCst));
                let accepted = (bearer == format!("Bearer {TOKEN}") && !expired)
                    || bearer == "Bearer canary-refreshed-token";
                if accepted && behaviour.stall_slow && r.body["params"]["name"] == "slow" {
                    Script::Stall
                } else if accepted {
                    legacy.respond(r)
                } else {
                    Script::JsonWith(
                        401,
                        json!({ "error": "invalid_token" }),
                        vec![(
                            "www-authenticate",
                            format!(
                                r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#
                            ),
                        )],
                    )
                }
            }
            ("GET", "/.well-known/oauth-protected-resource/mcp") => Script::Json(
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [issuer] }),
            ),
            ("GET", "/.well-known/oauth-authorization-server/as") => Script::Json(
                200,
                json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                    "registration_endpoint": format!("{issuer}/register"),
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
                    "authorization_response_iss_parameter_supported": true,
                    "scopes_supported": ["mcp:tools"],
                }),
            ),
            ("POST", "/as/register") => Script::Json(
                201,
                json!({ "client_id": "registered-client", "token_endpoint_auth_method": "none" }),
            ),
            ("GET", "/as/authorize") => {
                *challenge.lock().unwrap() = r.field("code_challenge").unwrap_or_default();
                let state = if behaviour.wrong_state {
                    "forged".to_owned()
                } else {
                    r.field("state").unwrap_or_default()
                };
                let mut back = url::Url::parse(&r.field("redirect_uri").unwrap()).unwrap();
                back.query_pairs_mut()
                    .append_pair("code", "canary-code")
                    .append_pair("state", &state)
                    .append_pair("iss", &issuer);
                Script::StatusWith(302, vec![("location", back.to_string())])
            }
            ("POST", "/as/token") => token(r, &behaviour, &challenge.lock().unwrap()),
            // An enterprise identity provider: the ID token for an ID-JAG.
            ("POST", "/idp/token")
                if r.field("subject_token").as_deref() == Some(ID_TOKEN)
                    && r.field("requested_token_type").as_deref()
                        == Some("urn:ietf:params:oauth:token-type:id-jag") =>
            {
                Script::Json(
                    200,
                    json!({
                        "access_token": ID_JAG,
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                        "token_type": "N_A",
                    }),
                )
            }
            ("POST", "/idp/token") => Script::Json(400, json!({ "error": "invalid_grant" })),
            _ => Script::Status(404),
        }
    }
}

fn token(r: &Recorded, behaviour: &As, challenge: &str) -> Script {
    if let Some(dpop) = behaviour.dpop {
        if r.header("dpop").is_none() {
            return Script::Json(400, json!({ "error": "invalid_dpop_proof" }));
        }
        if !nonce_accepted(r, dpop.at_token, AS_NONCE) {
            return Script::JsonWith(
                400,
                json!({ "error": "use_dpop_nonce" }),
                vec![("dpop-nonce", AS_NONCE.to_owned())],
            );
        }
    }
    let token_type = if behaviour.dpop.is_some() {
        "DPoP"
    } else {
        "Bearer"
    };
    let issued = |access: &str| {
        let mut body = json!({ "access_token": access, "token_type": token_type,
                    "expires_in": behaviour.lifetime.unwrap_or(3600) });
        if behaviour.refresh {
            body["refresh_token"] = json!("canary-refresh-token");
        }
        Script::Json(200, body)
    };
    let refused = || Script::Json(400, json!({ "error": "invalid_grant" }));
    match r.field("grant_type").as_deref() {
        Some("client_credentials") => {
            let expected = base64::engine::general_purpose::STANDARD.encode("svc:canary-secret");
            if r.header("authorization") == Some(&format!("Basic {expected}")) {
                issued(TOKEN)
            } else {
                refused()
            }
        }
        Some("authorization_code") => {
            let verifier = r.field("code_verifier").unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(<sha2::Sha256 as sha2::Digest>::digest(verifier.as_bytes()));
            if r.field("code").as_deref() == Some("canary-code") && computed == challenge {
                issued(TOKEN)
            } else {
                refused()
            }
        }
        // Workload identity and enterprise-managed authorization.
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
            if matches!(
                r.field("assertion").as_deref(),
                Some(WORKLOAD_TOKEN | ID_JAG)
            ) =>
        {
            issued(TOKEN)
        }
        Some("refresh_token") if behaviour.rotation.is_some() => {
            let rotation = behaviour.rotation.as_ref().unwrap();
            match rotation.refresh(&r.field("refresh_token").unwrap_or_default()) {
                Some(next) => Script::Json(
                    200,
                    json!({ "access_token": "canary-refreshed-token", "token_type": "Bearer",
                            "expires_in": 3600, "refresh_token": next }),
                ),
                None => refused(),
            }
        }
        Some("refresh_token")
            if r.field("refresh_token").as_deref() == Some("canary-refresh-token") =>
        {
            issued("canary-refreshed-token")
        }
        _ => refused(),
    }
}

pub async fn start(behaviour: As) -> ScriptServer {
    start_seen(behaviour, |_| {}).await
}

/// [`start`], with `seen` told of every request before it is answered.
pub async fn start_seen(
    behaviour: As,
    seen: impl Fn(&Recorded) + Send + Sync + 'static,
) -> ScriptServer {
    let base = Arc::new(Mutex::new(String::new()));
    let respond = server(behaviour, Arc::clone(&base));
    let server = ScriptServer::start(move |request: &Recorded| {
        seen(request);
        respond(request)
    })
    .await;
    *base.lock().unwrap() = server.url_for("");
    server
}

/// [`start`], with every URL the server publishes naming `host` instead of
/// 127.0.0.1 (a client reaches it through a resolver that maps the name).
pub async fn start_named(behaviour: As, host: &str) -> ScriptServer {
    let base = Arc::new(Mutex::new(String::new()));
    let server = ScriptServer::start(server(behaviour, Arc::clone(&base))).await;
    *base.lock().unwrap() = format!("http://{host}:{}", server.addr().port());
    server
}

/// Where a store files the tokens this server's authorization server
/// gives `client` (an id configured, or "" when registered dynamically).
pub fn key(server: &ScriptServer, client: &str) -> mcp_connect::store::TokenKey {
    mcp_connect::store::TokenKey::new(server.url(), server.url_for("/as"), client)
}

/// The grant types the token endpoint was asked for, in order.
pub fn grants(server: &ScriptServer) -> Vec<String> {
    server
        .recorded()
        .iter()
        .filter(|r| r.route() == "/as/token")
        .map(|r| r.field("grant_type").unwrap_or_default())
        .collect()
}

/// The scripted servers with refresh-token rotation, and a switch that
/// makes the first access token expire at the resource.
pub async fn rotating() -> (
    ScriptServer,
    Arc<Rotation>,
    Arc<std::sync::atomic::AtomicBool>,
) {
    let rotation = Arc::new(Rotation::default());
    let expired = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = start(As {
        refresh: true,
        rotation: Some(Arc::clone(&rotation)),
        expired: Some(Arc::clone(&expired)),
        ..As::default()
    })
    .await;
    (server, rotation, expired)
}

/// Every session calls a tool at the same instant; how many calls worked.
pub async fn call_together(sessions: &[mcp_connect::Session]) -> usize {
    let arguments = json!({});
    let calls = sessions.iter().map(|s| s.call_tool("x", &arguments));
    futures_util::future::join_all(calls)
        .await
        .iter()
        .filter(|r| r.is_ok())
        .count()
}

/// The person's part, counted (and slowed, so that the holders overlap).
pub struct CountingPerson {
    approve: mcp_connect::testkit::AutoApprove,
    asked: Arc<std::sync::atomic::AtomicUsize>,
    hangs: bool,
}

impl mcp_connect::auth::Authorize for CountingPerson {
    fn authorize(
        &self,
        url: String,
    ) -> futures_util::future::BoxFuture<'static, Result<String, mcp_connect::error::BoxError>>
    {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let hangs = self.hangs;
        let approved = self.approve.authorize(url);
        Box::pin(async move {
            if hangs {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            approved.await
        })
    }
}

pub fn person(asked: &Arc<std::sync::atomic::AtomicUsize>, hangs: bool) -> CountingPerson {
    CountingPerson {
        approve: mcp_connect::testkit::AutoApprove::new(),
        asked: Arc::clone(asked),
        hangs,
    }
}
