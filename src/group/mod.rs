//! Many servers as one: a [`ServerGroup`] of named servers, each its own
//! [`McpClient`] with its own stack, one catalogue of their tools, health
//! per server, and calls routed by catalogue name.
//!
//! Every guarantee of a single client holds per server, because each
//! server *is* a single client: its own deadline, recovery, classifier,
//! era cache, limits, handler and authorization; a failed call is never
//! replayed. What the group adds is what an application with twelve
//! vendors' servers would otherwise write by hand:
//!
//! - **Start without waiting for the slowest.** [`ServerGroup::add`]
//!   starts establishing at once, in a task of its own (optionally at most
//!   N at a time, [`ServerGroupBuilder::with_max_establishing`]); the group
//!   is usable as soon as one server is ([`ServerGroup::first_usable`]). A
//!   server that stalls, fails or waits for a person delays nobody else: it
//!   ends at its own deadline, as its own failure.
//! - **One catalogue** ([`Catalogue`]): every usable server's tools,
//!   prompts, resources and templates, named by a [`Naming`] rule (by
//!   default a name two servers share becomes `server__name` on both),
//!   checked against the 2026-07-28 tool-name rules, filtered per server
//!   ([`ToolFilter`]), refreshed on `list_changed` and on every new
//!   session, versioned by content.
//! - **Health** ([`HealthState`]): connecting, ready, degraded,
//!   needs-authorization, failed, with the session generation; a stream of
//!   changes ([`ServerGroup::health_changes`]); an opt-in `ping` keepalive
//!   for legacy sessions ([`Keepalive`]).
//!
//! Where it differs from others: the Python SDK's `ClientSessionGroup`
//! and the gateways (FastMCP's mounts, mcp-proxy, 1MCP) prefix or filter
//! too, but establish with one shared timeout and retry rule, or none; and
//! most prefix always. Here each server keeps its own classified failure,
//! and prefixing happens only where names collide unless asked
//! ([`Naming::Always`]).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_connect::config::ServersConfig;
//! use mcp_connect::group::ServerGroup;
//! use mcp_connect::{Connector, EstablishBuilder};
//!
//! let config = ServersConfig::read("mcp.json")?;
//! let stack = EstablishBuilder::new(Connector::new()).build();
//! let group = ServerGroup::new();
//! group.add_config(&config, &stack);
//! group.first_usable().await?;
//! for tool in group.catalogue().tools() {
//!     println!("{} (from {})", tool.name, tool.server);
//! }
//! let result = group.call_tool("files__read", &serde_json::json!({ "path": "a" })).await?;
//! # drop(result);
//! group.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Servers can join and leave at any time ([`ServerGroup::add`],
//! [`ServerGroup::remove`], [`ServerGroup::restart`]); nothing else in the
//! group is touched. The group needs a Tokio runtime: each server's
//! supervisor is a task.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use mcp_connect_layers::jitter::jitter;
use mcp_connect_layers::recovery::Backoff;
use tokio::sync::{broadcast, watch, Semaphore};

use crate::client::McpClient;
use crate::config::ServersConfig;
use crate::establish::Establish;
use crate::inbound::NotificationSender;

mod builder;
mod catalogue;
mod counts;
mod discovery;
mod error;
mod failed;
mod filter;
mod health;
mod in_flight;
mod listing;
mod member;
mod naming;
mod publish;
mod reconcile;
mod reconnecting;
mod refused;
mod relisting;
mod remembered;
mod routing;
mod search;
mod server;
mod storm;
mod vendor;
mod vendor_formats;

use builder::Caches;
pub use builder::ServerGroupBuilder;
pub use catalogue::{Catalogue, ItemKind, LeftOut, LeftOutReason, Listed, Named};
pub use discovery::{
    is_meta_tool, Discovery, DiscoveryCall, DiscoveryModeError, ShownTool, ShownTools, AUTO_TOKENS,
    CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS,
};
pub use error::GroupError;
pub use filter::ToolFilter;
pub use health::{HealthChange, HealthChanges, HealthState, ServerHealth};
pub use listing::RELIST_INTERVAL;
use member::{Member, Supervisor};
pub use naming::{
    fit, is_valid_tool_name, prefixed, NameRequest, Naming, MAX_TOOL_NAME, SEPARATOR,
};
pub use reconcile::Reconciled;
pub use remembered::{RememberError, RememberedListings};
pub use search::{Ranker, ToolHit};
pub use server::{Keepalive, Server};
pub use vendor::{vendor_name, VENDOR_NAME_MAX};

