//! The bearer layer: what an authorized connection's HTTP client does.
//!
//! It wraps the transport's [`HttpClient`] (a tower layer like any other):
//! every request to the protected resource's origin carries the current
//! access token, and every 401 or 403 leaves its `WWW-Authenticate`
//! challenge where the authorization stage will read it. Requests to any
//! other origin go without the token: a token is only ever sent to the
//! server it was issued for.
//!
//! A DPoP-bound token (see `dpop.rs`) goes as `Authorization: DPoP` with a
//! fresh proof per request; a `use_dpop_nonce` refusal is answered here, by
//! sending the same request once more with the server's nonce, so no
//! transport needs to know DPoP exists.

use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use tower::ServiceBuilder;
use url::Url;

use super::challenge::Challenge;
use super::dpop::{self, DpopKey, Nonces, Party};
use super::tokens::Tokens;
use crate::store::StoreHealth;
use crate::transport::{HttpBody, HttpClient};

/// The token in force and the last challenge, shared by the bearer layer,
/// the authorization stage and every session of one [`Authorization`](super::Authorization).
pub(crate) struct AuthState {
    tokens: RwLock<Option<Tokens>>,
    header: RwLock<Option<Credential>>,
    challenge: Mutex<Option<(StatusCode, Challenge)>>,
    /// The client registered dynamically, and at which issuer: reused for
    /// refreshes and later authorizations there, never at another.
    registered: Mutex<Option<Registered>>,
    /// The DPoP nonces servers gave, per origin.
    pub(crate) nonces: Nonces,
    /// Whether the token store failed when last used: one warning per
    /// outage.
    pub(crate) store_health: StoreHealth,
}

impl Default for AuthState {
    fn default() -> Self {
        AuthState {
            tokens: RwLock::default(),
            header: RwLock::default(),
            challenge: Mutex::default(),
            registered: Mutex::default(),
            nonces: Nonces::default(),
            store_health: StoreHealth::new("tokens"),
        }
    }
}

/// What goes with a request to the resource: the `Authorization` value,
/// and for a DPoP-bound token the token itself (each proof hashes it).
#[derive(Clone)]
struct Credential {
    authorization: HeaderValue,
    dpop_bound: Option<Arc<str>>,
}

/// A dynamically registered client.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) issuer: String,
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
    pub(crate) method: Option<String>,
}

impl AuthState {
    pub(crate) fn set_tokens(&self, tokens: Option<Tokens>) {
        let header = tokens.as_ref().and_then(|t| {
            let scheme = if t.is_dpop_bound() { "DPoP" } else { "Bearer" };
            let mut value = HeaderValue::try_from(format!("{scheme} {}", t.access_token())).ok()?;
            value.set_sensitive(true);
            Some(Credential {
                authorization: value,
                dpop_bound: t.is_dpop_bound().then(|| Arc::from(t.access_token())),
            })
        });
        *self.header.write().expect("auth lock poisoned") = header;
        *self.tokens.write().expect("auth lock poisoned") = tokens;
    }

    pub(crate) fn tokens(&self) -> Option<Tokens> {
        self.tokens.read().expect("auth lock poisoned").clone()
    }

    /// The status and challenge of the last refusal, taken.
    pub(crate) fn take_challenge(&self) -> Option<(StatusCode, Challenge)> {
        self.challenge.lock().expect("auth lock poisoned").take()
    }

    /// Whether the last refusal asked for a DPoP nonce: one the bearer
    /// layer already answered once, so authorizing again would not help.
    pub(crate) fn refused_dpop_nonce(&self) -> bool {
        self.challenge
            .lock()
            .expect("auth lock poisoned")
            .as_ref()
            .is_some_and(|(_, c)| c.error.as_deref() == Some("use_dpop_nonce"))
    }

    /// Whether the last refusal asks for more scope (403
    /// `insufficient_scope`).
    pub(crate) fn wants_more_scope(&self) -> bool {
        self.challenge
            .lock()
            .expect("auth lock poisoned")
            .as_ref()
            .is_some_and(|(status, c)| {
                *status == StatusCode::FORBIDDEN && c.error.as_deref() == Some("insufficient_scope")
            })
    }

    /// The client registered at `issuer`, if any.
    pub(crate) fn registered_at(&self, issuer: &str) -> Option<Registered> {
        self.registered
            .lock()
            .expect("auth lock poisoned")
            .clone()
            .filter(|r| r.issuer == issuer)
    }

    pub(crate) fn set_registered(&self, registered: Registered) {
        *self.registered.lock().expect("auth lock poisoned") = Some(registered);
    }

    fn credential(&self) -> Option<Credential> {
        self.header.read().expect("auth lock poisoned").clone()
    }

    fn refused(&self, status: StatusCode, header: Option<&HeaderValue>) {
        let challenge = header
            .and_then(|h| h.to_str().ok())
            .and_then(Challenge::parse)
            .unwrap_or_default();
        *self.challenge.lock().expect("auth lock poisoned") = Some((status, challenge));
    }
}

