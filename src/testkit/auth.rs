//! An [`Authorize`] for automated tests: the "person" approves at once.
//!
//! It `GET`s the authorization URL and returns where the authorization
//! server redirects (its `Location`), as a browser would after the person
//! clicked "allow". Useful against test authorization servers that approve
//! without asking (the conformance suite's, a local Keycloak with consent
//! off); never against a real one.

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::Full;

use crate::auth::Authorize;
use crate::error::BoxError;
use crate::transport::HttpClient;

/// Approves every authorization by following the first redirect.
#[derive(Clone)]
pub struct AutoApprove {
    client: HttpClient,
}

impl AutoApprove {
    /// Over the default HTTP client.
    pub fn new() -> Self {
        AutoApprove {
            // It reads the redirect itself.
            client: HttpClient::builder()
                .redirects(crate::transport::RedirectPolicy::none())
                .build(),
        }
    }
}

impl Default for AutoApprove {
    fn default() -> Self {
        AutoApprove::new()
    }
}

impl std::fmt::Debug for AutoApprove {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoApprove").finish_non_exhaustive()
    }
}

/// The authorization server did not redirect.
#[derive(Debug, thiserror::Error)]
#[error("the authorization server did not redirect (HTTP {0})")]
pub struct NoRedirect(pub u16);

impl Authorize for AutoApprove {
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<String, BoxError>> {
        let client = self.client.clone();
        Box::pin(async move {
            let request = http::Request::get(url).body(Full::new(Bytes::new()))?;
            let response = client.send(request).await?;
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            location.ok_or_else(|| NoRedirect(response.status().as_u16()).into())
        })
    }
}
