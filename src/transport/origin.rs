//! An origin (scheme, host, port): what credentials and sockets are bound
//! to. Used by the redirect rules and by a replica's request.

use std::fmt;

use http::uri::{Authority, Scheme};
use http::Uri;

/// An origin: scheme, host and port (the default port filled in).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    scheme: Scheme,
    authority: Authority,
    port: u16,
}

impl Origin {
    pub(crate) fn of(uri: &Uri) -> Option<Origin> {
        let scheme = uri.scheme()?.clone();
        let authority = uri.authority()?.clone();
        let port = authority
            .port_u16()
            .unwrap_or(if scheme == Scheme::HTTPS { 443 } else { 80 });
        Some(Origin {
            scheme,
            authority,
            port,
        })
    }

    pub(crate) fn same(&self, other: &Origin) -> bool {
        self.scheme == other.scheme
            && self.port == other.port
            && self
                .authority
                .host()
                .eq_ignore_ascii_case(other.authority.host())
    }
}

/// Origins are printed by scheme and port only: the host may be a secret
/// of the configuration as much as the path.
impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://…:{}", self.scheme, self.port)
    }
}

/// Whether `a` and `b` have one origin (scheme, host without case, port).
pub(crate) fn same_origin(a: &Uri, b: &Uri) -> bool {
    match (Origin::of(a), Origin::of(b)) {
        (Some(a), Some(b)) => a.same(&b),
        _ => false,
    }
}
