//! The gateway as an OAuth 2.1 resource server (MCP authorization,
//! 2025-11-25 and 2026-07-28): it publishes its Protected Resource
//! Metadata (RFC 9728), answers a request without a valid token with 401
//! and a `WWW-Authenticate` challenge naming that metadata, and a token
//! without the scopes needed with 403 `insufficient_scope` naming them.
//!
//! A token is a JWT checked against the issuer's key set
//! ([`ResourceServer::jwt`]), or an opaque token its issuer vouches for
//! ([`ResourceServer::introspection`], RFC 7662); either way it must be
//! from the configured issuer and for this resource (its audience, RFC
//! 8707). Its subject and issuer are the request's [`Principal`].
//!
//! Nothing of a token is ever logged or kept, and no token goes to a
//! member: what acts upstream is the member's own credential.

mod fetch;
mod introspect;
mod jwt;
mod keys;

use std::time::Duration;

use http::{header, HeaderMap, HeaderValue, StatusCode};
use mcp_connect::transport::HttpClient;
use serde::Deserialize;
use url::Url;

pub use fetch::FetchError;

use crate::principal::Principal;
use crate::reply::{self, Reply, RpcFailure};
use fetch::Fetch;
use introspect::Introspection;
use keys::KeySet;

/// Why a request's token was not accepted. `Display` names the reason,
/// never the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenRefused {
    /// No `Authorization: Bearer` token.
    #[error("no bearer token")]
    Missing,
    /// Not a JWT, or a claim missing or of the wrong type.
    #[error("the token is malformed")]
    Malformed,
    /// Signed with `none`, a symmetric algorithm, or not the key's own.
    #[error("the token's algorithm is not accepted")]
    Algorithm,
    /// Signed by a key the issuer's set does not have, even refetched.
    #[error("the token's key is unknown")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    Signature,
    /// Past its expiry.
    #[error("the token has expired")]
    Expired,
    /// Not valid yet.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// From another issuer.
    #[error("the token is from another issuer")]
    Issuer,
    /// For another resource.
    #[error("the token is for another resource")]
    Audience,
    /// Its issuer says it is no longer active (introspection).
    #[error("the token is not active")]
    Inactive,
    /// Valid, without the scopes this gateway needs.
    #[error("the token lacks a scope needed ({needed})")]
    Scope {
        /// The scopes needed, space-separated.
        needed: String,
    },
    /// The issuer's metadata, keys or introspection could not be had.
    #[error("the issuer could not be asked")]
    KeysUnavailable(#[source] FetchError),
}

/// A token's claims as the resource server reads them.
#[derive(Debug, Deserialize)]
pub(crate) struct Claims {
    pub(crate) sub: String,
    pub(crate) iss: String,
    /// Space-separated (RFC 9068, RFC 8693).
    #[serde(default)]
    pub(crate) scope: Option<String>,
    /// A list, as some issuers write it.
    #[serde(default)]
    pub(crate) scp: Option<Vec<String>>,
}

/// An `aud` claim: one string or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    pub(crate) fn names(&self, resource: &str) -> bool {
        match self {
            Audience::One(one) => one == resource,
            Audience::Many(many) => many.iter().any(|a| a == resource),
        }
    }
}

enum Verifier {
    Jwt(KeySet),
    Introspection(Introspection),
}

/// The gateway's resource-server configuration: which issuer it trusts,
/// which resource it is, and the scopes every request needs.
pub struct ResourceServer {
    issuer: Url,
    resource: String,
    scopes: Vec<String>,
    leeway: Duration,
    verifier: Verifier,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.issuer.as_str())
            .field("resource", &self.resource)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// How long a request to the issuer may take.
const ISSUER_BOUND: Duration = Duration::from_secs(5);

impl ResourceServer {
    /// JWT access tokens from `issuer` for `resource` (this gateway's
    /// canonical URL, e.g. `https://gw.example/mcp`: the audience a token
    /// must name), verified with the keys the issuer's metadata points at,
    /// fetched through `client`. A token naming a key the set lacks makes
    /// it fetch the set again, at most once a minute
    /// ([`refetch_interval`](Self::refetch_interval)).
    pub fn jwt(issuer: Url, resource: impl Into<String>, client: HttpClient) -> Self {
        let fetch = Fetch {
            client,
            timeout: ISSUER_BOUND,
        };
        let keys = KeySet::new(fetch, issuer.clone(), Duration::from_secs(60));
        Self::with(issuer, resource.into(), Verifier::Jwt(keys))
    }

