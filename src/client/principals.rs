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

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
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
///     McpClient::lazy(stack.clone(), own)
/// })
/// .with_idle_close(Duration::from_secs(600));
/// let alice = clients.get(&"alice".to_owned());
/// alice.call_tool("count", &serde_json::json!({})).await?;
/// # Ok(()) }
/// ```
pub struct PerPrincipal<K, T> {
    make: Make<K, T>,
    kept: Mutex<HashMap<K, (T, Instant)>>,
    idle: Option<Duration>,
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
            kept: Mutex::new(HashMap::new()),
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
    pub fn get(&self, principal: &K) -> T {
        let now = Instant::now();
        let (handle, idle) = {
            let mut kept = self.kept();
            let idle = self.take_idle(&mut kept, now);
            let entry = kept
                .entry(principal.clone())
                .or_insert_with(|| ((self.make)(principal), now));
            entry.1 = now;
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
        self.kept().len()
    }

    /// Whether no principal has a handle.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes every handle.
    pub async fn close_all(&self) {
        let all: Vec<T> = self.kept().drain().map(|(_, (handle, _))| handle).collect();
        futures_util::future::join_all(all.into_iter().map(Closes::close)).await;
    }

    fn take_idle(&self, kept: &mut HashMap<K, (T, Instant)>, now: Instant) -> Vec<T> {
        let Some(idle) = self.idle else {
            return Vec::new();
        };
        let stale: Vec<K> = kept
            .iter()
            .filter(|(_, (_, used))| now.saturating_duration_since(*used) >= idle)
            .map(|(principal, _)| principal.clone())
            .collect();
        stale
            .iter()
            .filter_map(|principal| kept.remove(principal).map(|(handle, _)| handle))
            .collect()
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<K, (T, Instant)>> {
        // Held for one look or one change, which cannot panic.
        self.kept.lock().expect("principals lock poisoned")
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
