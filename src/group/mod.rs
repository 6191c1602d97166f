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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, watch, Semaphore};

use crate::client::McpClient;
use crate::config::ServersConfig;
use crate::inbound::NotificationSender;
use crate::protocol::CallToolResult;
use crate::session::RequestOptions;
use crate::stack::Establish;

mod catalogue;
mod error;
mod filter;
mod health;
mod member;
mod naming;

use catalogue::Listing;
pub use catalogue::{Catalogue, ItemKind, LeftOut, LeftOutReason, Listed, Named};
pub use error::GroupError;
pub use filter::ToolFilter;
pub use health::{HealthChange, HealthChanges, HealthState, ServerHealth};
pub use member::{Keepalive, Server, RELIST_INTERVAL};
use member::{Member, Supervisor};
pub use naming::{
    fit, is_valid_tool_name, prefixed, NameRequest, Naming, MAX_TOOL_NAME, SEPARATOR,
};

/// Unread notifications kept per server before newer ones are dropped.
const NOTIFICATION_CAPACITY: usize = 64;

/// Health changes kept for a slow reader of [`ServerGroup::health_changes`].
const HEALTH_CAPACITY: usize = 1024;

/// Configures a [`ServerGroup`].
#[derive(Debug, Default)]
pub struct ServerGroupBuilder {
    naming: Naming,
    max_establishing: Option<usize>,
    keepalive: Option<Keepalive>,
    notifications: Option<NotificationSender>,
    caches: Caches,
    #[cfg(feature = "otel")]
    telemetry: Option<crate::telemetry::Telemetry>,
}

/// The caches every server of a group shares unless its request has its
/// own.
#[derive(Debug, Clone, Default)]
struct Caches {
    era: Option<crate::era_cache::EraCache>,
    responses: Option<crate::response_cache::ResponseCache>,
}

impl Caches {
    fn apply(&self, mut request: crate::ConnectRequest) -> crate::ConnectRequest {
        if let (Some(cache), None) = (&self.era, request.era_cache()) {
            request = request.with_era_cache(cache.clone());
        }
        if let (Some(cache), None) = (&self.responses, request.response_cache()) {
            request = request.with_response_cache(cache.clone());
        }
        request
    }
}

impl ServerGroupBuilder {
    /// How tools and prompts are named in the catalogue (default:
    /// [`Naming::OnCollision`]).
    #[must_use]
    pub fn with_naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// At most `limit` servers establishing at once (at least 1); the
    /// others wait their turn, their deadline not yet started. Without it,
    /// every server starts at once.
    #[must_use]
    pub fn with_max_establishing(mut self, limit: usize) -> Self {
        self.max_establishing = Some(limit.max(1));
        self
    }

    /// Pings idle legacy sessions (off by default; see [`Keepalive`]).
    #[must_use]
    pub fn with_keepalive(mut self, keepalive: Keepalive) -> Self {
        self.keepalive = Some(keepalive);
        self
    }

    /// Sends every server's notifications to `listener` too, each carrying
    /// its server's name. A request's own listener keeps getting its
    /// server's.
    #[must_use]
    pub fn with_notifications(mut self, listener: NotificationSender) -> Self {
        self.notifications = Some(listener);
        self
    }

    /// Shares `cache` between every server added whose request has no era
    /// cache of its own: each reconnect starts where the last one ended,
    /// and a 2026-07-28 server's remembered discover saves its probe.
    #[must_use]
    pub fn with_era_cache(mut self, cache: crate::era_cache::EraCache) -> Self {
        self.caches.era = Some(cache);
        self
    }

    /// Shares `cache` ([`crate::response_cache`]) between every server
    /// added whose request has no response cache of its own.
    #[must_use]
    pub fn with_response_cache(mut self, cache: crate::response_cache::ResponseCache) -> Self {
        self.caches.responses = Some(cache);
        self
    }

