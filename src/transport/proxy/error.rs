//! What a proxy did wrong, or what was wrong with the proxy setting.
//!
//! These say what happened, with the proxy's status, so nothing has to read
//! a message to decide (see `connector.rs` for why the tunnel is not
//! hyper-util's).

use super::super::error::BoxError;

/// A proxy failed or refused. Never carries the proxy's credentials, nor
/// anything the proxy sent beyond its status code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The proxy could not be reached: its name did not resolve, or the
    /// TCP connection to it failed (the source says which).
    #[error("could not reach the proxy")]
    Unreachable(#[source] BoxError),
    /// The proxy asked for credentials: none were configured, or it
    /// refused the ones sent. HTTP 407, or 401 to a `CONNECT` (which only
    /// the proxy answers; tinyproxy answers a wrong password so). A 401 to
    /// an `http://` target's request cannot be told from the origin's own
    /// and stays the origin's ([`FailureKind::Auth`](mcp_connect_layers::FailureKind::Auth)).
    #[error("the proxy requires authentication (HTTP {status})")]
    AuthenticationRequired {
        /// 407, or 401 to a `CONNECT`.
        status: u16,
    },
    /// The proxy answered the `CONNECT` for an `https://` target with
    /// another status than 2xx (a policy refusal, an origin it could not
    /// reach).
    #[error("the proxy refused the tunnel (HTTP {status})")]
    Refused {
        /// The proxy's status code.
        status: u16,
    },
    /// The proxy closed the connection, or answered something that is not
    /// HTTP, before the tunnel was open.
    #[error("the proxy broke off the tunnel")]
    Broken(#[source] BoxError),
    /// The proxy setting (explicit, or from the environment) cannot be used;
    /// nothing was sent.
    #[error("the proxy setting is unusable")]
    Setting(#[source] ProxyConfigError),
}

impl ProxyError {
    /// The proxy's HTTP status, when it answered with one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            ProxyError::AuthenticationRequired { status } => Some(*status),
            ProxyError::Refused { status } => Some(*status),
            _ => None,
        }
    }
}

/// A proxy URL that cannot be used. Names where it came from (the
/// environment variable, or the explicit setting), never the value, which
/// may hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting} is unusable: {problem}")]
pub struct ProxyConfigError {
    /// Where the URL came from: `HTTPS_PROXY`, `http_proxy`, ..., or
    /// `the proxy URL` for an explicit one.
    pub setting: &'static str,
    /// What is wrong with it.
    pub problem: ProxyUrlProblem,
}

/// What is wrong with a proxy URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyUrlProblem {
    /// It does not parse as a URL.
    NotAUrl,
    /// Its scheme is not `http://` (or none, which means `http://`). A TLS
    /// connection to the proxy itself (`https://`) and SOCKS are not
    /// supported.
    UnsupportedScheme,
    /// It names no host.
    NoHost,
    /// It has a path or a query, which a proxy URL does not.
    HasPath,
    /// Its port is not a number from 1 to 65535.
    BadPort,
}

impl std::fmt::Display for ProxyUrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProxyUrlProblem::NotAUrl => "not a URL",
            ProxyUrlProblem::UnsupportedScheme => "the scheme is not http://",
            ProxyUrlProblem::NoHost => "no host",
            ProxyUrlProblem::HasPath => "a proxy URL has no path or query",
            ProxyUrlProblem::BadPort => "the port is not from 1 to 65535",
        })
    }
}
