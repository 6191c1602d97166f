//! The bearer layer: what an authorized connection's HTTP client does.
//!
//! It wraps the transport's [`HttpClient`] (a tower layer like any other):
//! every request to the protected resource's origin carries the current
//! access token, and every 401 or 403 leaves its `WWW-Authenticate`
//! challenge where the authorization stage will read it. Requests to any
//! other origin go without the token: a token is only ever sent to the
//! server it was issued for.

use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use tower::ServiceBuilder;
use url::Url;

use super::challenge::Challenge;
use super::tokens::Tokens;
use crate::transport::{HttpBody, HttpClient};

/// The token in force and the last challenge, shared by the bearer layer,
/// the authorization stage and every session of one [`Authorization`](super::Authorization).
#[derive(Default)]
pub(crate) struct AuthState {
    tokens: RwLock<Option<Tokens>>,
    header: RwLock<Option<HeaderValue>>,
    challenge: Mutex<Option<(StatusCode, Challenge)>>,
    /// The client registered dynamically, and at which issuer: reused for
    /// refreshes and later authorizations there, never at another.
    registered: Mutex<Option<Registered>>,
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
            let mut value = HeaderValue::try_from(format!("Bearer {}", t.access_token())).ok()?;
            value.set_sensitive(true);
            Some(value)
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

    fn header(&self) -> Option<HeaderValue> {
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

/// `client` with the bearer layer for the resource at `server`.
pub(crate) fn layer(client: HttpClient, server: &Url, state: Arc<AuthState>) -> HttpClient {
    let origin = (
        server.scheme().to_owned(),
        server.host_str().unwrap_or_default().to_ascii_lowercase(),
        server.port_or_known_default(),
    );
    let on_request = Arc::clone(&state);
    let tls = client.speaks_tls();
    let layered = HttpClient::new(
        ServiceBuilder::new()
            .map_request(move |mut request: Request<Full<Bytes>>| {
                let uri = request.uri();
                let same_origin = uri.scheme_str() == Some(origin.0.as_str())
                    && uri.host().map(str::to_ascii_lowercase).as_deref()
                        == Some(origin.1.as_str())
                    && uri.port_u16().or(match uri.scheme_str() {
                        Some("https") => Some(443),
                        Some("http") => Some(80),
                        _ => None,
                    }) == origin.2;
                if same_origin {
                    if let Some(value) = on_request.header() {
                        request.headers_mut().insert(AUTHORIZATION, value);
                    }
                }
                request
            })
            .map_response(move |response: Response<HttpBody>| {
                let status = response.status();
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    state.refused(status, response.headers().get(WWW_AUTHENTICATE));
                }
                response
            })
            .service(client),
    );
    if tls {
        layered
    } else {
        layered.without_tls()
    }
}
