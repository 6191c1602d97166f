//! One server of a group: what the application gives ([`Server`]), what
//! the group keeps ([`Member`]), and the task that looks after it
//! ([`Supervisor`]).
//!
//! The supervisor is the only place a member's session is built outside a
//! call: it establishes at start and after a restart, refreshes the
//! listing when the server announces a change or a new generation appears,
//! pings legacy sessions when a keepalive is asked for, and, after a call
//! failed on transport, builds a new session in the background, paced by
//! the client's own cool-down.
//!
//! Relistings are coalesced: at most one runs at a time and one more is
//! pending per kind, and a kind is listed again no sooner than
//! [`RELIST_INTERVAL`] after its last listing, so a server that floods
//! `list_changed` costs a few listings a second, not one per notification.
//! A listing the server could not be asked for (it timed out, outgrew the
//! size or page limit, or answered something that is no listing) fails the
//! member; one the server declined with an error leaves that kind empty.
//!
//! It never retries what the conservative classifier forbids (auth,
//! throttling, DNS, TLS, configuration, an overall deadline): those leave
//! the server failed, or needing authorization, until the application
//! restarts it.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::time::Instant;

use mcp_connect_layers::classify::Conservative;
use mcp_connect_layers::{Classify, Failure, FailureKind, Stage};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinHandle;

use super::catalogue::Listing;
use super::filter::ToolFilter;
use super::health::{HealthState, ServerHealth};
use super::Shared;
use crate::client::{ClientError, Generation, McpClient};
use crate::inbound::{Known, ListKind, NotificationSender, Notifications};
use crate::protocol::Era;
use crate::request::ConnectRequest;
use crate::stack::Establish;

/// A server to add to a group: its own stack (deadline, recovery,
/// classifier, era cache), its own request (target, limits, auth,
/// handler) and its tool filter. Its name is the request's
/// ([`ConnectRequest::with_name`]).
#[derive(Debug)]
pub struct Server {
    pub(super) name: Arc<str>,
    pub(super) stack: Establish,
    pub(super) request: ConnectRequest,
    pub(super) filter: ToolFilter,
}

impl Server {
    /// `request` established through `stack`, named as the request is.
    pub fn new(stack: Establish, request: ConnectRequest) -> Self {
        Server {
            name: Arc::from(request.name()),
            stack,
            request,
            filter: ToolFilter::new(),
        }
    }

    /// Shows only the tools `filter` allows in the catalogue.
    #[must_use]
    pub fn with_filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// The server's name in the group.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A `ping` keepalive for long-idle legacy sessions: off unless asked for
/// ([`ServerGroupBuilder::with_keepalive`](super::ServerGroupBuilder::with_keepalive)).
///
/// Every `interval` each ready legacy session is pinged (each ping bounded
/// by the interval); after `failures` failed pings in a row, or at once
/// when a ping shows the session gone, the server is degraded and a new
/// session built. Sessions of the 2026-07-28 era are never pinged: that
/// era has no `ping`, and no session to keep alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    interval: Duration,
    failures: u32,
}

impl Keepalive {
    /// A ping every `interval`, degrading after 3 failures in a row.
    pub fn every(interval: Duration) -> Self {
        Keepalive {
            interval,
            failures: 3,
        }
    }

    /// Degrades after `failures` failed pings in a row (at least 1).
    #[must_use]
    pub fn failing_after(mut self, failures: u32) -> Self {
        self.failures = failures.max(1);
        self
    }
}

/// What the application asked of a member's supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    Nothing,
    /// A call failed on transport: build a new session.
    Reconnect,
    /// Restart: close the session and establish anew.
    Restart,
}

/// One server, as the group keeps it.
pub(super) struct Member {
    pub(super) name: Arc<str>,
    pub(super) client: McpClient,
    filter: ToolFilter,
    pub(super) health: Mutex<ServerHealth>,
    /// What the catalogue shows of it; `None` while it is not usable.
    pub(super) listing: Mutex<Option<Arc<Listing>>>,
    /// Why its last establishment failed; cleared when it is ready.
    pub(super) last_error: Mutex<Option<Arc<ClientError>>>,
    intent: Mutex<Intent>,
    wake: Notify,
    pub(super) task: Mutex<Option<JoinHandle<()>>>,
}

impl Member {
    /// The member for `server` and the notifications its sessions send
    /// (the group's listener for list changes; forwarded on).
    pub(super) fn new(server: Server, capacity: usize) -> (Arc<Member>, Notifications) {
        let (sender, notifications) = crate::inbound::notification_channel(capacity);
        let request = server.request.with_notifications(sender);
        let member = Member {
            name: server.name,
            client: McpClient::lazy(server.stack, request),
            filter: server.filter,
            health: Mutex::new(ServerHealth::new(HealthState::Connecting, 0)),
            listing: Mutex::new(None),
            last_error: Mutex::new(None),
            intent: Mutex::new(Intent::Nothing),
            wake: Notify::new(),
            task: Mutex::new(None),
        };
        (Arc::new(member), notifications)
    }

