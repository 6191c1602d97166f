//! What each server turned out to speak, so the next connection skips what
//! it already knows.
//!
//! The cache is an explicit value, never a global: share one between
//! connectors by cloning it, persist it with [`EraCache::to_json`] and
//! [`EraCache::from_json`]. Entries are advisory: a connection that fails
//! under a cached verdict drops the entry and runs the full ladder once on a
//! fresh transport. Only unpinned, uncapped connections read or write it, so
//! a pin always wins over what was cached.
//!
//! Keys never hold secrets: a target's [`Target::identity`], which shows
//! an HTTP target's scheme, host, port and path and hashes everything that
//! can select a server or a principal (the whole URL with its query and
//! userinfo, the headers; a stdio command's program, arguments,
//! environment and working directory).
//!
//! Replicas share what they learn through an [`EraStore`]
//! ([`EraCache::with_store`]; `fleet::RedisEraStore` with the `redis`
//! feature): a verdict this cache does not hold is looked up there before
//! the ladder runs, and every verdict learnt or dropped is written there in
//! the background. A store that fails is passed over: the cache works as
//! if it had none.
//!
//! A modern verdict may carry the server's `server/discover` result with
//! its expiry ([`RememberedDiscover`], from the result's `ttlMs` and
//! `cacheScope`, SEP-2549). While it is fresh an establishment sends no
//! discover at all: the session starts from the remembered result and its
//! first request is the application's. A private result is remembered with
//! the fingerprint of the authorization context that fetched it (never the
//! token) and serves only that context. If the server refuses the
//! remembered version on that first request, the session fails it with
//! [`VersionError::RememberedRefused`](crate::error::VersionError::RememberedRefused)
//! and forgets the verdict; an [`McpClient`](crate::McpClient) then
//! establishes with the full ladder and sends the refused call once more
//! (the refusal says it never ran).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;

use crate::protocol::{DiscoverResult, ProtocolVersion};
use crate::request::Target;
use crate::response_cache::{CacheScope, Context, Hints};
use crate::store::StoreHealth;
use crate::store::{EraStore, StoreError};
pub use crate::store::{RememberedDiscover, Verdict};
use crate::transport::TransportKind;

impl RememberedDiscover {
    /// The result to remember of a discover answer, when its hints allow.
    pub(crate) fn of(result: &str, context: &Context) -> Option<RememberedDiscover> {
        let hints = Hints::of(result)?;
        let expires_ms = hints
            .expires()?
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_millis()
            .try_into()
            .ok()?;
        Some(RememberedDiscover {
            result: serde_json::from_str(result).ok()?,
            expires_ms,
            context: (hints.scope == CacheScope::Private).then(|| context.as_key().to_string()),
        })
    }

    /// The remembered result, when it is still fresh and was fetched in
    /// `context` (or is public).
    pub(crate) fn usable(&self, context: &Context) -> Option<DiscoverResult> {
        let now: u64 = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_millis()
            .try_into()
            .ok()?;
        let fits = self
            .context
            .as_deref()
            .is_none_or(|mine| mine == &*context.as_key());
        if now >= self.expires_ms || !fits {
            return None;
        }
        serde_json::from_value(self.result.clone()).ok()
    }
}

impl Verdict {
    pub(crate) fn of(
        kind: TransportKind,
        version: &ProtocolVersion,
        discover: Option<RememberedDiscover>,
    ) -> Option<Verdict> {
        let version = version.clone();
        if version.era() == crate::protocol::Era::Modern {
            return Some(Verdict::Modern { version, discover });
        }
        if kind == TransportKind::Memory {
            return None;
        }
        Some(Verdict::Legacy {
            transport: kind,
            version,
        })
    }
}

/// A shareable, serializable map from server to [`Verdict`].
#[derive(Clone)]
pub struct EraCache {
    entries: Arc<Mutex<HashMap<String, Verdict>>>,
    shared: Option<Arc<dyn EraStore>>,
    /// Whether the store failed when last used: one warning per outage.
    health: Arc<StoreHealth>,
}

impl Default for EraCache {
    fn default() -> Self {
        EraCache {
            entries: Arc::default(),
            shared: None,
            health: Arc::new(StoreHealth::new("eras")),
        }
    }
}

