//! One authorization configuration bound to one server, and the one rule
//! for authorizing again after a refusal, shared by the establishment
//! (a 401 to `initialize`) and the established session (a 401 to a call).

use std::time::Duration;

use mcp_connect_layers::deadline::DeadlinePause;

use super::{AuthError, Authorization};
use crate::transport::HttpClient;

/// What one run of the stage did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Authorized {
    /// A refresh token obtained a new access token.
    Refreshed,
    /// A new authorization (a grant, possibly with the person).
    New,
}

/// An [`Authorization`] for one server, with the plain HTTP client its own
/// requests use (never the bearer layer: discovery and token requests must
/// not carry a token) and the limit of each of them.
#[derive(Clone)]
pub(crate) struct Authorizer {
    auth: Authorization,
    server: url::Url,
    client: HttpClient,
    limit: Duration,
}

impl Authorizer {
    pub(crate) fn new(
        auth: Authorization,
        server: url::Url,
        client: HttpClient,
        limit: Duration,
    ) -> Self {
        Authorizer {
            auth,
            server,
            client,
            limit,
        }
    }

    /// `client` presenting the token to this server's origin (the bearer
    /// layer, inline in the client: no box of its own).
    pub(crate) fn bearer(&self, client: HttpClient) -> HttpClient {
        client.with_credentials(self.auth.bearer_layer(&self.server).credentials())
    }

    /// Runs the authorization stage's work. `pause`, when given, stops the
    /// establishment deadline while a person is waited for.
    pub(crate) async fn run(
        &self,
        pause: Option<&DeadlinePause>,
        allow_new: bool,
    ) -> Result<Authorized, AuthError> {
        self.auth
            .run(
                &self.server,
                self.client.clone(),
                self.limit,
                pause,
                allow_new,
            )
            .await
    }

    /// Refreshes the tokens in force when they are about to expire (see
    /// [`REFRESH_AHEAD`](super::REFRESH_AHEAD)): before a request, so that
    /// no server sees an expired token, and a server that revokes a
    /// refresh token once its access token has expired never forces a new
    /// authorization. Costs nothing when the tokens are not expiring.
    pub(crate) async fn refresh_ahead(&self) -> Result<(), AuthError> {
        self.auth
            .refresh_ahead(&self.server, self.client.clone(), self.limit)
            .await
    }

    /// The access token in force, if any (for the authorization context's
    /// fingerprint, never to be printed).
    pub(crate) fn access_token(&self) -> Option<String> {
        self.auth
            .state
            .tokens()
            .map(|tokens| tokens.access_token().to_owned())
    }

    /// Whether a refusal with this HTTP status is one authorizing can
    /// cure: 401, or 403 asking for more scope.
    fn answers(&self, status: Option<u16>) -> bool {
        self.auth.can_answer(status)
    }
}

/// The rule for authorizing again, kept per establishment and per request:
/// at most [`Reauthorization::MAX`] authorizations (the first, a refresh of
/// a token the server refused, one step-up to more scope), of which at most
/// one asks for a new authorization (a person, or a new client). After
/// that the refusal is the answer.
#[derive(Debug, Default)]
pub(crate) struct Reauthorization {
    runs: u32,
    new_done: bool,
}

impl Reauthorization {
    /// Authorizations one establishment or one request runs at most.
    pub(crate) const MAX: u32 = 3;

    /// After a refusal with `status`: `Ok(None)` when it is the answer,
    /// `Ok(Some(allow_new))` when `authorizer` should run (again), where
    /// `allow_new` says whether it may start a new authorization, or the
    /// typed reason when the refusal is one authorizing cannot cure and
    /// that has a name of its own (a DPoP nonce refused after its retry).
    pub(crate) fn permit(
        &mut self,
        authorizer: &Authorizer,
        status: Option<u16>,
    ) -> Result<Option<bool>, AuthError> {
        if status == Some(401) && authorizer.auth.state.refused_dpop_nonce() {
            return Err(AuthError::DpopNonceAtResource);
        }
        if self.runs >= Self::MAX || !authorizer.answers(status) {
            return Ok(None);
        }
        self.runs += 1;
        Ok(Some(!self.new_done))
    }

    /// Records how an authorization permitted by [`permit`](Self::permit)
    /// ended.
    pub(crate) fn record(&mut self, outcome: Authorized) {
        self.new_done |= outcome == Authorized::New;
    }
}

/// The server URL authorization is keyed by, from an HTTP target's URL: the
/// one place that converts it. A URL that `url` cannot read is a
/// configuration error before any I/O.
pub(crate) fn server_url(url: &http::Uri) -> Result<url::Url, AuthError> {
    url::Url::parse(&url.to_string()).map_err(|_| AuthError::BadUrl)
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_the_url_crate_refuses_is_bad_once_and_for_all() {
        // `http::Uri` reads these; `url` (WHATWG) does not.
        for text in [
            "http://1.2.3.400/mcp",
            "http://xn--a.com/mcp",
            "http://[::1]x/mcp",
        ] {
            let uri: http::Uri = text.parse().unwrap();
            assert!(matches!(server_url(&uri), Err(AuthError::BadUrl)), "{text}");
        }
        assert!(server_url(&"http://127.0.0.1:3000/mcp".parse().unwrap()).is_ok());
    }
}