    pub(super) fn health(&self) -> ServerHealth {
        *self.health.lock().expect("health lock poisoned")
    }

    /// Asks the supervisor to restart: close, then establish anew.
    pub(super) fn request_restart(&self) {
        *self.intent.lock().expect("intent lock poisoned") = Intent::Restart;
        self.wake.notify_one();
    }

    /// A routed call failed: when on transport, asks the supervisor for a
    /// new session and returns the failure to show as degraded.
    pub(super) fn call_failed(&self, error: &ClientError) -> Option<Failure> {
        if !on_transport(error) {
            return None;
        }
        let failure = error.failure();
        let mut intent = self.intent.lock().expect("intent lock poisoned");
        if *intent == Intent::Nothing {
            *intent = Intent::Reconnect;
        }
        drop(intent);
        self.wake.notify_one();
        Some(failure)
    }

    fn take_intent(&self) -> Intent {
        std::mem::replace(
            &mut *self.intent.lock().expect("intent lock poisoned"),
            Intent::Nothing,
        )
    }
}

/// Whether a call failed on the connection (refused, broken, closed, the
/// session gone) rather than on the server's answer.
fn on_transport(error: &ClientError) -> bool {
    error.session_lost()
        || matches!(
            error.failure().kind,
            FailureKind::Connect | FailureKind::Io | FailureKind::Closed
        )
}

/// The least time between two listings of one kind of one member.
pub const RELIST_INTERVAL: Duration = Duration::from_millis(250);

/// Why a listing did not complete.
enum ListingFailed {
    /// On the connection: build a new session.
    Transport(Failure),
    /// The listing could not be had (timed out, over a limit, no
    /// listing): the member has failed.
    Unserved(Failure),
}

impl ListingFailed {
    fn step(self) -> Step {
        match self {
            ListingFailed::Transport(failure) => Step::Reconnect(failure),
            ListingFailed::Unserved(failure) => Step::Failed(failure),
        }
    }
}

/// The kinds a member must list again, and when it may.
#[derive(Default)]
struct Relist {
    pending: Vec<ListKind>,
    last: Option<Instant>,
}

impl Relist {
    fn add(&mut self, kind: ListKind) {
        if !self.pending.contains(&kind) {
            self.pending.push(kind);
        }
    }

    /// When the pending kinds may be listed: at once, or
    /// [`RELIST_INTERVAL`] after the last listing.
    fn due(&self) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(
            self.last
                .map_or_else(Instant::now, |last| last + RELIST_INTERVAL),
        )
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// What a supervisor does next.
enum Step {
    /// Serve a usable member.
    Serve,
    /// Degraded by this failure: build a new session.
    Reconnect(Failure),
    /// Not usable after this failure: wait for a restart.
    Failed(Failure),
    /// Establish again (a restart).
    Again,
    /// The group is gone.
    GroupGone,
}

/// The task that looks after one member.
pub(super) struct Supervisor {
    pub(super) group: Weak<Shared>,
    pub(super) member: Arc<Member>,
    pub(super) notifications: Notifications,
    /// Where every notification goes on: the request's own listener and
    /// the group's.
    pub(super) forward: Vec<NotificationSender>,
    pub(super) permits: Option<Arc<Semaphore>>,
    pub(super) keepalive: Option<Keepalive>,
}

impl Supervisor {
    pub(super) async fn run(mut self) {
        let mut generations = self.member.client.generations();
        loop {
            self.set(HealthState::Connecting);
            let established = {
                let _permit = match &self.permits {
                    // Never closed: the group owns it.
                    Some(permits) => Arc::clone(permits).acquire_owned().await.ok(),
                    None => None,
                };
                self.member.client.session().await
            };
            let mut step = match established {
                Ok(_) => {
                    generations.borrow_and_update();
                    match self.refresh().await {
                        Ok(()) => Step::Serve,
                        Err(failed) => failed.step(),
                    }
                }
                Err(error) => Step::Failed(self.keep(error)),
            };
            loop {
                step = match step {
                    Step::Serve => self.serve(&mut generations).await,
                    Step::Reconnect(failure) => self.reconnect(failure, &mut generations).await,
                    Step::Failed(failure) => self.failed(failure, &mut generations).await,
                    Step::Again => break,
                    Step::GroupGone => return,
                };
            }
        }
    }

