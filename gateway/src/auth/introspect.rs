//! An opaque token checked by asking its issuer (RFC 7662): the answer
//! must say it is active, for this resource (RFC 8707), from this issuer
//! when it names one, and not past its expiry. The gateway authenticates
//! to the introspection endpoint as the client it is registered as.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::Deserialize;
use url::Url;

use super::fetch::Fetch;
use super::keys::{issuer_metadata, same_issuer};
use super::{Audience, Claims, TokenRefused};

/// The introspection endpoint and the gateway's credentials there.
pub(crate) struct Introspection {
    pub(crate) fetch: Fetch,
    pub(crate) issuer: Url,
    pub(crate) endpoint: std::sync::OnceLock<Url>,
    /// `Basic base64(client_id:client_secret)`.
    pub(crate) basic: String,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("issuer", &self.issuer.as_str())
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
}

impl Introspection {
    pub(crate) fn new(fetch: Fetch, issuer: Url, client_id: &str, client_secret: &str) -> Self {
        let pair = format!("{}:{}", form(client_id), form(client_secret));
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        );
        Introspection {
            fetch,
            issuer,
            endpoint: std::sync::OnceLock::new(),
            basic,
        }
    }

    /// The introspection endpoint, from the issuer's metadata once.
    async fn endpoint(&self) -> Result<Url, super::FetchError> {
        if let Some(endpoint) = self.endpoint.get() {
            return Ok(endpoint.clone());
        }
        let metadata = issuer_metadata(&self.fetch, &self.issuer).await?;
        let endpoint = (metadata.introspection_endpoint.as_deref())
            .and_then(|url| Url::parse(url).ok())
            .ok_or(super::FetchError::Answer {
                status: http::StatusCode::OK,
            })?;
        Ok(self.endpoint.get_or_init(|| endpoint).clone())
    }

    pub(crate) async fn verified(
        &self,
        token: &str,
        audience: &str,
    ) -> Result<Claims, TokenRefused> {
        let endpoint = self
            .endpoint()
            .await
            .map_err(TokenRefused::KeysUnavailable)?;
        let form = [("token", token), ("token_type_hint", "access_token")];
        let answer: Answer = (self.fetch.post_form(&endpoint, &form, Some(&self.basic)))
            .await
            .map_err(TokenRefused::KeysUnavailable)?;
        if !answer.active {
            return Err(TokenRefused::Inactive);
        }
        if answer
            .iss
            .as_deref()
            .is_some_and(|iss| !same_issuer(iss, &self.issuer))
        {
            return Err(TokenRefused::Issuer);
        }
        let aud = answer.aud.ok_or(TokenRefused::Audience)?;
        if !aud.names(audience) {
            return Err(TokenRefused::Audience);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if answer.exp.is_some_and(|exp| exp <= now) {
            return Err(TokenRefused::Expired);
        }
        Ok(Claims {
            sub: answer.sub.ok_or(TokenRefused::Malformed)?,
            iss: answer.iss.unwrap_or_else(|| self.issuer.to_string()),
            scope: answer.scope,
            scp: None,
        })
    }
}

/// RFC 6749 §2.3.1: the client's id and secret form-encoded before Basic.
fn form(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
