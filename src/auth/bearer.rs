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

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use tower::{Layer, Service, ServiceExt};
use url::Url;

use super::challenge::Challenge;
use super::dpop::{self, DpopKey, Nonces, Party};
use crate::store::StoreHealth;
use crate::store::Tokens;
use crate::transport::error::BoxError;
use crate::transport::{send_with, Credentials, Presented};

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
        *self.header.write().unwrap_or_else(PoisonError::into_inner) = header;
        *self.tokens.write().unwrap_or_else(PoisonError::into_inner) = tokens;
    }

    pub(crate) fn tokens(&self) -> Option<Tokens> {
        self.tokens
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The status and challenge of the last refusal, taken.
    pub(crate) fn take_challenge(&self) -> Option<(StatusCode, Challenge)> {
        self.challenge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Whether the last refusal asked for a DPoP nonce: one the bearer
    /// layer already answered once, so authorizing again would not help.
    pub(crate) fn refused_dpop_nonce(&self) -> bool {
        self.challenge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|(_, c)| c.error.as_deref() == Some("use_dpop_nonce"))
    }

    /// Whether the last refusal asks for more scope (403
    /// `insufficient_scope`).
    pub(crate) fn wants_more_scope(&self) -> bool {
        self.challenge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|(status, c)| {
                *status == StatusCode::FORBIDDEN && c.error.as_deref() == Some("insufficient_scope")
            })
    }

    /// The client registered at `issuer`, if any.
    pub(crate) fn registered_at(&self, issuer: &str) -> Option<Registered> {
        self.registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|r| r.issuer == issuer)
    }

    pub(crate) fn set_registered(&self, registered: Registered) {
        *self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(registered);
    }

    fn credential(&self) -> Option<Credential> {
        self.header
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn refused(&self, status: StatusCode, header: Option<&HeaderValue>) {
        let challenge = header
            .and_then(|h| h.to_str().ok())
            .and_then(Challenge::parse)
            .unwrap_or_default();
        *self
            .challenge
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((status, challenge));
    }
}

/// An authorization's token for one resource, as an HTTP client presents
/// it: `Authorization: Bearer` (or `DPoP` with a fresh proof) on requests
/// to the resource's origin, nothing on any other; every 401 or 403's
/// challenge kept for the authorization stage.
pub(crate) struct BearerCredentials {
    resource: Resource,
    state: Arc<AuthState>,
    dpop: Option<DpopKey>,
}

impl BearerCredentials {
    pub(crate) fn new(server: &Url, state: Arc<AuthState>, dpop: Option<DpopKey>) -> Self {
        BearerCredentials {
            resource: Resource::new(server),
            state,
            dpop,
        }
    }
}

impl Credentials for BearerCredentials {
    fn present(&self, request: &mut Request<Full<Bytes>>) -> Result<Presented, BoxError> {
        if !self.resource.owns(request.uri()) {
            return Ok(Presented::Nothing);
        }
        let Some(credential) = self.state.credential() else {
            return Ok(Presented::Nothing);
        };
        let presented = match (&credential.dpop_bound, &self.dpop) {
            (Some(token), Some(key)) => {
                let origin = &self.resource.origin;
                let nonce = self.state.nonces.get(Party::Resource, origin);
                let proof = key.proof(
                    request.method().as_str(),
                    &request.uri().to_string(),
                    Some(token),
                    nonce.as_deref(),
                )?;
                request.headers_mut().insert(dpop::DPOP, proof);
                Presented::Proof
            }
            _ => Presented::Token,
        };
        request
            .headers_mut()
            .insert(AUTHORIZATION, credential.authorization);
        Ok(presented)
    }

    fn answered(&self, status: StatusCode, headers: &HeaderMap, presented: Presented) -> bool {
        if presented == Presented::Nothing || self.dpop.is_none() {
            return false;
        }
        let origin = &self.resource.origin;
        self.state.nonces.keep(Party::Resource, origin, headers);
        presented == Presented::Proof
            && status == StatusCode::UNAUTHORIZED
            && headers.contains_key(dpop::DPOP_NONCE)
            && (headers.get_all(WWW_AUTHENTICATE).iter())
                .filter_map(|v| v.to_str().ok())
                .any(Challenge::asks_for_dpop_nonce)
    }

    fn settled(&self, status: StatusCode, headers: &HeaderMap) {
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            self.state.refused(status, headers.get(WWW_AUTHENTICATE));
        }
    }
}

/// An [`Authorization`](super::Authorization)'s token on any tower HTTP
/// client, for one MCP server ([`Authorization::bearer_layer`](super::Authorization::bearer_layer)):
/// requests to that server's origin carry the token in force
/// (`Authorization: Bearer`, or `DPoP` with a fresh proof per request and
/// the server's nonce asked for once), requests anywhere else carry
/// nothing, and a 401 or 403's challenge is kept for the authorization
/// that shares the token. The crate's own client presents it inline, with
/// no box of its own; this layer boxes one future per request.
#[derive(Clone)]
pub struct BearerLayer {
    credentials: Arc<BearerCredentials>,
}

impl BearerLayer {
    pub(crate) fn new(credentials: BearerCredentials) -> Self {
        BearerLayer {
            credentials: Arc::new(credentials),
        }
    }

    /// The credential the crate's own client presents.
    pub(crate) fn credentials(&self) -> Arc<dyn Credentials> {
        Arc::clone(&self.credentials) as Arc<dyn Credentials>
    }
}

impl std::fmt::Debug for BearerLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is never shown; the origin is the configuration's.
        f.debug_struct("BearerLayer")
            .field("origin", &self.credentials.resource.origin)
            .finish_non_exhaustive()
    }
}

impl<S> Layer<S> for BearerLayer {
    type Service = Bearer<S>;

    fn layer(&self, inner: S) -> Bearer<S> {
        Bearer {
            inner,
            credentials: Arc::clone(&self.credentials),
        }
    }
}

/// The service a [`BearerLayer`] makes.
#[derive(Clone)]
pub struct Bearer<S> {
    inner: S,
    credentials: Arc<BearerCredentials>,
}

impl<S> std::fmt::Debug for Bearer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bearer").finish_non_exhaustive()
    }
}

impl<S, B> Service<Request<Full<Bytes>>> for Bearer<S>
where
    S: Service<Request<Full<Bytes>>, Response = Response<B>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Full<Bytes>>) -> Self::Future {
        // The inner service that was made ready takes the first send; a
        // second one (a DPoP nonce asked for) goes through a clone.
        let spare = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, spare.clone());
        let credentials = Arc::clone(&self.credentials);
        Box::pin(async move {
            let mut ready = Some(ready);
            let send = move |request| {
                let service = ready.take();
                let spare = spare.clone();
                async move {
                    match service {
                        Some(mut service) => service.call(request).await.map_err(Into::into),
                        None => spare.oneshot(request).await.map_err(Into::into),
                    }
                }
            };
            send_with(credentials.as_ref(), request, send).await
        })
    }
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
