//! An OAuth 2.1 authorization server on loopback that issues ES256 JWT
//! access tokens: for testing a resource server (the gateway's), a client's
//! flows against real signatures, and token exchange.
//!
//! It serves its metadata (RFC 8414), its key set, dynamic registration,
//! an authorization endpoint that approves at once (PKCE S256 checked at
//! the token endpoint), `client_credentials`, token exchange (RFC 8693)
//! and introspection (RFC 7662). Tests mint tokens with any claims
//! directly ([`TokenIssuer::sign`]), or with a key the set does not list.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{Recorded, Script, ScriptServer};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// One ES256 key: its id, what signs, its public JWK.
struct Key {
    id: String,
    signing: EncodingKey,
    verifying: DecodingKey,
    jwk: Value,
}

impl Key {
    fn generate(id: String) -> Key {
        use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
        let rng = ring::rand::SystemRandom::new();
        let alg = &ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("a P-256 key");
        let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).expect("its pair");
        let point = pair.public_key().as_ref();
        let (x, y) = (&point[1..33], &point[33..65]);
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": id,
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
        });
        let verifying =
            DecodingKey::from_ec_components(&URL_SAFE_NO_PAD.encode(x), &URL_SAFE_NO_PAD.encode(y))
                .expect("its public key");
        Key {
            id,
            signing: EncodingKey::from_ec_der(pkcs8.as_ref()),
            verifying,
            jwk,
        }
    }
}

/// A code the authorization endpoint gave: who, for what, its challenge.
struct Code {
    subject: String,
    challenge: String,
    resource: Option<String>,
    scope: Option<String>,
}

#[derive(Default)]
struct Books {
    /// Listed in the key set; the first signs.
    listed: Vec<Key>,
    /// Signs, never listed.
    unlisted: Option<Key>,
    codes: HashMap<String, Code>,
    /// Every exchange granted: (subject, client, resource).
    exchanges: Vec<(String, String, String)>,
}

struct State {
    base: Mutex<String>,
    books: Mutex<Books>,
    next: AtomicU64,
    refuse_exchange: AtomicBool,
    key_set_fetches: AtomicU64,
    subject: Mutex<String>,
}

impl State {
    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn base(&self) -> String {
        self.base
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The authorization server; stops when dropped.
pub struct TokenIssuer {
    server: ScriptServer,
    state: Arc<State>,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer())
            .finish_non_exhaustive()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl TokenIssuer {
    /// Starts it on an ephemeral loopback port, with one listed key.
    pub async fn start() -> TokenIssuer {
        let state = Arc::new(State {
            base: Mutex::new(String::new()),
            books: Mutex::new(Books::default()),
            next: AtomicU64::new(1),
            refuse_exchange: AtomicBool::new(false),
            key_set_fetches: AtomicU64::new(0),
            subject: Mutex::new("person".into()),
        });
        state.books().listed.push(Key::generate("key-1".into()));
        let answering = Arc::clone(&state);
        let server = ScriptServer::start(move |request| answer(&answering, request)).await;
        *state.base.lock().unwrap_or_else(PoisonError::into_inner) =
            server.url_for("").trim_end_matches('/').to_owned();
        TokenIssuer { server, state }
    }

    /// Its issuer identifier (`http://127.0.0.1:PORT`).
    pub fn issuer(&self) -> String {
        self.state.base()
    }

    /// The server, for its recorded requests.
    pub fn server(&self) -> &ScriptServer {
        &self.server
    }

    /// A JWT of `claims`, signed by the current listed key.
    pub fn sign(&self, claims: &Value) -> String {
        let books = self.state.books();
        sign(&books.listed[0], claims)
    }

    /// A JWT of `claims` signed by a key the set does not list (until
    /// [`publish_unlisted`](Self::publish_unlisted)).
    pub fn sign_unlisted(&self, claims: &Value) -> String {
        let mut books = self.state.books();
        let id = format!("key-{}", books.listed.len() + 1);
        let key = books.unlisted.get_or_insert_with(|| Key::generate(id));
        sign(key, claims)
    }

    /// Lists the unlisted key first (a rotation).
    pub fn publish_unlisted(&self) {
        let mut books = self.state.books();
        if let Some(key) = books.unlisted.take() {
            books.listed.insert(0, key);
        }
    }

    /// An access token for `subject`, for `audience`, granting `scope`,
    /// valid for `lifetime` seconds from now (negative: expired).
    pub fn access_token(
        &self,
        subject: &str,
        audience: &str,
        scope: &str,
        lifetime: i64,
    ) -> String {
        let exp = now().saturating_add_signed(lifetime);
        self.sign(&json!({
            "iss": self.issuer(), "sub": subject, "aud": audience, "scope": scope,
            "iat": now(), "exp": exp, "jti": self.state.next.fetch_add(1, Ordering::Relaxed),
        }))
    }

    /// The subject the authorization endpoint approves (`person` unless
    /// set).
    pub fn approve_as(&self, subject: &str) {
        *self
            .state
            .subject
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = subject.into();
    }

    /// Refuse every token exchange with `invalid_grant` from now on.
    pub fn refuse_exchanges(&self, refuse: bool) {
        self.state.refuse_exchange.store(refuse, Ordering::Relaxed);
    }

    /// Every token exchange granted: (subject, client, resource).
    pub fn exchanges(&self) -> Vec<(String, String, String)> {
        self.state.books().exchanges.clone()
    }

    /// How often the key set was fetched.
    pub fn key_set_fetches(&self) -> u64 {
        self.state.key_set_fetches.load(Ordering::Relaxed)
    }
}

fn sign(key: &Key, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.id.clone());
    jsonwebtoken::encode(&header, claims, &key.signing).expect("a signed token")
}

fn answer(state: &State, request: &Recorded) -> Script {
    let base = state.base();
    match request.route() {
        "/.well-known/oauth-authorization-server" => Script::Json(
            200,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "introspection_endpoint": format!("{base}/introspect"),
                "jwks_uri": format!("{base}/jwks"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "client_credentials", TOKEN_EXCHANGE],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            }),
        ),
        "/jwks" => {
            state.key_set_fetches.fetch_add(1, Ordering::Relaxed);
            let keys: Vec<Value> = state.books().listed.iter().map(|k| k.jwk.clone()).collect();
            Script::Json(200, json!({ "keys": keys }))
        }
        "/register" => {
            let n = state.next.fetch_add(1, Ordering::Relaxed);
            let mut client = request.body.clone();
            client["client_id"] = json!(format!("client-{n}"));
            client["token_endpoint_auth_method"] = json!("none");
            Script::Json(201, client)
        }
        "/authorize" => authorize(state, request, &base),
        "/token" => token(state, request, &base),
        "/introspect" => introspect(state, request),
        _ => Script::Status(404),
    }
}