/// Unread notifications kept per server before newer ones are dropped.
const NOTIFICATION_CAPACITY: usize = 64;

/// Named MCP servers used as one. Cheap to clone; clones share the
/// servers. Dropping the last clone stops every supervisor; a session's
/// own drop then ends its transport (a stdio child is killed and reaped).
/// [`shutdown`](Self::shutdown) closes them gracefully.
#[derive(Clone)]
pub struct ServerGroup {
    shared: Arc<Shared>,
}

/// What the group's handles and its supervisors share. Supervisors hold
/// it weakly, so the group ends when the application lets go of it.
struct Shared {
    naming: Naming,
    permits: Option<Arc<Semaphore>>,
    keepalive: Option<Keepalive>,
    notifications: Option<NotificationSender>,
    caches: Caches,
    telemetry: Option<crate::telemetry::Telemetry>,
    /// Listings remembered across runs, for lazy servers.
    remembered: Option<RememberedListings>,
    /// Holds reconnects behind one probe when many servers lose their
    /// sessions together.
    storm: storm::StormGate,
    /// The pace of trying a member again after an outage, unless its
    /// server has its own.
    retry: Backoff,
    /// Held for one look or one change, never across an `.await`.
    members: Mutex<BTreeMap<Arc<str>, Arc<Member>>>,
    catalogue: watch::Sender<Arc<Catalogue>>,
    health: broadcast::Sender<HealthChange>,
    /// Bumped on every health change: what the waits watch.
    changes: watch::Sender<u64>,
    /// How many times a listing changed.
    listings_changed: AtomicU64,
    /// Set at the group's first settle (every server out of its first
    /// establishment): from then on the catalogue keeps names handed out.
    started: AtomicBool,
    /// Members still in their first establishment, toward `started`.
    starting: AtomicUsize,
    /// Members connecting and usable now, for the waits.
    counts: counts::HealthCounts,
    /// The count of [`listings_changed`](Self::listings_changed) the
    /// published catalogue includes: set after it is published, so a
    /// reader that finds it behind waits for the publish under way.
    built: AtomicU64,
    /// A publish task is scheduled.
    publish_scheduled: AtomicBool,
    /// The catalogue's entries, changed one server at a time; held for
    /// one change or one publish, never across an `.await`.
    index: Mutex<catalogue::CatalogueIndex>,
    /// When the meta-tools are shown instead of the catalogue.
    discovery: Discovery,
    /// The tools shown beside the meta-tools, by catalogue name or glob.
    always_loaded: Vec<wildmatch::WildMatch>,
    /// The index behind [`ServerGroup::search_tools`].
    search: search::Search,
    /// This, for the publish task.
    this: Weak<Shared>,
}

impl Default for ServerGroup {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerGroup {
    /// An empty group with the defaults: collisions prefixed, no limit on
    /// concurrent establishments, no keepalive.
    pub fn new() -> Self {
        ServerGroupBuilder::default().build()
    }

    /// Configures a group.
    pub fn builder() -> ServerGroupBuilder {
        ServerGroupBuilder::default()
    }

    /// Adds `server` and starts establishing it at once.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn add(&self, server: Server) -> Result<(), GroupError> {
        let mut request = self.shared.caches.apply(server.request);
        if request.instruments().is_none() && self.shared.telemetry.is_some() {
            request = request.with_instruments(self.shared.telemetry.clone());
        }
        let server = Server { request, ..server };
        let mut members = self.members();
        if members.contains_key(&server.name) {
            return Err(GroupError::Duplicate {
                name: server.name.to_string(),
            });
        }
        let forward: Vec<NotificationSender> = server
            .request
            .listener()
            .cloned()
            .into_iter()
            .chain(self.shared.notifications.clone())
            .collect();
        let (member, notifications) = Member::new(server, NOTIFICATION_CAPACITY, self.shared.retry);
        self.shared.starting.fetch_add(1, Ordering::AcqRel);
        self.shared.counts.added();
        let supervisor = Supervisor {
            group: Arc::downgrade(&self.shared),
            member: Arc::clone(&member),
            notifications,
            forward,
            permits: self.shared.permits.clone(),
            keepalive: self.shared.keepalive,
            failures_in_a_row: 0,
            rng: jitter(),
        };
        if member.lazy {
            // Complete at once: the remembered listing, no connection.
            // With nothing remembered, its supervisor lists it once first
            // (connecting until then).
            let remembered = (self.shared.remembered.as_ref())
                .zip(member.remember_as.as_deref())
                .and_then(|(listings, key)| listings.get(key));
            if remembered.is_some() {
                self.shared.set_listing(&member, remembered);
                self.shared.set_health(&member, HealthState::Idle);
            }
        }
        *member.task.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(tokio::spawn(supervisor.run()));
        members.insert(Arc::clone(&member.name), member);
        Ok(())
    }

