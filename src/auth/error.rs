//! Why authorization failed: the authorization stage's own error.

use std::time::Duration;

use crate::transport::error::{BoxError, TransportError};

/// Why authorization failed. Names the step and, where it helps, a status
/// or an OAuth error code from the specification's fixed list; never a
/// token, code, secret, URL or server message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A metadata, registration or token request failed on the way.
    #[error("an authorization request failed")]
    Http(#[source] TransportError),
    /// An authorization request took longer than the handshake limit.
    #[error("an authorization request timed out")]
    TimedOut,
    /// A URL in the metadata or the configuration is not usable.
    #[error("an authorization URL is not valid")]
    BadUrl,
    /// The Protected Resource Metadata names another resource than this
    /// server.
    #[error("the protected resource metadata names another resource")]
    ResourceMismatch,
    /// The Protected Resource Metadata names no authorization server.
    #[error("no authorization server is named")]
    NoAuthorizationServer,
    /// The authorization server publishes no metadata at any well-known URL.
    #[error("the authorization server publishes no metadata")]
    NoServerMetadata,
    /// The metadata's `issuer` is not the authorization server it came from.
    #[error("the authorization server metadata names another issuer")]
    IssuerMismatch,
    /// The metadata lacks an endpoint the flow needs.
    #[error("the authorization server metadata lacks the {0} endpoint")]
    MissingEndpoint(&'static str),
    /// The server does not support PKCE with S256.
    #[error("the authorization server does not support PKCE S256")]
    NoPkce,
    /// No client identity: nothing pre-registered, no metadata document
    /// the server accepts, no registration endpoint.
    #[error("no way to identify this client to the authorization server")]
    NoClientIdentity,
    /// Dynamic Client Registration was refused.
    #[error("client registration failed (HTTP {status})")]
    Registration {
        /// The status.
        status: u16,
    },
    /// The flow needs a person and there is no [`Authorize`](super::Authorize).
    #[error("the authorization code flow needs a person and none is configured")]
    NoPerson,
    /// The person's part failed.
    #[error("the person's authorization failed")]
    Person(#[source] BoxError),
    /// The person did not finish in time.
    #[error("the person did not authorize within {0:?}")]
    PersonTimeout(Duration),
    /// The authorization server redirected back with an error.
    #[error("the authorization was refused ({0})")]
    Refused(&'static str),
    /// The redirect back is not the answer to this authorization (`state`).
    #[error("the redirect back does not carry this authorization's state")]
    StateMismatch,
    /// The redirect back names another issuer (RFC 9207), or lacks the
    /// issuer the server said it would send.
    #[error("the redirect back does not come from this authorization server")]
    IssuerNotConfirmed,
    /// The redirect back has no code.
    #[error("the redirect back has no authorization code")]
    NoCode,
    /// The token endpoint refused.
    #[error("the token request failed (HTTP {status}, {error})")]
    Token {
        /// The status.
        status: u16,
        /// The OAuth error code, when it is one of the specification's.
        error: &'static str,
    },
    /// The server refused a token this client had just obtained, and there
    /// was no refresh to try: a new authorization is not started again.
    #[error("the server refuses the token it was just given")]
    TokenRefused,
    /// A token request (which carries a secret, an assertion, a code and
    /// its verifier, or a refresh token) would go to an endpoint that is
    /// not `https://` on a host other than a loopback address or
    /// `localhost`. The authorization spec requires HTTPS there; nothing
    /// was sent.
    #[error("the token endpoint is not https:// and not on this machine; nothing was sent")]
    InsecureEndpoint,
    /// The authorization server refused the DPoP nonce it had just given
    /// (`use_dpop_nonce` again on the token request sent once more with
    /// it, RFC 9449 §8). Not retried again.
    #[error("the authorization server refused the DPoP nonce it gave")]
    DpopNonceAtToken,
    /// The MCP server refused the DPoP nonce it had just given
    /// (`use_dpop_nonce` again on the request sent once more with it,
    /// RFC 9449 §9). Not retried again.
    #[error("the MCP server refused the DPoP nonce it gave")]
    DpopNonceAtResource,
    /// The authorization server lists the DPoP algorithms it accepts, and
    /// the key's is not among them.
    #[error("the authorization server does not accept this DPoP key's algorithm")]
    DpopAlgorithm,
    /// The assertion (a workload token, an identity assertion) could not
    /// be read from its source; the source's error says why (never the
    /// assertion).
    #[error("the assertion could not be read")]
    Assertion(#[source] BoxError),
    /// The identity provider refused to exchange the identity assertion
    /// for an ID-JAG (RFC 8693), or issued something else.
    #[error("the token exchange failed (HTTP {status}, {error})")]
    TokenExchange {
        /// The status.
        status: u16,
        /// The OAuth error code, when it is one of the specification's.
        error: &'static str,
    },
    /// Another holder of the token store (a replica, another session) is
    /// having the person authorize, and no tokens came within the
    /// person's limit. No second authorization was started.
    #[error("an authorization is pending elsewhere")]
    PendingElsewhere,
    /// The token store cannot work as configured (a refused Redis login,
    /// a sealing key the other replicas do not use, an untrusted
    /// certificate): a configuration failure, never retried. A store that
    /// is only down is passed over instead.
    #[error("the token store shared with other holders cannot be used")]
    Store(#[source] crate::store::StoreError),
    /// The configuration asks for something this client cannot do.
    #[error("unsupported authorization configuration: {0}")]
    Unsupported(&'static str),
}

/// An OAuth error code from the specifications' fixed list, or `"other"`:
/// what a server writes there is never echoed.
pub(crate) fn known_code(code: Option<&str>) -> &'static str {
    const KNOWN: &[&str] = &[
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "access_denied",
        "unsupported_response_type",
        "server_error",
        "temporarily_unavailable",
        "invalid_token",
        "insufficient_scope",
    ];
    code.and_then(|c| KNOWN.iter().find(|k| **k == c).copied())
        .unwrap_or("other")
}