/// `client` with the bearer layer for the resource at `server`; with
/// `dpop`, proofs for DPoP-bound tokens and the nonce retry.
pub(crate) fn layer(
    client: HttpClient,
    server: &Url,
    state: Arc<AuthState>,
    dpop: Option<DpopKey>,
) -> HttpClient {
    let resource = Resource::new(server);
    let layered = match dpop {
        None => bearer_only(client.clone(), resource, state),
        Some(key) => with_dpop(client.clone(), resource, state, key),
    };
    layered.keeping(&client)
}

/// The resource's origin: requests elsewhere never carry its token.
#[derive(Clone)]
struct Resource {
    scheme: String,
    host: String,
    port: Option<u16>,
    /// `scheme://host:port`, the key of its DPoP nonce.
    origin: Arc<str>,
}

impl Resource {
    fn new(server: &Url) -> Self {
        Resource {
            scheme: server.scheme().to_owned(),
            host: server.host_str().unwrap_or_default().to_ascii_lowercase(),
            port: server.port_or_known_default(),
            origin: Arc::from(server.origin().ascii_serialization()),
        }
    }

    fn owns(&self, uri: &http::Uri) -> bool {
        uri.scheme_str() == Some(self.scheme.as_str())
            && uri.host().map(str::to_ascii_lowercase).as_deref() == Some(self.host.as_str())
            && uri.port_u16().or(match uri.scheme_str() {
                Some("https") => Some(443),
                Some("http") => Some(80),
                _ => None,
            }) == self.port
    }
}

/// Keeps a 401 or 403's challenge for the authorization stage.
fn observe(state: &AuthState, response: &Response<HttpBody>) {
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        state.refused(status, response.headers().get(WWW_AUTHENTICATE));
    }
}

fn bearer_only(client: HttpClient, resource: Resource, state: Arc<AuthState>) -> HttpClient {
    let on_request = Arc::clone(&state);
    HttpClient::new(
        ServiceBuilder::new()
            .map_request(move |mut request: Request<Full<Bytes>>| {
                if resource.owns(request.uri()) {
                    if let Some(credential) = on_request.credential() {
                        request
                            .headers_mut()
                            .insert(AUTHORIZATION, credential.authorization);
                    }
                }
                request
            })
            .map_response(move |response: Response<HttpBody>| {
                observe(&state, &response);
                response
            })
            .service(client),
    )
}

fn with_dpop(
    client: HttpClient,
    resource: Resource,
    state: Arc<AuthState>,
    key: DpopKey,
) -> HttpClient {
    HttpClient::new(tower::service_fn(move |request: Request<Full<Bytes>>| {
        let (client, resource, state, key) = (
            client.clone(),
            resource.clone(),
            Arc::clone(&state),
            key.clone(),
        );
        async move {
            let credential = state.credential().filter(|_| resource.owns(request.uri()));
            let Some(credential) = credential else {
                let response = client.send(request).await?;
                observe(&state, &response);
                return Ok(response);
            };
            let retry = credential.dpop_bound.is_some().then(|| copy(&request));
            let first = client
                .send(presented(request, &credential, &key, &resource, &state)?)
                .await?;
            state
                .nonces
                .keep(Party::Resource, &resource.origin, first.headers());
            let asks = |response: &Response<HttpBody>| {
                response.status() == StatusCode::UNAUTHORIZED
                    && response.headers().contains_key(dpop::DPOP_NONCE)
                    && response
                        .headers()
                        .get_all(WWW_AUTHENTICATE)
                        .iter()
                        .filter_map(|v| v.to_str().ok())
                        .any(Challenge::asks_for_dpop_nonce)
            };
            let response = match retry {
                // The server wants its nonce in the proof (RFC 9449 §9):
                // once more, with a fresh proof that carries it.
                Some(again) if asks(&first) => {
                    drop(first);
                    let second = client
                        .send(presented(again, &credential, &key, &resource, &state)?)
                        .await?;
                    state
                        .nonces
                        .keep(Party::Resource, &resource.origin, second.headers());
                    second
                }
                _ => first,
            };
            observe(&state, &response);
            Ok::<_, crate::transport::error::BoxError>(response)
        }
    }))
}

/// `request` with the credential, and for a DPoP-bound token a fresh proof
/// with the resource's last nonce.
fn presented(
    mut request: Request<Full<Bytes>>,
    credential: &Credential,
    key: &DpopKey,
    resource: &Resource,
    state: &AuthState,
) -> Result<Request<Full<Bytes>>, crate::transport::error::BoxError> {
    if let Some(token) = &credential.dpop_bound {
        let nonce = state.nonces.get(Party::Resource, &resource.origin);
        let proof = key.proof(
            request.method().as_str(),
            &request.uri().to_string(),
            Some(token),
            nonce.as_deref(),
        )?;
        request.headers_mut().insert(dpop::DPOP, proof);
    }
    request
        .headers_mut()
        .insert(AUTHORIZATION, credential.authorization.clone());
    Ok(request)
}

/// A copy of `request` to send again (its body is in memory).
fn copy(request: &Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut copy = Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    copy
}