fn authorize(state: &State, request: &Recorded, base: &str) -> Script {
    let (Some(redirect), Some(challenge)) = (
        request.field("redirect_uri"),
        request.field("code_challenge"),
    ) else {
        return Script::Status(400);
    };
    let code = format!("code-{}", state.next.fetch_add(1, Ordering::Relaxed));
    let subject = state
        .subject
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    state.books().codes.insert(
        code.clone(),
        Code {
            subject,
            challenge,
            resource: request.field("resource"),
            scope: request.field("scope"),
        },
    );
    let mut location = url::Url::parse(&redirect).expect("a redirect URI");
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("iss", base);
    if let Some(state) = request.field("state") {
        location.query_pairs_mut().append_pair("state", &state);
    }
    Script::StatusWith(302, vec![("location", location.to_string())])
}

fn refused(error: &str) -> Script {
    Script::Json(400, json!({ "error": error }))
}

fn token(state: &State, request: &Recorded, base: &str) -> Script {
    let grant = request.field("grant_type").unwrap_or_default();
    let resource = request
        .field("resource")
        .or_else(|| request.field("audience"));
    let (subject, resource, scope, actor) = match grant.as_str() {
        "authorization_code" => {
            let code = request.field("code").unwrap_or_default();
            let Some(code) = state.books().codes.remove(&code) else {
                return refused("invalid_grant");
            };
            let verifier = request.field("code_verifier").unwrap_or_default();
            if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != code.challenge {
                return refused("invalid_grant");
            }
            (code.subject, resource.or(code.resource), code.scope, None)
        }
        "client_credentials" => match client_id(request) {
            Some(client) => (client, resource, request.field("scope"), None),
            None => return refused("invalid_client"),
        },
        TOKEN_EXCHANGE => {
            let Some(client) = client_id(request) else {
                return refused("invalid_client");
            };
            let presented = request.field("subject_token").unwrap_or_default();
            let Some(claims) = verified(state, &presented) else {
                return refused("invalid_grant");
            };
            if state.refuse_exchange.load(Ordering::Relaxed) {
                return refused("invalid_grant");
            }
            let subject = claims["sub"].as_str().unwrap_or_default().to_owned();
            let target = resource.clone().unwrap_or_default();
            (state.books().exchanges).push((subject.clone(), client.clone(), target));
            (subject, resource, request.field("scope"), Some(client))
        }
        _ => return refused("unsupported_grant_type"),
    };
    let mut claims = json!({
        "iss": base, "sub": subject, "aud": resource.unwrap_or_else(|| base.to_owned()),
        "iat": now(), "exp": now() + 3600, "jti": state.next.fetch_add(1, Ordering::Relaxed),
    });
    if let Some(scope) = &scope {
        claims["scope"] = json!(scope);
    }
    if let Some(actor) = actor {
        claims["act"] = json!({ "sub": actor });
    }
    let token = sign(&state.books().listed[0], &claims);
    let mut answer = json!({ "access_token": token, "token_type": "Bearer", "expires_in": 3600 });
    if grant == TOKEN_EXCHANGE {
        answer["issued_token_type"] = json!("urn:ietf:params:oauth:token-type:access_token");
    }
    if let Some(scope) = scope {
        answer["scope"] = json!(scope);
    }
    Script::Json(200, answer)
}

/// The client's id, from Basic authentication or the form.
fn client_id(request: &Recorded) -> Option<String> {
    let basic = request
        .header("authorization")
        .and_then(|v| v.strip_prefix("Basic "));
    let from_basic = basic
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|pair| pair.split_once(':').map(|(id, _)| id.to_owned()));
    from_basic.or_else(|| request.field("client_id"))
}

/// A token's claims when one of this issuer's keys signed it and it has
/// not expired (audience not checked: that is the caller's part).
fn verified(state: &State, token: &str) -> Option<Value> {
    let header = jsonwebtoken::decode_header(token).ok()?;
    let books = state.books();
    let key = books
        .listed
        .iter()
        .find(|k| Some(&k.id) == header.kid.as_ref())?;
    let mut validation = Validation::new(Algorithm::ES256);
    validation.validate_aud = false;
    let data = jsonwebtoken::decode::<Value>(token, &key.verifying, &validation).ok()?;
    Some(data.claims)
}

fn introspect(state: &State, request: &Recorded) -> Script {
    if client_id(request).is_none() {
        return Script::Status(401);
    }
    let token = request.field("token").unwrap_or_default();
    match verified(state, &token) {
        Some(mut claims) => {
            claims["active"] = json!(true);
            Script::Json(200, claims)
        }
        None => Script::Json(200, json!({ "active": false })),
    }
}
