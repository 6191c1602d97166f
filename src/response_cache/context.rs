//! The authorization context a private result belongs to, as a
//! fingerprint: the same access token and the same target headers are the
//! same context; anything else is another.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use http::HeaderMap;

/// A fingerprint of who is asking. Holds no secret: 128 bits of a SHA-256
/// over a domain tag, the target's headers (names and values, sorted) and
/// the access token in force.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Context(Arc<str>);

impl Context {
    /// The context of requests with the target's own `headers` (none for
    /// stdio) and `token` (none when not authorizing).
    pub(crate) fn of(headers: Option<&HeaderMap>, token: Option<&str>) -> Context {
        let mut hash = Sha256::new();
        hash.update(b"mcp-connect authorization context v1\0");
        if let Some(headers) = headers {
            let mut pairs: Vec<(&str, &[u8])> = headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes()))
                .collect();
            pairs.sort_unstable();
            for (name, value) in pairs {
                hash.update(name.as_bytes());
                hash.update(b":");
                hash.update(value);
                hash.update(b"\0");
            }
        }
        hash.update(b"\0token\0");
        if let Some(token) = token {
            hash.update(token.as_bytes());
        }
        let digest = hash.finalize();
        Context(crate::transport::redact::hex(&digest[..16]).into())
    }

    /// The fingerprint, for keys.
    pub(crate) fn as_key(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Context(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ConnectRequest;

    #[test]
    fn another_token_or_header_is_another_context() {
        let plain = ConnectRequest::http("http://127.0.0.1:9/mcp").unwrap();
        let headed = plain.clone().with_header("x-tenant", "a").unwrap();
        let other = plain.clone().with_header("x-tenant", "b").unwrap();
        let a = Context::of(plain.target().headers(), Some("token-a"));
        assert_eq!(a, Context::of(plain.target().headers(), Some("token-a")));
        assert_ne!(a, Context::of(plain.target().headers(), Some("token-b")));
        assert_ne!(a, Context::of(plain.target().headers(), None));
        assert_ne!(
            Context::of(headed.target().headers(), None),
            Context::of(other.target().headers(), None)
        );
        assert!(!a.as_key().contains("token"));
        assert_eq!(a.as_key().len(), 32);
    }
}
