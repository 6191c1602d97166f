//! Who may talk to the gateway at all, before a body is read: one of the
//! static bearer tokens, or (feature `oauth`) a token the resource server
//! accepts, whose principal the request then carries. A 2025 session is
//! its opener's: another principal naming it finds no such session.

use http::request::Parts;
use http::{header, HeaderValue};

use crate::checks;
use crate::inner::Inner;
use crate::principal::Principal;
use crate::reply::{self, Reply};

impl Inner {
    /// The request's principal (none without a resource server), or the
    /// answer that refuses it.
    pub(crate) async fn admit(&self, parts: &Parts) -> Result<Option<Principal>, Reply> {
        if let Err((status, failure)) = checks::bearer(&parts.headers, &self.tokens) {
            let mut response = reply::error(status, None, &failure);
            let challenge = HeaderValue::from_static("Bearer");
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
            return Err(response);
        }
        let principal = self.principal(parts).await?;
        // Only a resource server's sessions have an owner to check.
        if let (Some(session), Some(_)) = (checks::session_id(&parts.headers), &principal) {
            if !self.sessions.belongs(session, principal.as_ref()) {
                return Err(reply::session_not_found(None));
            }
        }
        Ok(principal)
    }

    #[cfg(feature = "oauth")]
    async fn principal(&self, parts: &Parts) -> Result<Option<Principal>, Reply> {
        let Some(server) = &self.resource_server else {
            return match is_metadata(parts) {
                true => Err(reply::status(http::StatusCode::NOT_FOUND)),
                false => Ok(None),
            };
        };
        // The metadata is public: it is how a client finds its issuer.
        if is_metadata(parts) {
            return Err(server.metadata_reply());
        }
        match server.authenticate(&parts.headers).await {
            Ok(principal) => Ok(Some(principal)),
            Err(refused) => Err(server.refusal(&refused)),
        }
    }

    #[cfg(not(feature = "oauth"))]
    async fn principal(&self, parts: &Parts) -> Result<Option<Principal>, Reply> {
        // A gateway that is no resource server has no metadata: 404, as
        // for any path that is not its own.
        match is_metadata(parts) {
            true => Err(reply::status(http::StatusCode::NOT_FOUND)),
            false => Ok(None),
        }
    }
}

fn is_metadata(parts: &Parts) -> bool {
    parts.method == http::Method::GET && parts.uri.path().starts_with(checks::METADATA_PATH)
}
