//! Where tokens live between establishments, processes and replicas.
//!
//! The store is asynchronous so that a shared backend (Redis, a database)
//! can implement it without blocking a runtime thread, and it has the two
//! operations a fleet needs to refresh without losing its authorization:
//!
//! - a **refresh lease** ([`TokenStore::lease`]): one holder at a time
//!   refreshes a resource's tokens; the others wait for the new ones. OAuth
//!   2.1 servers rotate refresh tokens and treat a reused one as theft,
//!   revoking the whole grant, so two holders refreshing with one refresh
//!   token at once would lose it for everybody;
//! - a **compare-and-set** ([`TokenStore::replace`]): the new tokens go in
//!   only if the stored ones are still those the refresh started from, so a
//!   holder whose lease ran out mid-refresh cannot overwrite newer tokens.
//!
//! A store's failure is never fatal: authorization goes on with the tokens
//! this process holds, and says so in one payload-free warning.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::token_key::{LeaseKind, TokenKey};
use super::tokens::Tokens;

/// A client registered dynamically at an authorization server (RFC 7591),
/// kept so that every holder of the store refreshes as the client its
/// tokens were issued to, and none registers again. `Debug` shows whether
/// there is a secret, never the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// The client id the server gave.
    pub client_id: String,
    /// The client secret, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint, when the server
    /// said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("client_secret", &self.client_secret.is_some())
            .finish_non_exhaustive()
    }
}

/// A lease granted by [`TokenStore::lease`] (to refresh, or to ask the
/// person): the holder's token, given back to [`TokenStore::release`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease(pub String);

/// Where tokens live, filed by [`TokenKey`] (resource, issuer, client and
/// principal). [`MemoryTokenStore`] coordinates every `Authorization` of
/// one process that shares it; a shared backend coordinates replicas.
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens kept under `key`, if any.
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>>;

    /// Keeps `tokens` under `key`.
    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Forgets the tokens under `key` (they were refused).
    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Keeps `tokens` under `key` unless the stored tokens no longer carry
    /// the refresh token `from`: `Ok(false)` when another holder stored
    /// newer ones meanwhile. With nothing stored (a store that lost its
    /// contents, a first save) the tokens go in.
    ///
    /// The default reads then writes, which is enough for a store only one
    /// process uses under its own lease; a shared backend does it
    /// atomically.
    fn replace<'a>(
        &'a self,
        key: &'a TokenKey,
        from: Option<&'a str>,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let stored = self.load(key).await?;
            if stored.is_some_and(|s| s.refresh_token() != from) {
                return Ok(false);
            }
            self.save(key, tokens).await.map(|()| true)
        })
    }

    /// The lease of `kind` on `key` for `lasting`, if no other holder has
    /// it (`Ok(None)`: wait for its tokens). A lease ends when released or
    /// when `lasting` has passed, so a holder that died frees it.
    ///
    /// The default grants every lease: a store nobody else uses needs none.
    fn lease<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lasting: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        let _ = (key, kind, lasting);
        Box::pin(async { Ok(Some(Lease(String::new()))) })
    }

    /// Gives back a lease (only its holder's token releases it).
    fn release<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = (key, kind, lease);
        Box::pin(async { Ok(()) })
    }

    /// The client registered at `issuer`, if a holder kept one.
    ///
    /// The default keeps none (each holder registers for itself).
    fn load_registration<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<Registration>, StoreError>> {
        let _ = issuer;
        Box::pin(async { Ok(None) })
    }

    /// Keeps the client registered at `issuer`.
    fn save_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = (issuer, registration);
        Box::pin(async { Ok(()) })
    }
}

impl<T: TokenStore> TokenStore for Arc<T> {
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        (**self).load(key)
    }
    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).save(key, tokens)
    }
    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).forget(key)
    }
    fn replace<'a>(
        &'a self,
        key: &'a TokenKey,
        from: Option<&'a str>,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).replace(key, from, tokens)
    }
    fn lease<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lasting: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        (**self).lease(key, kind, lasting)
    }
    fn release<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).release(key, kind, lease)
    }
    fn load_registration<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<Registration>, StoreError>> {
        (**self).load_registration(issuer)
    }
    fn save_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).save_registration(issuer, registration)
    }
}

/// A store failed. The source says why (for [`FileTokenStore`], the I/O
/// error; for a Redis store, what Redis or TLS said); never a value.
///
/// Two kinds, told apart by [`is_configuration`](Self::is_configuration):
/// a store that is down or slow fails for a while and is passed over (the
/// process goes on with what it holds), while one that cannot work as
/// configured (a refused login, an ACL that denies a command, an
/// untrusted certificate, a sealing key that opens nothing the fleet
/// wrote) fails until someone changes the configuration, and is reported
/// as such: the token store's fails the authorization
/// ([`AuthError::Store`](super::AuthError::Store), a configuration
/// failure, never retried).
#[derive(Debug, thiserror::Error)]
#[error("{}", if self.configuration { "the store cannot be used as configured" } else { "the token store failed" })]
pub struct StoreError {
    #[source]
    source: crate::transport::error::BoxError,
    configuration: bool,
}

