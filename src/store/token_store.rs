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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::StoreError;
use crate::store::Tokens;
use crate::store::{LeaseKind, TokenKey};

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
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
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
