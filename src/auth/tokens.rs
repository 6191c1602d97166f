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
    /// `DPoP` for a token bound to the client's DPoP key (RFC 9449 §5);
    /// absent or `Bearer` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_type: Option<String>,
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
    #[serde(default)]
    token_type: Option<String>,
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
            token_type: self.token_type,
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

    /// Whether the access token is bound to the client's DPoP key (the
    /// token endpoint said `token_type: DPoP`): it goes with the `DPoP`
    /// scheme and a proof, never as a bearer token.
    pub fn is_dpop_bound(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
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
            .field("dpop_bound", &self.is_dpop_bound())
            .finish_non_exhaustive()
    }
}

/// Where tokens live between establishments and processes, keyed by the
/// protected resource's canonical URI.
///
/// A store that cannot keep what it is given says so: the authorization
/// stage goes on with the tokens it holds (they work for this process) and
/// logs a payload-free warning, and an application that must know (the
/// command tells the person, since the next run would ask again) wraps its
/// store to see the error.
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens kept for `resource`.
    fn load(&self, resource: &str) -> Option<Tokens>;
    /// Keeps `tokens` for `resource`.
    fn save(&self, resource: &str, tokens: &Tokens) -> Result<(), StoreError>;
    /// Forgets the tokens of `resource` (they were refused).
    fn forget(&self, resource: &str) -> Result<(), StoreError>;
}

/// A token store could not keep or forget tokens. The source says why
/// (for [`FileTokenStore`], the I/O error); never the tokens.
#[derive(Debug, thiserror::Error)]
#[error("the token store could not be written")]
pub struct StoreError(#[source] pub crate::transport::error::BoxError);

impl From<std::io::Error> for StoreError {
    fn from(error: std::io::Error) -> Self {
        StoreError(Box::new(error))
    }
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

    fn save(&self, resource: &str, tokens: &Tokens) -> Result<(), StoreError> {
        let mut map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(resource.to_owned(), tokens.clone());
        Ok(())
    }

    fn forget(&self, resource: &str) -> Result<(), StoreError> {
        let mut map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(resource);
        Ok(())
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
        store.save("r", &tokens).unwrap();
        assert_eq!(store.load("r"), Some(tokens));
        store.forget("r").unwrap();
        assert_eq!(store.load("r"), None);
    }
}

/// Tokens kept in a JSON file (for the command, and for services that
/// restart), created readable and writable by its owner only (`0600`) and
/// replaced whole on every save, so a crash never leaves half a file.
pub struct FileTokenStore {
    path: std::path::PathBuf,
    lock: Mutex<()>,
}

impl FileTokenStore {
    /// A store in `path` (created on the first save).
    pub fn new(path: impl Into<std::path::PathBuf>) -> Self {
        FileTokenStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    fn read(&self) -> HashMap<String, Tokens> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn write(&self, map: &HashMap<String, Tokens>) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let bytes = serde_json::to_vec(map).map_err(std::io::Error::other)?;
        let temporary = self.path.with_extension("tmp");
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .and_then(|mut file| file.write_all(&bytes).and_then(|()| file.sync_all()))?;
        std::fs::rename(&temporary, &self.path)
    }
}

impl fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTokenStore").finish_non_exhaustive()
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self, resource: &str) -> Option<Tokens> {
        let _held = self.lock.lock().ok()?;
        self.read().remove(resource)
    }

    fn save(&self, resource: &str, tokens: &Tokens) -> Result<(), StoreError> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut map = self.read();
        map.insert(resource.to_owned(), tokens.clone());
        Ok(self.write(&map)?)
    }

    fn forget(&self, resource: &str) -> Result<(), StoreError> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut map = self.read();
        if map.remove(resource).is_some() {
            self.write(&map)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod file_tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn a_file_store_is_private_and_survives_a_new_value() {
        let dir = std::env::temp_dir().join(format!("mcp-connect-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        let tokens = TokenResponse {
            access_token: "a".into(),
            refresh_token: Some("r".into()),
            expires_in: None,
            scope: None,
            token_type: Some("DPoP".into()),
        }
        .into_tokens(None);
        assert!(tokens.is_dpop_bound());
        let store = FileTokenStore::new(&path);
        store.save("https://x/mcp", &tokens).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            FileTokenStore::new(&path).load("https://x/mcp"),
            Some(tokens)
        );
        store.forget("https://x/mcp").unwrap();
        assert_eq!(store.load("https://x/mcp"), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Issue 24, item 3.13: a store that cannot be written says so.
    #[test]
    fn a_file_store_that_cannot_be_written_reports_it() {
        let path = std::env::temp_dir()
            .join(format!("mcp-connect-missing-{}", std::process::id()))
            .join("tokens.json");
        let tokens = TokenResponse {
            access_token: "a".into(),
            refresh_token: None,
            expires_in: None,
            scope: None,
            token_type: None,
        }
        .into_tokens(None);
        let error = FileTokenStore::new(&path)
            .save("https://x/mcp", &tokens)
            .unwrap_err();
        let io = std::error::Error::source(&error)
            .and_then(|e| e.downcast_ref::<std::io::Error>())
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }
}