    /// Adds every valid entry of `config`, each through a clone of `stack`
    /// (a clone shares the connector's HTTP pool and the era cache, which
    /// is keyed by target; every establishment still gets its own
    /// deadline). Entries the file got wrong are in
    /// [`ServersConfig::errors`]; what this returns are the names the
    /// group already had.
    pub fn add_config(&self, config: &ServersConfig, stack: &Establish) -> Vec<GroupError> {
        config
            .servers()
            .filter_map(|server| self.add(Server::from_config(stack.clone(), server)).err())
            .collect()
    }

    /// Removes the server: out of the catalogue and its supervisor
    /// stopped at once (no new call reaches it), its session closed once
    /// the calls under way on it are answered, or after 5 s.
    pub async fn remove(&self, name: &str) -> Result<(), GroupError> {
        let member = self
            .members()
            .remove(name)
            .ok_or_else(|| unknown_server(name))?;
        if let Some(task) = member
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        self.shared.storm.gave_up(&member.name);
        self.shared.set_listing(&member, None);
        self.shared.set_health(&member, HealthState::Removed);
        in_flight::drained(&member, in_flight::DRAIN_BOUND).await;
        let _ = member.client.close().await;
        Ok(())
    }

    /// Closes the server's session and establishes it again (a new
    /// generation), whatever its state; a failed server gets a new
    /// chance. Its items leave the catalogue until it is ready again.
    /// Other servers are not touched.
    pub fn restart(&self, name: &str) -> Result<(), GroupError> {
        self.member(name)?.request_restart();
        Ok(())
    }

    /// The servers' names, in order.
    pub fn names(&self) -> Vec<Arc<str>> {
        self.members().keys().cloned().collect()
    }

    /// One server's health.
    pub fn health(&self, name: &str) -> Option<ServerHealth> {
        self.members().get(name).map(|member| member.health())
    }

    /// How many notifications from the server its queue in the group
    /// dropped (it holds 64 while a relist or the application's listeners
    /// are busy); a burst costs this count, never a stalled response. What
    /// an application's own listener drops is in its
    /// [`Notifications::dropped`](crate::inbound::Notifications::dropped).
    pub fn dropped_notifications(&self, name: &str) -> Option<u64> {
        (self.members().get(name))
            .map(|member| member.dropped_notifications.load(Ordering::Relaxed))
    }

    /// How many tools the server's current listing holds after its filter
    /// (shown in the catalogue or left out of it); `None` while it has no
    /// listing. Reads one member, whatever the size of the group.
    pub fn listed_tools(&self, name: &str) -> Option<usize> {
        let member = self.members().get(name).cloned()?;
        let listing = member
            .listing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        listing.map(|listing| listing.tools.len())
    }

    /// Why the server's last establishment failed, while it is not ready:
    /// the whole typed error, its source chain kept.
    pub fn last_error(&self, name: &str) -> Option<Arc<crate::client::ClientError>> {
        let member = self.members().get(name).cloned()?;
        let error = member
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        error
    }

    /// Every server's health, by name.
    pub fn healths(&self) -> Vec<(Arc<str>, ServerHealth)> {
        self.members()
            .iter()
            .map(|(name, member)| (Arc::clone(name), member.health()))
            .collect()
    }

    /// Every health change from now on.
    pub fn health_changes(&self) -> HealthChanges {
        HealthChanges::new(self.shared.health.subscribe())
    }

    /// Waits until a server is usable (ready or degraded); fails with
    /// [`GroupError::NoneUsable`] once no server is still connecting and
    /// none is usable, or at once when the group is empty. Bounded by the
    /// servers' own deadlines.
    pub async fn first_usable(&self) -> Result<(), GroupError> {
        self.wait_until(|counts| {
            if counts.usable > 0 {
                Some(Ok(()))
            } else if counts.connecting == 0 {
                Some(Err(GroupError::NoneUsable))
            } else {
                None
            }
        })
        .await
    }

