//! The authorization stage's own HTTP requests: metadata `GET`s, form
//! `POST`s to the token endpoint, JSON `POST`s to the registration
//! endpoint, and the `GET` of an authorization URL for headless flows.
//!
//! They go through the connector's [`HttpClient`] *without* the bearer
//! layer: a token is never sent to an authorization server. Every request
//! has the handshake limit; every body is read within a size bound.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use serde::de::DeserializeOwned;
use url::Url;

use super::AuthError;
use crate::transport::HttpClient;

/// Metadata and token bodies larger than this are refused.
const BODY_LIMIT: usize = 256 * 1024;

#[derive(Clone)]
pub(crate) struct AuthHttp {
    pub(crate) client: HttpClient,
    pub(crate) timeout: Duration,
}

/// A response: its status, its headers and its body.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as `T`, when the status is a success and it parses.
    pub(crate) fn json<T: DeserializeOwned>(&self) -> Option<T> {
        if !self.status.is_success() {
            return None;
        }
        serde_json::from_slice(&self.body).ok()
    }

    /// The `error` member of an OAuth error body (RFC 6749 §5.2).
    pub(crate) fn oauth_error(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Refusal {
            #[serde(default)]
            error: Option<String>,
        }
        serde_json::from_slice::<Refusal>(&self.body).ok()?.error
    }
}

/// Whether a request to `url` may carry a secret: `https://`, or a host
/// that is a loopback address (127.0.0.0/8, `::1`) or `localhost`, where
/// nothing crosses a network. A name that merely resolves to a loopback
/// address does not count: the name is what a network could redirect.
pub(crate) fn may_carry_credentials(url: &Url) -> bool {
    if url.scheme() == "https" {
        return true;
    }
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

impl AuthHttp {
    async fn send(&self, request: Request<Full<Bytes>>) -> Result<Answer, AuthError> {
        let exchange = crate::transport::exchange(&self.client, request, BODY_LIMIT);
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok((parts, body))) => Ok(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            }),
            Ok(Err(error)) => Err(AuthError::Http(error)),
            Err(_) => Err(AuthError::TimedOut),
        }
    }

    pub(crate) async fn get(&self, url: &Url) -> Result<Answer, AuthError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|_| AuthError::BadUrl)?;
        self.send(request).await
    }

    /// A form `POST`, with HTTP Basic client authentication and a DPoP
    /// proof when given. Only to the token endpoint, and only over HTTPS or
    /// to this machine: every such request carries a credential.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
        proof: Option<http::HeaderValue>,
    ) -> Result<Answer, AuthError> {
        if !may_carry_credentials(url) {
            return Err(AuthError::InsecureEndpoint);
        }
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some((id, secret)) = basic {
            // RFC 6749 §2.3.1: each part form-encoded before base64.
            let encode =
                |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            use base64::Engine as _;
            let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
                "{}:{}",
                encode(id),
                encode(secret)
            ));
            let mut value = http::HeaderValue::try_from(format!("Basic {credentials}"))
                .map_err(|_| AuthError::BadUrl)?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        if let Some(proof) = proof {
            request = request.header(super::dpop::DPOP, proof);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|_| AuthError::BadUrl)?;
        self.send(request).await
    }

    pub(crate) async fn post_json(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<Answer, AuthError> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|_| AuthError::BadUrl)?;
        self.send(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::may_carry_credentials;

    #[test]
    fn only_https_or_this_machine_may_carry_credentials() {
        for ok in [
            "https://as.example/token",
            "http://127.0.0.1:8080/token",
            "http://127.9.9.9/token",
            "http://[::1]:9/token",
            "http://localhost:3000/token",
        ] {
            assert!(may_carry_credentials(&ok.parse().unwrap()), "{ok}");
        }
        for refused in [
            "http://as.example/token",
            "http://10.0.0.1/token",
            "http://localhost.evil.example/token",
            "http://127.0.0.1.nip.example/token",
        ] {
            assert!(
                !may_carry_credentials(&refused.parse().unwrap()),
                "{refused}"
            );
        }
    }
}
