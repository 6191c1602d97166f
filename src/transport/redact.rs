//! Printing targets without their secrets, and fingerprints that reveal
//! none.
//!
//! URLs are shown as scheme, host, port and path only: userinfo and query
//! strings routinely carry credentials, so they are dropped by construction.

use std::fmt;

/// Displays a URI without userinfo, query or fragment.
pub(crate) struct SafeUri<'a>(pub(crate) &'a http::Uri);

impl fmt::Display for SafeUri<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let uri = self.0;
        if let Some(scheme) = uri.scheme_str() {
            write!(f, "{scheme}://")?;
        }
        if let Some(host) = uri.host() {
            f.write_str(host)?;
        }
        if let Some(port) = uri.port_u16() {
            write!(f, ":{port}")?;
        }
        f.write_str(uri.path())
    }
}

impl fmt::Debug for SafeUri<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// Lower-case hex of `bytes`, for fingerprints in keys.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// 128 bits of SHA-256 over `parts`, each with its length.
pub(crate) fn fingerprint(parts: &[&[u8]]) -> [u8; 16] {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    let mut revision = [0; 16];
    revision.copy_from_slice(&hash.finalize()[..16]);
    revision
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_userinfo_and_query() {
        let uri: http::Uri = "https://user:pw@example.com:8443/mcp?token=abc"
            .parse()
            .unwrap();
        assert_eq!(SafeUri(&uri).to_string(), "https://example.com:8443/mcp");
    }
}
