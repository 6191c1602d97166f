//! The JWT bearer grant (RFC 7523 §2.1) with an assertion from elsewhere:
//! no person, no stored secret of the client's own.
//!
//! - **Workload identity federation** (SEP-1933): the platform a service
//!   runs on (Kubernetes, a cloud's metadata service, SPIFFE) hands it a
//!   short-lived signed token; that token is the assertion.
//! - **Enterprise-managed authorization** (SEP-990, cross-app access): the
//!   application holds an identity assertion from the enterprise's identity
//!   provider (an ID token); a token exchange (RFC 8693) there turns it into
//!   an ID-JAG (identity assertion JWT authorization grant) for the MCP
//!   server's authorization server, which is then the assertion.
//!
//! Either way the assertion is read anew each time a token is needed, so a
//! rotated file or a refreshed variable is picked up, and it is never
//! stored: tokens from these grants are renewed by running the grant again.
//! A refused grant is the answer (no other grant is tried, nothing is
//! retried), as the extensions ask.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use url::Url;

use super::http::AuthHttp;
use super::AuthError;
use crate::transport::error::BoxError;

/// `grant_type` of the JWT bearer grant.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// `subject_token_type` of an access token (RFC 8693 §3).
pub(crate) const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

type Read = dyn Fn() -> BoxFuture<'static, Result<String, BoxError>> + Send + Sync;

/// Where an assertion (a workload token, an identity assertion) comes from.
/// It is read each time a token is needed, never kept. `Debug` shows the
/// kind of source only.
///
/// ```
/// use mcp_connect::auth::AssertionSource;
///
/// // Kubernetes projects a fresh service account token into this file.
/// let token = AssertionSource::file("/var/run/secrets/tokens/mcp-token");
/// # let _ = token;
/// ```
#[derive(Clone)]
pub struct AssertionSource {
    read: Arc<Read>,
    kind: &'static str,
}

impl AssertionSource {
    /// The contents of `path`, read anew on each use (surrounding
    /// whitespace trimmed): a platform that rotates the file is followed.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        Self::new("file", move || {
            let path = path.clone();
            Box::pin(async move {
                let text = tokio::fs::read_to_string(&path).await?;
                Ok(text.trim().to_owned())
            })
        })
    }

    /// The value of the environment variable `name`, read on each use.
    pub fn env(name: impl Into<String>) -> Self {
        let name = name.into();
        Self::new("environment", move || {
            let value = std::env::var(&name).map_err(BoxError::from);
            Box::pin(async move { value })
        })
    }

    /// What `read` returns, called on each use (a metadata service, a
    /// secrets manager, a value the application already holds).
    pub fn from_fn<F, Fut>(read: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<String, BoxError>> + Send + 'static,
    {
        Self::new("callback", move || Box::pin(read()))
    }

    fn new(
        kind: &'static str,
        read: impl Fn() -> BoxFuture<'static, Result<String, BoxError>> + Send + Sync + 'static,
    ) -> Self {
        AssertionSource {
            read: Arc::new(read),
            kind,
        }
    }

    /// The assertion, now. An empty one is as unusable as a missing one.
    pub(crate) async fn read(&self) -> Result<String, AuthError> {
        let value = (self.read)().await.map_err(AuthError::Assertion)?;
        if value.is_empty() {
            return Err(AuthError::Assertion("the assertion is empty".into()));
        }
        Ok(value)
    }
}

impl fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AssertionSource")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// The enterprise identity provider's token endpoint, where an identity
/// assertion is exchanged for an ID-JAG (SEP-990), and this client's
/// registration there. `Debug` shows neither URL nor secret.
#[derive(Clone)]
pub struct IdentityProvider {
    token_endpoint: Url,
    client_id: String,
    client_secret: Option<String>,
}

impl IdentityProvider {
    /// The provider's token endpoint and this client's id there. A URL
    /// that does not parse is [`AuthError::BadUrl`].
    pub fn new(token_endpoint: &str, client_id: impl Into<String>) -> Result<Self, AuthError> {
        Ok(IdentityProvider {
            token_endpoint: Url::parse(token_endpoint).map_err(|_| AuthError::BadUrl)?,
            client_id: client_id.into(),
            client_secret: None,
        })
    }

    /// This client's secret at the provider (HTTP Basic), for a
    /// confidential client.
    #[must_use]
    pub fn with_client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// Exchanges `assertion` (an ID token) for an ID-JAG addressed to the
    /// authorization server `audience`, for `resource` (RFC 8693 §2.1).
    pub(crate) async fn exchange(
        &self,
        http: &AuthHttp,
        assertion: &str,
        audience: &str,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<String, AuthError> {
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG),
            ("subject_token", assertion),
            ("subject_token_type", ID_TOKEN),
            ("audience", audience),
            ("resource", resource),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope));
        }
        let basic = match &self.client_secret {
            Some(secret) => Some((self.client_id.as_str(), secret.as_str())),
            None => {
                form.push(("client_id", &self.client_id));
                None
            }
        };
        let answer = http
            .post_form(&self.token_endpoint, &form, basic, None)
            .await?;
        #[derive(Deserialize)]
        struct Exchanged {
            access_token: String,
            #[serde(default)]
            issued_token_type: Option<String>,
        }
        match answer.json::<Exchanged>() {
            Some(exchanged)
                if exchanged.issued_token_type.as_deref().unwrap_or(ID_JAG) == ID_JAG =>
            {
                Ok(exchanged.access_token)
            }
            Some(_) => Err(AuthError::TokenExchange {
                status: answer.status.as_u16(),
                error: "unexpected issued_token_type",
            }),
            None => Err(AuthError::TokenExchange {
                status: answer.status.as_u16(),
                error: super::known_code(answer.oauth_error().as_deref()),
            }),
        }
    }
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("client_secret", &self.client_secret.is_some())
            .finish_non_exhaustive()
    }
}