    /// Serves a usable member until it must be established again.
    async fn serve(&mut self, generations: &mut watch::Receiver<Generation>) -> Step {
        let mut ticker = self.keepalive.map(|keepalive| {
            let mut ticker = tokio::time::interval_at(
                tokio::time::Instant::now() + keepalive.interval,
                keepalive.interval,
            );
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            (ticker, keepalive)
        });
        let mut missed_pings = 0;
        let mut relist = Relist::default();
        loop {
            tokio::select! {
                notification = self.notifications.recv() => {
                    let Some(notification) = notification else { return Step::GroupGone };
                    if let Known::ListChanged(kind) = notification.known() {
                        relist.add(kind);
                    }
                    for listener in &self.forward {
                        listener.deliver(notification.clone());
                    }
                }
                () = sleep_until(relist.due()) => {
                    relist.last = Some(Instant::now());
                    for kind in std::mem::take(&mut relist.pending) {
                        if let Err(failed) = self.refresh_kind(kind).await {
                            return failed.step();
                        }
                    }
                }
                changed = generations.changed() => {
                    if changed.is_err() {
                        return Step::GroupGone;
                    }
                    // A call rebuilt the session: list again, on it.
                    generations.borrow_and_update();
                    match self.refresh().await {
                        Ok(()) => self.set(HealthState::Ready),
                        Err(failed) => return failed.step(),
                    }
                }
                () = self.member.wake.notified() => match self.member.take_intent() {
                    Intent::Restart => return self.restart().await,
                    Intent::Reconnect => {
                        let failure = match self.member.health().state {
                            HealthState::Degraded(failure) => failure,
                            _ => Failure::new(Stage::REQUEST, FailureKind::Io),
                        };
                        return Step::Reconnect(failure);
                    }
                    Intent::Nothing => {}
                },
                () = tick(&mut ticker) => {
                    let Some((_, keepalive)) = ticker else { continue };
                    match self.ping(keepalive.interval).await {
                        Ping::Answered => missed_pings = 0,
                        Ping::NotLegacy => ticker = None,
                        Ping::Failed(failure, gone) => {
                            missed_pings += 1;
                            if gone || missed_pings >= keepalive.failures {
                                let _ = self.member.client.close().await;
                                return Step::Reconnect(failure);
                            }
                        }
                    }
                }
            }
        }
    }

    /// One keepalive ping on a legacy session.
    async fn ping(&self, bound: Duration) -> Ping {
        let Ok((session, _)) = self.member.client.session().await else {
            return Ping::Failed(Failure::new(Stage::REQUEST, FailureKind::Closed), true);
        };
        if session.era() != Era::Legacy {
            return Ping::NotLegacy;
        }
        drop(session);
        match tokio::time::timeout(bound, self.member.client.request("ping", None)).await {
            Ok(Ok(_)) => Ping::Answered,
            Ok(Err(error)) => Ping::Failed(error.failure(), error.session_lost()),
            Err(_) => Ping::Failed(Failure::new(Stage::REQUEST, FailureKind::Timeout), false),
        }
    }

    /// Degraded: builds a new session in the background, paced by the
    /// client's cool-down, until one is usable or a failure forbids more.
    async fn reconnect(
        &mut self,
        failure: Failure,
        generations: &mut watch::Receiver<Generation>,
    ) -> Step {
        self.set(HealthState::Degraded(failure));
        loop {
            if self.member.take_intent() == Intent::Restart {
                return self.restart().await;
            }
            match self.member.client.session().await {
                Ok(_) => {
                    generations.borrow_and_update();
                    match self.refresh().await {
                        Ok(()) => return Step::Serve,
                        Err(ListingFailed::Transport(failure)) => {
                            self.set(HealthState::Degraded(failure));
                        }
                        Err(ListingFailed::Unserved(failure)) => return Step::Failed(failure),
                    }
                }
                Err(ClientError::CoolingDown { retry_in, .. }) => {
                    tokio::select! {
                        () = tokio::time::sleep(retry_in) => {}
                        () = self.member.wake.notified() => {}
                    }
                }
                Err(error) => {
                    let failure = self.keep(error);
                    if !Conservative::allows(&failure) {
                        return Step::Failed(failure);
                    }
                    self.set(HealthState::Degraded(failure));
                }
            }
        }
    }

    /// Not usable: out of the catalogue, until the application restarts
    /// it, or until a call through its own client (`ServerGroup::client`)
    /// builds a session.
    async fn failed(
        &mut self,
        failure: Failure,
        generations: &mut watch::Receiver<Generation>,
    ) -> Step {
        self.publish(None);
        self.set(HealthState::after_failed_establishment(failure));
        loop {
            tokio::select! {
                () = self.member.wake.notified() => {
                    if self.member.take_intent() == Intent::Restart {
                        return self.restart().await;
                    }
                }
                changed = generations.changed() => {
                    if changed.is_err() {
                        return Step::GroupGone;
                    }
                    generations.borrow_and_update();
                    return match self.refresh().await {
                        Ok(()) => Step::Serve,
                        Err(failed) => failed.step(),
                    };
                }
            }
        }
    }