    /// Waits until no server is connecting: each one usable, failed or
    /// needing authorization. Bounded by the servers' own deadlines.
    pub async fn settled(&self) {
        self.wait_until(|counts| (counts.connecting == 0).then_some(()))
            .await;
    }

    /// Waits as [`settled`](Self::settled) does, then fails when a server
    /// added as [`Server::required`] did not start: `NotUsable` naming the
    /// first such server by name and where it stands (its cause in
    /// [`last_error`](Self::last_error)). The others stay as they are.
    pub async fn settled_required(&self) -> Result<(), GroupError> {
        self.settled().await;
        let members = self.members();
        let failed = members.values().find_map(|member| {
            let state = member.health().state;
            (member.required && !state.is_usable()).then(|| (Arc::clone(&member.name), state))
        });
        match failed {
            Some((server, state)) => Err(GroupError::NotUsable { server, state }),
            None => Ok(()),
        }
    }

    /// Waits on the group's counts, not its members: O(1) per health
    /// change, however many servers the group has.
    async fn wait_until<T>(&self, done: impl Fn(counts::Counts) -> Option<T>) -> T {
        let mut changes = self.shared.changes.subscribe();
        loop {
            changes.borrow_and_update();
            if let Some(outcome) = done(self.shared.counts.now()) {
                return outcome;
            }
            // The sender lives in `shared`, which `self` holds.
            let _ = changes.changed().await;
        }
    }

    /// The catalogue as it is now.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.shared.publish_pending();
        self.shared.catalogue.borrow().clone()
    }

    /// Every new catalogue, as it is published.
    pub fn catalogue_changes(&self) -> watch::Receiver<Arc<Catalogue>> {
        self.shared.catalogue.subscribe()
    }

    /// A server's own client, for anything the catalogue does not route
    /// (completions, subscriptions, raw requests, a tool left out).
    pub fn client(&self, name: &str) -> Option<McpClient> {
        self.members().get(name).map(|member| member.client.clone())
    }

    /// Closes every server gracefully (each bounded by `bound`) and empties
    /// the group. A usable server whose new session is still listing (a
    /// call just woke it) finishes its listing first, within a quarter of
    /// the bound, so what it lists is remembered.
    pub async fn shutdown_within(&self, bound: Duration) {
        let now = tokio::time::Instant::now();
        let (deadline, listings_by) = (now + bound, now + bound / 4);
        let names = self.names();
        let removals = names.iter().map(|name| async move {
            // A session a call just built on a usable member (a lazy one
            // woken by a one-shot call) is listing what its server offers
            // now: let it finish, within a quarter of the bound, so the
            // remembered listing is the new one. A first listing
            // (connecting) is not waited for.
            let listing = self.member(name).ok().filter(|member| {
                matches!(
                    member.health().state,
                    HealthState::Idle | HealthState::Ready
                )
            });
            if let Some(member) = listing {
                let wanted = member.client.generation();
                let mut listed = member.listed.subscribe();
                let done = listed.wait_for(|listed| *listed >= wanted);
                let _ = tokio::time::timeout_at(listings_by, done).await;
            }
            let _ = tokio::time::timeout_at(deadline, self.remove(name)).await;
        });
        futures_util::future::join_all(removals).await;
    }

    /// [`shutdown_within`](Self::shutdown_within) 5 seconds per server.
    pub async fn shutdown(&self) {
        self.shutdown_within(Duration::from_secs(5)).await;
    }

    fn members(&self) -> std::sync::MutexGuard<'_, BTreeMap<Arc<str>, Arc<Member>>> {
        self.shared.members()
    }

    fn member(&self, name: &str) -> Result<Arc<Member>, GroupError> {
        self.members()
            .get(name)
            .cloned()
            .ok_or_else(|| unknown_server(name))
    }
}

impl crate::client::Closes for ServerGroup {
    fn close(self) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(async move { self.shutdown().await })
    }
}

fn unknown_server(name: &str) -> GroupError {
    GroupError::UnknownServer {
        name: name.to_owned(),
    }
}

impl Shared {
    fn members(&self) -> std::sync::MutexGuard<'_, BTreeMap<Arc<str>, Arc<Member>>> {
        // Held for one look or one change, which cannot panic.
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        for member in self
            .members
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            if let Some(task) = member
                .task
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                task.abort();
            }
        }
    }
}

impl fmt::Debug for ServerGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerGroup")
            .field("servers", &self.names())
            .field("catalogue_version", &self.catalogue().version())
            .finish_non_exhaustive()
    }
}
