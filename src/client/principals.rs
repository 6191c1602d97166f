//! One client (or group) per principal: a stateful server's session is
//! never shared between principals.
//!
//! A session is state on the server: a counter, a browser page, a working
//! directory, the data a tool cached for whoever called it. Two users (or
//! tenants, or chat tabs) whose calls share one session share that state,
//! and a gateway that pools sessions across them leaks one user's to
//! another. So this crate never pools sessions across principals: a
//! [`PerPrincipal`] keeps one [`McpClient`] (or `ServerGroup`) per
//! principal, made on first use by the application's function (which puts
//! the principal's own authorization or headers on the request), and
//! closes the ones idle for longer than a bound. What is shared is what
//! carries no principal's state: the connector's connection pool, the era
//! cache (keyed by target), the stack.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;

use super::McpClient;

/// What a [`PerPrincipal`] keeps: a handle it can clone and close.
pub trait Closes: Clone + Send + Sync + 'static {
    /// Ends it: its sessions closed (errors are the handle's own to log).
    fn close(self) -> BoxFuture<'static, ()>;
}

impl Closes for McpClient {
    fn close(self) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = McpClient::close(&self).await;
        })
    }
}

type Make<K, T> = Arc<dyn Fn(&K) -> T + Send + Sync>;

/// One `T` (an [`McpClient`], a `ServerGroup`) per principal `K`, made on
/// first use and closed after `idle` without use: a session is state on
/// the server, so two principals sharing one would share that state.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_connect::client::PerPrincipal;
/// use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let stack = EstablishBuilder::new(Connector::new()).build();
/// let request = ConnectRequest::http("https://mcp.example/mcp")?;
/// let clients = PerPrincipal::new(move |user: &String| {
///     let own = request.clone().with_header("x-user", user).expect("a header value");
///     McpClient::builder(stack.clone(), own).build()
/// })
/// .with_idle_close(Duration::from_secs(600));
/// let alice = clients.get(&"alice".to_owned());
/// alice.call_tool("count", &serde_json::json!({})).await?;
/// # Ok(()) }
/// ```
pub struct PerPrincipal<K, T> {
    make: Make<K, T>,
    kept: Mutex<Kept<K, T>>,
    idle: Option<Duration>,
}

/// The handles, and the principals by last use: finding the idle ones
/// looks at those alone, however many principals there are.
struct Kept<K, T> {
    handles: HashMap<K, (T, Use)>,
    by_use: BTreeMap<Use, K>,
    next: u64,
}

/// When a handle was last used, made unique by a counter.
type Use = (Instant, u64);

impl<K, T> Default for Kept<K, T> {
    fn default() -> Self {
        Kept {
            handles: HashMap::new(),
            by_use: BTreeMap::new(),
            next: 0,
        }
    }
}

impl<K, T> PerPrincipal<K, T>
where
    K: Eq + Hash + Clone,
    T: Closes,
{
    /// One `make(principal)` per principal, kept until closed.
    pub fn new(make: impl Fn(&K) -> T + Send + Sync + 'static) -> Self {
        PerPrincipal {
            make: Arc::new(make),
            kept: Mutex::new(Kept::default()),
            idle: None,
        }
    }

    /// Closes a principal's handle once it has gone `idle` unused (at the
    /// next [`get`](Self::get) or [`sweep`](Self::sweep)).
    #[must_use]
    pub fn with_idle_close(mut self, idle: Duration) -> Self {
        self.idle = Some(idle);
        self
    }

    /// The principal's own handle: made on first use, the same afterwards.
    /// Its cost does not grow with the number of principals kept.
    pub fn get(&self, principal: &K) -> T {
        let now = Instant::now();
        let (handle, idle) = {
            let mut kept = self.kept();
            let idle = self.take_idle(&mut kept, now);
            let used = (now, kept.next);
            kept.next += 1;
            let kept = &mut *kept;
            let entry = match kept.handles.get_mut(principal) {
                Some(entry) => {
                    kept.by_use.remove(&entry.1);
                    entry.1 = used;
                    entry
                }
                None => kept
                    .handles
                    .entry(principal.clone())
                    .or_insert_with(|| ((self.make)(principal), used)),
            };
            kept.by_use.insert(used, principal.clone());
            (entry.0.clone(), idle)
        };
        close_in_background(idle);
        handle
    }

    /// Closes the handles idle longer than the bound; how many.
    pub fn sweep(&self) -> usize {
        let idle = {
            let mut kept = self.kept();
            self.take_idle(&mut kept, Instant::now())
        };
        let closed = idle.len();
        close_in_background(idle);
        closed
    }

    /// How many principals have a handle now.
    pub fn len(&self) -> usize {
        self.kept().handles.len()
    }

    /// Whether no principal has a handle.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes every handle.
    pub async fn close_all(&self) {
        let all: Vec<T> = {
            let mut kept = self.kept();
            kept.by_use.clear();
            kept.handles
                .drain()
                .map(|(_, (handle, _))| handle)
                .collect()
        };
        futures_util::future::join_all(all.into_iter().map(Closes::close)).await;
    }

    /// The handles unused for the idle bound, oldest first, taken out:
    /// only those are looked at.
    fn take_idle(&self, kept: &mut Kept<K, T>, now: Instant) -> Vec<T> {
        let Some(idle) = self.idle else {
            return Vec::new();
        };
        let mut stale = Vec::new();
        while let Some((used, _)) = kept.by_use.first_key_value() {
            if now.saturating_duration_since(used.0) < idle {
                break;
            }
            let (_, principal) = kept.by_use.pop_first().expect("looked at above");
            if let Some((handle, _)) = kept.handles.remove(&principal) {
                stale.push(handle);
            }
        }
        stale
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept<K, T>> {
        // Held for one look or one change, which cannot panic.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Closes `handles` in the background (a close waits on the server).
fn close_in_background<T: Closes>(handles: Vec<T>) {
    for handle in handles {
        tokio::spawn(handle.close());
    }
}

impl<K, T> std::fmt::Debug for PerPrincipal<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerPrincipal")
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone)]
    struct Handle;

    impl Closes for Handle {
        fn close(self) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    /// Issue 63, item 14: with idle closing on, every `get` scanned every
    /// principal under the lock; 20,000 principals made each call O(n)
    /// (seconds here). Now only the idle ones are looked at.
    #[tokio::test]
    async fn many_principals_cost_no_more_per_get() {
        let clients = PerPrincipal::new(|_: &u32| Handle).with_idle_close(Duration::from_secs(600));
        let started = std::time::Instant::now();
        for round in 0..2 {
            for principal in 0..20_000u32 {
                let _ = clients.get(&principal);
            }
            assert_eq!(clients.len(), 20_000, "round {round}");
        }
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "40,000 gets took {took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_idle_are_closed_oldest_first_and_the_used_kept() {
        let clients = PerPrincipal::new(|_: &u32| Handle).with_idle_close(Duration::from_secs(10));
        for principal in 0..3 {
            let _ = clients.get(&principal);
            tokio::time::advance(Duration::from_secs(4)).await;
        }
        // 0 was used 12 s ago, 1 8 s ago, 2 4 s ago.
        assert_eq!(clients.sweep(), 1);
        let _ = clients.get(&1);
        tokio::time::advance(Duration::from_secs(7)).await;
        // 1 was used 7 s ago, 2 11 s ago.
        assert_eq!(clients.sweep(), 1);
        assert_eq!(clients.len(), 1);
        let _ = clients.get(&3);
        assert_eq!(clients.len(), 2);
    }
}