    /// Instruments every server added whose request has no telemetry of
    /// its own (a config file's servers, say) with `telemetry` (feature
    /// `otel`).
    #[cfg(feature = "otel")]
    #[must_use]
    pub fn with_telemetry(mut self, telemetry: crate::telemetry::Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The group, empty.
    pub fn build(self) -> ServerGroup {
        ServerGroup {
            shared: Arc::new_cyclic(|this| Shared {
                naming: self.naming,
                permits: self.max_establishing.map(|n| Arc::new(Semaphore::new(n))),
                keepalive: self.keepalive,
                notifications: self.notifications,
                caches: self.caches,
                #[cfg(feature = "otel")]
                telemetry: self.telemetry,
                members: Mutex::new(BTreeMap::new()),
                catalogue: watch::channel(Arc::new(Catalogue::default())).0,
                health: broadcast::channel(HEALTH_CAPACITY).0,
                changes: watch::channel(0).0,
                listings_changed: AtomicU64::new(0),
                built: AtomicU64::new(0),
                rebuild_scheduled: AtomicBool::new(false),
                rebuilding: Mutex::new(()),
                this: this.clone(),
            }),
        }
    }
}

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
    #[cfg(feature = "otel")]
    telemetry: Option<crate::telemetry::Telemetry>,
    /// Held for one look or one change, never across an `.await`.
    members: Mutex<BTreeMap<Arc<str>, Arc<Member>>>,
    catalogue: watch::Sender<Arc<Catalogue>>,
    health: broadcast::Sender<HealthChange>,
    /// Bumped on every health change: what the waits watch.
    changes: watch::Sender<u64>,
    /// How many times a listing changed.
    listings_changed: AtomicU64,
    /// The count of [`listings_changed`](Self::listings_changed) the
    /// published catalogue includes: set after it is published, so a
    /// reader that finds it behind waits for the rebuild under way.
    built: AtomicU64,
    /// A rebuild task is scheduled.
    rebuild_scheduled: AtomicBool,
    /// Held for one rebuild, which never awaits.
    rebuilding: Mutex<()>,
    /// This, for the rebuild task.
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
        let server = Server {
            request: self.shared.caches.apply(server.request),
            ..server
        };
        #[cfg(feature = "otel")]
        let server = match &self.shared.telemetry {
            Some(telemetry) if server.request.telemetry().is_none() => Server {
                request: server.request.with_telemetry(telemetry.clone()),
                ..server
            },
            _ => server,
        };
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
        let (member, notifications) = Member::new(server, NOTIFICATION_CAPACITY);
        let supervisor = Supervisor {
            group: Arc::downgrade(&self.shared),
            member: Arc::clone(&member),
            notifications,
            forward,
            permits: self.shared.permits.clone(),
            keepalive: self.shared.keepalive,
        };
        *member.task.lock().expect("task lock poisoned") = Some(tokio::spawn(supervisor.run()));
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
            .filter_map(|server| self.add(Server::new(stack.clone(), server.request())).err())
            .collect()
    }

    /// Removes the server: out of the catalogue, its supervisor stopped,
    /// its session closed. Calls already under way on it finish or fail
    /// on their own.
    pub async fn remove(&self, name: &str) -> Result<(), GroupError> {
        let member = self
            .members()
            .remove(name)
            .ok_or_else(|| unknown_server(name))?;
        if let Some(task) = member.task.lock().expect("task lock poisoned").take() {
            task.abort();
        }
        self.shared.set_listing(&member, None);
        self.shared.set_health(&member, HealthState::Removed);
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

    /// How many tools the server's current listing holds after its filter
    /// (shown in the catalogue or left out of it); `None` while it has no
    /// listing. Reads one member, whatever the size of the group.
    pub fn listed_tools(&self, name: &str) -> Option<usize> {
        let member = self.members().get(name).cloned()?;
        let listing = member.listing.lock().expect("listing lock").clone();
        listing.map(|listing| listing.tools.len())
    }

    /// Why the server's last establishment failed, while it is not ready:
    /// the whole typed error, its source chain kept.
    pub fn last_error(&self, name: &str) -> Option<Arc<crate::client::ClientError>> {
        let member = self.members().get(name).cloned()?;
        let error = member
            .last_error
            .lock()
            .expect("error lock poisoned")
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
        self.wait_until(|healths| {
            if healths.iter().any(|h| h.state.is_usable()) {
                Some(Ok(()))
            } else if healths.iter().all(|h| !h.state.is_connecting()) {
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
        self.wait_until(|healths| {
            healths
                .iter()
                .all(|h| !h.state.is_connecting())
                .then_some(())
        })
        .await;
    }

    async fn wait_until<T>(&self, done: impl Fn(&[ServerHealth]) -> Option<T>) -> T {
        let mut changes = self.shared.changes.subscribe();
        loop {
            changes.borrow_and_update();
            let healths: Vec<ServerHealth> = self
                .members()
                .values()
                .map(|member| member.health())
                .collect();
            if let Some(outcome) = done(&healths) {
                return outcome;
            }
            // The sender lives in `shared`, which `self` holds.
            let _ = changes.changed().await;
        }
    }

    /// The catalogue as it is now.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.shared.rebuild();
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

    /// `tools/call` on the server the catalogue routes `name` to, with the
    /// name that server gave the tool.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<CallToolResult, GroupError> {
        self.call_tool_with(name, arguments, &RequestOptions::new())
            .await
    }

    /// [`call_tool`](Self::call_tool) with per-request options.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: &Value,
        options: &RequestOptions,
    ) -> Result<CallToolResult, GroupError> {
        let catalogue = self.catalogue();
        let tool = catalogue
            .tool(name)
            .ok_or_else(|| GroupError::UnknownTool {
                name: name.to_owned(),
            })?;
        let member = self.usable(&tool.server)?;
        let outcome = member
            .client
            .call_tool_with(&tool.item.name, arguments, options)
            .await;
        self.observed(&member, outcome)
    }

    /// `prompts/get` on the server the catalogue routes `name` to.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&Value>,
    ) -> Result<Value, GroupError> {
        let catalogue = self.catalogue();
        let prompt = catalogue
            .prompt(name)
            .ok_or_else(|| GroupError::UnknownPrompt {
                name: name.to_owned(),
            })?;
        let member = self.usable(&prompt.server)?;
        let outcome = member.client.get_prompt(&prompt.item.name, arguments).await;
        self.observed(&member, outcome)
    }

    /// `resources/read` on the one server whose listing has `uri`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, GroupError> {
        let mut servers = self.catalogue().resource_servers(uri);
        let server = match servers.len() {
            0 => return Err(GroupError::UnknownResource),
            1 => servers.remove(0),
            _ => return Err(GroupError::AmbiguousResource { servers }),
        };
        let member = self.usable(&server)?;
        let outcome = member.client.read_resource(uri).await;
        self.observed(&member, outcome)
    }

    /// Closes every server gracefully (each bounded by `bound`) and empties
    /// the group.
    pub async fn shutdown_within(&self, bound: Duration) {
        let names = self.names();
        let removals = names.iter().map(|name| async move {
            let _ = tokio::time::timeout(bound, self.remove(name)).await;
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

    fn usable(&self, name: &Arc<str>) -> Result<Arc<Member>, GroupError> {
        let member = self.member(name)?;
        let state = member.health().state;
        if state.is_usable() {
            Ok(member)
        } else {
            Err(GroupError::NotUsable {
                server: Arc::clone(name),
                state,
            })
        }
    }

    /// A routed call's outcome; a failure on transport degrades its server
    /// at once (its supervisor then builds a new session).
    fn observed<T>(
        &self,
        member: &Member,
        outcome: Result<T, crate::client::ClientError>,
    ) -> Result<T, GroupError> {
        outcome.map_err(|error| {
            if let Some(failure) = member.call_failed(&error) {
                self.shared
                    .set_health(member, HealthState::Degraded(failure));
            }
            GroupError::Call {
                server: Arc::clone(&member.name),
                error: Box::new(error),
            }
        })
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
        self.members.lock().expect("members lock poisoned")
    }

    /// Sets a member's health, with its client's generation, and tells the
    /// stream and the waits when it changed.
    fn set_health(&self, member: &Member, state: HealthState) {
        let health = ServerHealth::new(state, member.client.generation());
        {
            let mut current = member.health.lock().expect("health lock poisoned");
            if *current == health {
                return;
            }
            *current = health;
        }
        tracing::debug!(
            target: "mcp_connect::group",
            server = &*member.name,
            state = state.as_str(),
            generation = health.generation,
            "server health changed"
        );
        // No receiver is not an error: nobody is listening.
        let _ = self.health.send(HealthChange {
            server: Arc::clone(&member.name),
            health,
        });
        self.changes.send_modify(|n| *n += 1);
    }

    /// Sets what the catalogue shows of a member. The catalogue is rebuilt
    /// once per burst of changes, not once per change: a rebuild is O(all
    /// items), and a hundred servers becoming ready together would
    /// otherwise cost a hundred of them. A reader never sees a stale
    /// catalogue: [`ServerGroup::catalogue`] rebuilds first when a change
    /// is pending; watchers get the new one from a task scheduled here.
    fn set_listing(&self, member: &Member, listing: Option<Listing>) {
        *member.listing.lock().expect("listing lock poisoned") = listing.map(Arc::new);
        self.listings_changed.fetch_add(1, Ordering::AcqRel);
        if self.rebuild_scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.this.clone();
        tokio::spawn(async move {
            // Let the rest of the burst land first.
            tokio::task::yield_now().await;
            if let Some(shared) = this.upgrade() {
                shared.rebuild_scheduled.store(false, Ordering::Release);
                shared.rebuild();
            }
        });
    }

    /// Rebuilds the catalogue if a listing changed since the last rebuild,
    /// and publishes it if its content changed.
    fn rebuild(&self) {
        // Most reads find nothing pending: no lock for them. A rebuild
        // under way counts as pending until it has published, so a read
        // racing it waits for it instead of returning the catalogue before.
        if self.built.load(Ordering::Acquire) == self.listings_changed.load(Ordering::Acquire) {
            return;
        }
        // One rebuild at a time, so versions follow each other.
        let _rebuilding = self.rebuilding.lock().expect("rebuild lock poisoned");
        let changed = self.listings_changed.load(Ordering::Acquire);
        if self.built.load(Ordering::Acquire) == changed {
            return;
        }
        let listings: BTreeMap<Arc<str>, Arc<Listing>> = self
            .members()
            .iter()
            .filter_map(|(name, member)| {
                let listing = member
                    .listing
                    .lock()
                    .expect("listing lock poisoned")
                    .clone();
                listing.map(|listing| (Arc::clone(name), listing))
            })
            .collect();
        self.catalogue.send_if_modified(|current| {
            match Catalogue::next(current, &listings, &self.naming) {
                Some(next) => {
                    *current = Arc::new(next);
                    true
                }
                None => false,
            }
        });
        self.built.store(changed, Ordering::Release);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        for member in self
            .members
            .get_mut()
            .expect("members lock poisoned")
            .values()
        {
            if let Some(task) = member.task.lock().expect("task lock poisoned").take() {
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