    async fn restart(&mut self) -> Step {
        self.publish(None);
        // Also ends a cool-down: a restart is the application's wish.
        let _ = self.member.client.close().await;
        match self.group.upgrade() {
            Some(_) => Step::Again,
            None => Step::GroupGone,
        }
    }

    /// Lists everything the server's capabilities offer, on the current
    /// session, and publishes it; a usable member is then ready.
    async fn refresh(&mut self) -> Result<(), ListingFailed> {
        let mut listing = Listing::default();
        for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            self.list(kind, &mut listing).await?;
        }
        self.publish(Some(listing));
        self.set(HealthState::Ready);
        Ok(())
    }

    /// Lists one kind again after the server said it changed.
    async fn refresh_kind(&mut self, kind: ListKind) -> Result<(), ListingFailed> {
        let current = self.member.listing.lock().expect("listing lock").clone();
        let Some(current) = current else {
            return Ok(());
        };
        let mut listing = (*current).clone();
        self.list(kind, &mut listing).await?;
        self.publish(Some(listing));
        Ok(())
    }

    /// One listing, into `listing`. Tools are always asked for (servers
    /// that forget to declare the capability are common, and a server
    /// without tools answers with an error, which leaves the list empty);
    /// prompts and resources only when the server's capabilities offer
    /// them, which saves two requests per server that has neither. A
    /// failure on transport is the caller's to handle; a server that
    /// declines the listing (a JSON-RPC error, an HTTP error status) leaves
    /// that kind empty; any other failure (a timeout, a size or page limit,
    /// an answer that is no listing) is the member's, its error kept.
    async fn list(&self, kind: ListKind, listing: &mut Listing) -> Result<(), ListingFailed> {
        let client = &self.member.client;
        let offered = match kind {
            ListKind::Tools => true,
            _ => match client.session().await {
                Ok((session, _)) => {
                    let key = match kind {
                        ListKind::Prompts => "prompts",
                        _ => "resources",
                    };
                    session.capabilities().get(key).is_some()
                }
                Err(error) => return Err(ListingFailed::Transport(error.failure())),
            },
        };
        if !offered {
            return Ok(());
        }
        let kept = |result: Result<(), ClientError>| match result {
            Err(error) if on_transport(&error) => Err(ListingFailed::Transport(error.failure())),
            Err(error)
                if matches!(
                    error.failure().kind,
                    FailureKind::Rpc | FailureKind::HttpStatus
                ) =>
            {
                Ok(())
            }
            Err(error) => Err(ListingFailed::Unserved(self.keep(error))),
            Ok(()) => Ok(()),
        };
        match kind {
            ListKind::Tools => kept(client.list_tools().await.map(|listed| {
                listing.tools = listed
                    .tools
                    .into_iter()
                    .filter(|tool| self.member.filter.allows(&tool.name))
                    .map(Arc::new)
                    .collect();
            })),
            ListKind::Prompts => kept(client.list_prompts().await.map(|prompts| {
                listing.prompts = prompts.into_iter().map(Arc::new).collect();
            })),
            _ => {
                kept(client.list_resources().await.map(|resources| {
                    listing.resources = resources.into_iter().map(Arc::new).collect();
                }))?;
                kept(client.list_resource_templates().await.map(|templates| {
                    listing.templates = templates.into_iter().map(Arc::new).collect();
                }))
            }
        }
    }

    /// Keeps a failed establishment's error for the application to read;
    /// its failure.
    fn keep(&self, error: ClientError) -> Failure {
        let failure = error.failure();
        *self.member.last_error.lock().expect("error lock poisoned") = Some(Arc::new(error));
        failure
    }

    fn set(&self, state: HealthState) {
        if state == HealthState::Ready {
            *self.member.last_error.lock().expect("error lock poisoned") = None;
        }
        if let Some(group) = self.group.upgrade() {
            group.set_health(&self.member, state);
        }
    }

    fn publish(&self, listing: Option<Listing>) {
        if let Some(group) = self.group.upgrade() {
            group.set_listing(&self.member, listing);
        }
    }
}

enum Ping {
    Answered,
    NotLegacy,
    /// The failure, and whether it showed the session gone.
    Failed(Failure, bool),
}

async fn tick(ticker: &mut Option<(tokio::time::Interval, Keepalive)>) {
    match ticker {
        Some((ticker, _)) => {
            ticker.tick().await;
        }
        None => std::future::pending().await,
    }
}