impl StoreError {
    /// A failure that may pass (the store down, slow, or answering
    /// something unexpected).
    pub fn new(source: impl Into<crate::transport::error::BoxError>) -> Self {
        StoreError {
            source: source.into(),
            configuration: false,
        }
    }

    /// A failure that lasts until the configuration changes.
    pub fn configuration(source: impl Into<crate::transport::error::BoxError>) -> Self {
        StoreError {
            source: source.into(),
            configuration: true,
        }
    }

    /// Whether the store cannot work as configured (see the type's docs).
    pub fn is_configuration(&self) -> bool {
        self.configuration
    }
}

impl crate::store_health::StoreFailure for StoreError {
    fn is_configuration(&self) -> bool {
        self.configuration
    }
}

impl From<std::io::Error> for StoreError {
    fn from(error: std::io::Error) -> Self {
        StoreError::new(error)
    }
}

/// Tokens kept in memory for the life of the process. Every
/// `Authorization` given the same store (an `Arc` of it) shares its tokens
/// and its refresh leases, so concurrent refusals refresh once.
#[derive(Default)]
pub struct MemoryTokenStore {
    state: Mutex<Memory>,
}

#[derive(Default)]
struct Memory {
    tokens: HashMap<TokenKey, Tokens>,
    registrations: HashMap<String, Registration>,
    leases: HashMap<(TokenKey, LeaseKind), (u64, Instant)>,
    next_lease: u64,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryTokenStore::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Memory) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTokenStore").finish_non_exhaustive()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        let found = self.with(|m| m.tokens.get(key).cloned());
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.with(|m| m.tokens.insert(key.clone(), tokens.clone()));
        Box::pin(async { Ok(()) })
    }

    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>> {
        self.with(|m| m.tokens.remove(key));
        Box::pin(async { Ok(()) })
    }

    fn replace<'a>(
        &'a self,
        key: &'a TokenKey,
        from: Option<&'a str>,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let replaced = self.with(|m| {
            if m.tokens
                .get(key)
                .is_some_and(|stored| stored.refresh_token() != from)
            {
                return false;
            }
            m.tokens.insert(key.clone(), tokens.clone());
            true
        });
        Box::pin(async move { Ok(replaced) })
    }

    fn lease<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lasting: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        let now = Instant::now();
        let name = (key.clone(), kind);
        let granted = self.with(|m| {
            if m.leases.get(&name).is_some_and(|(_, until)| *until > now) {
                return None;
            }
            m.next_lease += 1;
            let id = m.next_lease;
            m.leases.insert(name, (id, now + lasting));
            Some(Lease(id.to_string()))
        });
        Box::pin(async move { Ok(granted) })
    }

    fn release<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let name = (key.clone(), kind);
        self.with(|m| {
            if m.leases
                .get(&name)
                .is_some_and(|(id, _)| id.to_string() == lease.0)
            {
                m.leases.remove(&name);
            }
        });
        Box::pin(async { Ok(()) })
    }

    fn load_registration<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<Registration>, StoreError>> {
        let found = self.with(|m| m.registrations.get(issuer).cloned());
        Box::pin(async move { Ok(found) })
    }

    fn save_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.with(|m| {
            m.registrations
                .insert(issuer.to_owned(), registration.clone())
        });
        Box::pin(async { Ok(()) })
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
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let found = self.read().remove(&key.canonical());
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let saved = {
            let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let mut map = self.read();
            map.insert(key.canonical(), tokens.clone());
            self.write(&map).map_err(StoreError::from)
        };
        Box::pin(async move { saved })
    }

    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>> {
        let forgotten = {
            let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let mut map = self.read();
            if map.remove(&key.canonical()).is_some() {
                self.write(&map).map_err(StoreError::from)
            } else {
                Ok(())
            }
        };
        Box::pin(async move { forgotten })
    }
}

#[cfg(test)]
mod file_tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::auth::tokens::TokenResponse;

    #[tokio::test]
    async fn a_file_store_is_private_and_survives_a_new_value() {
        let dir = std::env::temp_dir().join(format!("mcp-connect-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        let tokens = serde_json::from_str::<TokenResponse>(
            r#"{"access_token":"a","refresh_token":"r","token_type":"DPoP"}"#,
        )
        .unwrap()
        .into_tokens(None);
        assert!(tokens.is_dpop_bound());
        let key = TokenKey::new("https://x/mcp", "https://as", "");
        let store = FileTokenStore::new(&path);
        store.save(&key, &tokens).await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            FileTokenStore::new(&path).load(&key).await.unwrap(),
            Some(tokens)
        );
        store.forget(&key).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Issue 24, item 3.13: a store that cannot be written says so.
    #[tokio::test]
    async fn a_file_store_that_cannot_be_written_reports_it() {
        let path = std::env::temp_dir()
            .join(format!("mcp-connect-missing-{}", std::process::id()))
            .join("tokens.json");
        let tokens = serde_json::from_str::<TokenResponse>(r#"{"access_token":"a"}"#)
            .unwrap()
            .into_tokens(None);
        let error = FileTokenStore::new(&path)
            .save(&TokenKey::new("https://x/mcp", "https://as", ""), &tokens)
            .await
            .unwrap_err();
        let io = std::error::Error::source(&error)
            .and_then(|e| e.downcast_ref::<std::io::Error>())
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }
}