    /// Opaque tokens checked at `issuer`'s introspection endpoint (RFC
    /// 7662), the gateway authenticating as `client_id` with
    /// `client_secret`.
    pub fn introspection(
        issuer: Url,
        resource: impl Into<String>,
        client: HttpClient,
        client_id: &str,
        client_secret: &str,
    ) -> Self {
        let fetch = Fetch {
            client,
            timeout: ISSUER_BOUND,
        };
        let introspection = Introspection::new(fetch, issuer.clone(), client_id, client_secret);
        Self::with(
            issuer,
            resource.into(),
            Verifier::Introspection(introspection),
        )
    }

    fn with(issuer: Url, resource: String, verifier: Verifier) -> Self {
        ResourceServer {
            issuer,
            resource,
            scopes: Vec::new(),
            leeway: Duration::from_secs(30),
            verifier,
        }
    }

    /// The scopes every request's token must grant (none by default).
    #[must_use]
    pub fn required_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The clock skew forgiven on `exp` and `nbf` (default 30 s).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How soon the key set may be fetched again for a token naming a key
    /// it lacks (default a minute).
    #[must_use]
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        if let Verifier::Jwt(keys) = &mut self.verifier {
            keys.set_refetch(interval);
        }
        self
    }

    /// The resource this gateway is (the audience tokens must name).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Where the Protected Resource Metadata is served: the well-known
    /// path with the resource's path after it (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> String {
        let Ok(resource) = Url::parse(&self.resource) else {
            return String::new();
        };
        let path = resource.path().trim_end_matches('/');
        let mut url = resource.clone();
        url.set_path(&format!("{METADATA_PATH}{path}"));
        url.set_query(None);
        url.to_string()
    }

    /// The Protected Resource Metadata document.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer.as_str().trim_end_matches('/')],
            "scopes_supported": self.scopes,
            "bearer_methods_supported": ["header"],
        })
    }

    /// The principal a request's bearer token names, once the token holds.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, TokenRefused> {
        let token = crate::checks::bearer_token(headers).ok_or(TokenRefused::Missing)?;
        let claims = match &self.verifier {
            Verifier::Jwt(keys) => {
                let expected = jwt::Expected {
                    issuer: self.issuer.as_str().trim_end_matches('/'),
                    audience: &self.resource,
                    leeway: self.leeway.as_secs(),
                };
                jwt::verified(token, keys, &expected).await?
            }
            Verifier::Introspection(introspection) => {
                introspection.verified(token, &self.resource).await?
            }
        };
        let granted: Vec<String> = match (&claims.scope, claims.scp) {
            (Some(scope), _) => scope.split_ascii_whitespace().map(str::to_owned).collect(),
            (None, Some(scp)) => scp,
            (None, None) => Vec::new(),
        };
        if !self.scopes.iter().all(|needed| granted.contains(needed)) {
            let needed = self.scopes.join(" ");
            return Err(TokenRefused::Scope { needed });
        }
        Ok(Principal::new(&claims.iss, &claims.sub, granted))
    }

    /// The answer to a refused request: 401 with the challenge (403 for a
    /// missing scope, 503 when the issuer could not be asked).
    pub(crate) fn refusal(&self, refused: &TokenRefused) -> Reply {
        let metadata = self.metadata_url();
        let (status, challenge) = match refused {
            TokenRefused::Missing => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer resource_metadata=\"{metadata}\""),
            ),
            TokenRefused::Scope { needed } => (
                StatusCode::FORBIDDEN,
                format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{needed}\", \
                     resource_metadata=\"{metadata}\""
                ),
            ),
            TokenRefused::KeysUnavailable(_) => {
                let failure = RpcFailure::new(INTERNAL, "the token could not be checked");
                return reply::error(StatusCode::SERVICE_UNAVAILABLE, None, &failure);
            }
            _ => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\""),
            ),
        };
        let failure = RpcFailure::new(INVALID_REQUEST, refused.to_string());
        let mut response = reply::error(status, None, &failure);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The metadata document as a response, for a GET of its path.
    pub(crate) fn metadata_reply(&self) -> Reply {
        reply::json(StatusCode::OK, &self.metadata())
    }
}

use mcp_connect::protocol::codes::{INTERNAL_ERROR as INTERNAL, INVALID_REQUEST};

use crate::checks::METADATA_PATH;
