//! [`TokenKey`]: what a token store files tokens under.
//!
//! Tokens are issued by one authorization server, to one client, for one
//! protected resource, and (in a service acting for many people or
//! tenants) on behalf of one principal. Two of those differing means two
//! grants: a store shared by a fleet must never hand one's tokens to the
//! other, nor let one's refresh lease hold up the other. So the store sees
//! all four, not just the resource, and a shared backend can namespace its
//! keys by each (the Redis store does: one hashed segment per part).

use std::fmt;

/// Whose tokens, for what: the protected resource, the issuer, the client
/// and, when the application names one, the principal.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TokenKey {
    resource: String,
    issuer: String,
    client: String,
    principal: Option<String>,
}

impl TokenKey {
    /// The key of tokens `issuer` gave `client` for `resource`. `client`
    /// is the client id the application configured, its metadata document
    /// URL, or (registered dynamically) the empty string.
    pub fn new(
        resource: impl Into<String>,
        issuer: impl Into<String>,
        client: impl Into<String>,
    ) -> Self {
        TokenKey {
            resource: resource.into(),
            issuer: issuer.into(),
            client: client.into(),
            principal: None,
        }
    }

    /// The same key for tokens acting for `principal` (a person, a tenant).
    #[must_use]
    pub fn for_principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The protected resource's canonical URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The authorization server's issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The client the tokens were issued to ("" when registered
    /// dynamically).
    pub fn client(&self) -> &str {
        &self.client
    }

    /// The principal the tokens act for, when the application named one.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// One string naming all four parts unambiguously (a JSON array), for
    /// stores that file by a single string.
    pub fn canonical(&self) -> String {
        serde_json::to_string(&[
            self.issuer.as_str(),
            self.client.as_str(),
            self.principal.as_deref().unwrap_or(""),
            self.resource.as_str(),
        ])
        .expect("strings serialize")
    }
}

/// Shows the resource and issuer; never the principal, which may name a
/// person.
impl fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenKey")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("principal", &self.principal.is_some())
            .finish_non_exhaustive()
    }
}

/// What a lease is for: each kind is held apart, so a person being asked
/// does not hold up a refresh of other tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaseKind {
    /// Refreshing the tokens.
    Refresh,
    /// Asking the person for a new authorization.
    Authorization,
}

impl LeaseKind {
    /// A short name, for stores that file leases by string.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseKind::Refresh => "refresh",
            LeaseKind::Authorization => "authorization",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_tells_keys_apart_and_none_runs_into_another() {
        let base = TokenKey::new("https://r/mcp", "https://as", "svc");
        let others = [
            TokenKey::new("https://r/mcp2", "https://as", "svc"),
            TokenKey::new("https://r/mcp", "https://as2", "svc"),
            TokenKey::new("https://r/mcp", "https://as", "svc2"),
            base.clone().for_principal("alice"),
            // The parts' boundaries cannot be moved.
            TokenKey::new("https://r/mcp", "https://as\",\"svc", ""),
        ];
        for other in &others {
            assert_ne!(other, &base);
            assert_ne!(other.canonical(), base.canonical());
        }
        assert!(!format!("{:?}", base.clone().for_principal("alice")).contains("alice"));
    }
}
