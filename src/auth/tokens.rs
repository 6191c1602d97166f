//! Tokens and where they are kept.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// What a token endpoint issued. `Debug` shows only which parts exist;
/// the values never leave through a format string.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    /// Seconds since the Unix epoch at which the access token expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
}

/// A token endpoint's success response (RFC 6749 §5.1).
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
}

impl TokenResponse {
    /// The tokens, keeping `previous`'s refresh token when the server did
    /// not issue a new one.
    pub(crate) fn into_tokens(self, previous: Option<&Tokens>) -> Tokens {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        Tokens {
            access_token: self.access_token,
            refresh_token: self
                .refresh_token
                .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
            scope: self.scope,
            expires_at: self.expires_in.map(|s| now.saturating_add(s)),
        }
    }
}

impl Tokens {
    /// The access token, for the `Authorization` header.
    pub fn access_token(&self) -> &str {
        &self.access_token
    }

    /// The refresh token, when one was issued.
    pub fn refresh_token(&self) -> Option<&str> {
        self.refresh_token.as_deref()
    }

    /// The scope granted, when the server said.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// This value without its refresh token (after the server refused it).
    pub(crate) fn without_refresh(mut self) -> Self {
        self.refresh_token = None;
        self
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("refresh_token", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Where tokens live between establishments and processes, keyed by the
/// protected resource's canonical URI.
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens kept for `resource`.
    fn load(&self, resource: &str) -> Option<Tokens>;
    /// Keeps `tokens` for `resource`.
    fn save(&self, resource: &str, tokens: &Tokens);
    /// Forgets the tokens of `resource` (they were refused).
    fn forget(&self, resource: &str);
}

/// Tokens kept in memory for the life of the process.
#[derive(Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<String, Tokens>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryTokenStore::default()
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTokenStore").finish_non_exhaustive()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, resource: &str) -> Option<Tokens> {
        self.tokens.lock().ok()?.get(resource).cloned()
    }

    fn save(&self, resource: &str, tokens: &Tokens) {
        if let Ok(mut map) = self.tokens.lock() {
            map.insert(resource.to_owned(), tokens.clone());
        }
    }

    fn forget(&self, resource: &str) {
        if let Ok(mut map) = self.tokens.lock() {
            map.remove(resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_token() {
        let response: TokenResponse = serde_json::from_str(
            r#"{"access_token":"secret-at","refresh_token":"secret-rt","expires_in":60,"token_type":"Bearer"}"#,
        )
        .unwrap();
        let tokens = response.into_tokens(None);
        let shown = format!("{tokens:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert_eq!(tokens.access_token(), "secret-at");
        let store = MemoryTokenStore::new();
        store.save("r", &tokens);
        assert_eq!(store.load("r"), Some(tokens));
        store.forget("r");
        assert_eq!(store.load("r"), None);
    }
}