impl EraCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cache key of a target: its [`Target::identity`].
    pub fn key(target: &Target) -> String {
        target.identity()
    }

    /// This cache over `store`, shared with every replica that uses it.
    #[must_use]
    pub fn with_store(mut self, store: impl EraStore) -> Self {
        self.shared = Some(Arc::new(store));
        self
    }

    /// The verdict for a target, if this cache holds one.
    pub fn get(&self, target: &Target) -> Option<Verdict> {
        self.lock().get(&Self::key(target)).cloned()
    }

    /// The verdict for a target: this cache's, else its store's (kept here
    /// from then on). A store that fails is passed over.
    pub async fn lookup(&self, target: &Target) -> Option<Verdict> {
        if let Some(verdict) = self.get(target) {
            return Some(verdict);
        }
        let shared = self.shared.as_ref()?;
        let key = Self::key(target);
        let verdict = self.health.observe("read", shared.get(&key).await)??;
        self.lock().insert(key, verdict.clone());
        Some(verdict)
    }

    /// Records a verdict (and writes it to the store in the background).
    pub fn insert(&self, target: &Target, verdict: Verdict) {
        let key = Self::key(target);
        self.lock().insert(key.clone(), verdict.clone());
        self.in_background(move |store| Box::pin(async move { store.put(&key, &verdict).await }));
    }

    /// Forgets a target (here, and in the store in the background).
    pub fn remove(&self, target: &Target) {
        let key = Self::key(target);
        self.lock().remove(&key);
        self.in_background(move |store| Box::pin(async move { store.remove(&key).await }));
    }

    /// Writes every verdict this cache holds to its store, and waits: for a
    /// process about to exit, whose background writes may not have
    /// finished. Without a store, nothing.
    pub async fn save_to_store(&self) -> Result<(), StoreError> {
        let Some(store) = &self.shared else {
            return Ok(());
        };
        let entries: Vec<(String, Verdict)> = self
            .lock()
            .iter()
            .map(|(key, verdict)| (key.clone(), verdict.clone()))
            .collect();
        for (key, verdict) in entries {
            store.put(&key, &verdict).await?;
        }
        Ok(())
    }

    /// Runs a store write on the current runtime without waiting for it.
    fn in_background<F>(&self, write: F)
    where
        F: FnOnce(Arc<dyn EraStore>) -> BoxFuture<'static, Result<(), StoreError>> + Send + 'static,
    {
        let (Some(store), Ok(runtime)) = (&self.shared, tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let (store, health) = (Arc::clone(store), Arc::clone(&self.health));
        runtime.spawn(async move {
            health.observe("write", write(store).await);
        });
    }

    /// How many servers are remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The whole cache as JSON, for persisting.
    pub fn to_json(&self) -> String {
        let entries = self.lock();
        let sorted: std::collections::BTreeMap<_, _> = entries.iter().collect();
        serde_json::to_string_pretty(&sorted).expect("verdicts serialize")
    }

    /// A cache read back from [`to_json`](Self::to_json) output.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        let entries: HashMap<String, Verdict> = serde_json::from_str(json)?;
        Ok(EraCache {
            entries: Arc::new(Mutex::new(entries)),
            ..EraCache::default()
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Verdict>> {
        // Held for one map operation, which cannot panic: never poisoned.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for EraCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EraCache")
            .field("entries", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ConnectRequest;
    use crate::transport::StdioCommand;

    #[test]
    fn keys_hold_no_query_userinfo_or_arguments() {
        let request = ConnectRequest::http("http://user:pw@127.0.0.1:9/mcp?token=secret").unwrap();
        let key = EraCache::key(request.target());
        assert!(key.starts_with("http http://127.0.0.1:9/mcp "), "{key}");
        assert!(!key.contains("secret") && !key.contains("pw"), "{key}");
        let stdio = ConnectRequest::stdio(StdioCommand::new("server").args(["--token", "secret"]));
        let key = EraCache::key(stdio.target());
        assert!(
            key.starts_with("stdio ") && !key.contains("secret"),
            "{key}"
        );
    }

    /// Issue 40, items 1 and 2: whatever selects a server or a principal
    /// is part of the key.
    #[test]
    fn query_userinfo_headers_env_and_cwd_are_part_of_the_key() {
        let key = |url: &str| EraCache::key(ConnectRequest::http(url).unwrap().target());
        let base = key("http://127.0.0.1:9/mcp?api_key=a");
        assert_eq!(base, key("http://127.0.0.1:9/mcp?api_key=a"));
        assert_ne!(base, key("http://127.0.0.1:9/mcp?api_key=b"));
        assert_ne!(base, key("http://127.0.0.1:9/mcp"));
        // Userinfo becomes Basic credentials: the principal's, which the
        // authorization context of a private result holds.
        let with_user = ConnectRequest::http("http://u:p@127.0.0.1:9/mcp?api_key=a").unwrap();
        let without = ConnectRequest::http("http://127.0.0.1:9/mcp?api_key=a").unwrap();
        assert_ne!(
            Context::of(with_user.target().headers(), None),
            Context::of(without.target().headers(), None)
        );
        let headed = |value: &str| {
            let request = ConnectRequest::http("http://127.0.0.1:9/mcp")
                .unwrap()
                .with_header("x-tenant", value)
                .unwrap();
            EraCache::key(request.target())
        };
        assert_ne!(headed("a"), headed("b"));
        let stdio = |command: StdioCommand| EraCache::key(ConnectRequest::stdio(command).target());
        let plain = StdioCommand::new("node").args(["index.js"]);
        let work = stdio(plain.clone().env("GITHUB_TOKEN", "work"));
        assert_ne!(work, stdio(plain.clone().env("GITHUB_TOKEN", "personal")));
        assert_ne!(work, stdio(plain.clone()));
        assert_ne!(
            stdio(plain.clone().current_dir("/srv/a")),
            stdio(plain.clone().current_dir("/srv/b"))
        );
        // An argument's bytes cannot move into the next one unseen.
        assert_ne!(
            stdio(StdioCommand::new("a").args(["bc"])),
            stdio(StdioCommand::new("ab").args(["c"]))
        );
    }

    #[test]
    fn round_trips_through_json() {
        let cache = EraCache::new();
        let target = ConnectRequest::http("http://127.0.0.1:9/sse")
            .unwrap()
            .target()
            .clone();
        cache.insert(
            &target,
            Verdict::Legacy {
                transport: TransportKind::Sse,
                version: ProtocolVersion::V2024_11_05,
            },
        );
        let json = cache.to_json();
        assert!(json.contains("\"transport\": \"sse\""), "{json}");
        let back = EraCache::from_json(&json).unwrap();
        assert_eq!(back.get(&target), cache.get(&target));
        assert!(EraCache::from_json("{\"x\": {\"era\": \"ancient\"}}").is_err());
    }
}
