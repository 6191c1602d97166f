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
//! member; one the server declined with an error leaves that kind empty;
//! one refused as the session before was keeps the last (`refused.rs`).
//!
//! It never retries what the conservative classifier forbids (auth,
//! throttling, DNS, TLS, configuration, an overall deadline): those leave
//! the server failed, or needing authorization, until the application
//! restarts it.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use mcp_connect_layers::jitter::Jitter;
use mcp_connect_layers::recovery::Backoff;
use mcp_connect_layers::{Failure, FailureKind, Stage};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinHandle;

use super::catalogue::Listing;
use super::filter::ToolFilter;
use super::health::{HealthState, ServerHealth};
use super::listing::{on_transport, ListingFailed, Relist};
use super::server::{Keepalive, Server};
use super::Shared;
use crate::client::{ClientError, Generation, McpClient};
use crate::inbound::{Known, NotificationSender, Notifications};
use crate::protocol::Era;

/// What the application asked of a member's supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Intent {
    Nothing,
    /// A call failed on transport: build a new session.
    Reconnect,
    /// Restart: close the session and establish anew.
    Restart,
}

/// One server, as the group keeps it.
pub(super) struct Member {
    pub(super) name: Arc<str>,
    /// The server's revision, which a reload compares.
    pub(super) revision: [u8; 16],
    /// Connected on its first call, not at start.
    pub(super) lazy: bool,
    pub(super) required: bool,
    /// Closed after this long without a routed call, and idle again.
    pub(super) idle_close: Option<Duration>,
    /// When a routed call last began or ended.
    pub(super) last_used: Mutex<Instant>,
    /// Routed calls under way (see `in_flight.rs`).
    pub(super) calls: watch::Sender<usize>,
    /// Notifications from its server that its supervisor's queue dropped.
    pub(super) dropped_notifications: Arc<std::sync::atomic::AtomicU64>,
    /// Where its listing is remembered: its target's fingerprint; `None`
    /// for a server authorized with OAuth (see `remembered.rs`).
    pub(super) remember_as: Option<String>,
    /// What its names are prefixed with instead of its name.
    pub(super) prefix: Option<Arc<str>>,
    pub(super) client: McpClient,
    pub(super) filter: ToolFilter,
    pub(super) health: Mutex<ServerHealth>,
    /// What the catalogue shows of it; `None` while it is not usable.
    pub(super) listing: Mutex<Option<Arc<Listing>>>,
    /// The client generation whose full listing last ended (listed or
    /// failed): behind the client's while a listing is under way.
    pub(super) listed: watch::Sender<u64>,
    /// Why its last establishment failed; cleared when it is ready.
    pub(super) last_error: Mutex<Option<Arc<ClientError>>>,
    /// Set when its first establishment ended (counted once toward the
    /// group's first settle).
    pub(super) first_settled: std::sync::atomic::AtomicBool,
    /// The pace of trying again after a failure an outage explains.
    pub(super) retry: Backoff,
    /// When the next of those tries is due, while one is.
    pub(super) retry_at: Mutex<Option<Instant>>,
    intent: Mutex<Intent>,
    pub(super) wake: Notify,
    pub(super) task: Mutex<Option<JoinHandle<()>>>,
}

impl Member {
    /// The member for `server`, and the notifications its sessions send.
    pub(super) fn new(
        server: Server,
        capacity: usize,
        retry: Backoff,
    ) -> (Arc<Member>, Notifications) {
        let (sender, notifications) = crate::inbound::notification_channel(capacity);
        let remember_as = (server.request.auth().is_none())
            .then(|| crate::transport::redact::hex(&server.target));
        let request = server.request.with_notifications(sender.clone());
        let member = Member {
            name: server.name,
            revision: server.revision,
            lazy: server.lazy,
            required: server.required,
            idle_close: server.idle_close,
            last_used: Mutex::new(Instant::now()),
            calls: watch::channel(0).0,
            dropped_notifications: sender.drop_counter(),
            remember_as,
            prefix: server.prefix,
            client: (server.call_layers.iter())
                .fold(
                    McpClient::builder(server.stack, request),
                    |client, layer| layer(client),
                )
                .build(),
            filter: server.filter,
            health: Mutex::new(ServerHealth::new(HealthState::Connecting, 0)),
            listing: Mutex::new(None),
            listed: watch::channel(0).0,
            last_error: Mutex::new(None),
            first_settled: std::sync::atomic::AtomicBool::new(false),
            retry: server.retry.unwrap_or(retry),
            retry_at: Mutex::new(None),
            intent: Mutex::new(Intent::Nothing),
            wake: Notify::new(),
            task: Mutex::new(None),
        };
        (Arc::new(member), notifications)
    }

    /// A routed call begins or ends now.
    pub(super) fn touch(&self) {
        if self.idle_close.is_some() {
            *self
                .last_used
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }

    /// When to close it for want of calls (a bound set, no call under way).
    fn idle_close_due(&self) -> Option<Instant> {
        let idle = self.idle_close?;
        if *self.calls.borrow() > 0 {
            return None;
        }
        let last = *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Some(last + idle)
    }

    pub(super) fn health(&self) -> ServerHealth {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the supervisor to restart: close, then establish anew.
    pub(super) fn request_restart(&self) {
        *self.intent.lock().unwrap_or_else(PoisonError::into_inner) = Intent::Restart;
        self.wake.notify_one();
    }

    /// A routed call failed: when on transport, asks the supervisor for a
    /// new session and returns the failure to show as degraded.
    pub(super) fn call_failed(&self, error: &ClientError) -> Option<Failure> {
        if !on_transport(error) {
            return None;
        }
        let failure = error.failure();
        let mut intent = self.intent.lock().unwrap_or_else(PoisonError::into_inner);
        if *intent == Intent::Nothing {
            *intent = Intent::Reconnect;
        }
        drop(intent);
        self.wake.notify_one();
        Some(failure)
    }

    pub(super) fn take_intent(&self) -> Intent {
        std::mem::replace(
            &mut *self.intent.lock().unwrap_or_else(PoisonError::into_inner),
            Intent::Nothing,
        )
    }
}

/// What a supervisor does after a listing failed.
pub(super) fn step_after(failed: ListingFailed) -> Step {
    match failed {
        ListingFailed::Transport(failure) => Step::Reconnect(failure),
        ListingFailed::Refused(failure) => Step::Refused(failure),
        ListingFailed::Unserved(failure) => Step::Failed(failure),
    }
}

pub(super) async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// What a supervisor does next.
pub(super) enum Step {
    /// Serve a usable member.
    Serve,
    /// Degraded by this failure: build a new session.
    Reconnect(Failure),
    /// Its listing was refused as its last session was: ask again.
    Refused(Failure),
    /// Not usable after this failure: wait for a restart.
    Failed(Failure),
    /// Establish again (a restart).
    Again,
    /// Unused for its idle bound: its session closed, idle until a call.
    Dormant,
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
    /// Failed establishments in a row, toward the retry backoff.
    pub(super) failures_in_a_row: u32,
    /// The retry backoff's randomness, per member.
    pub(super) rng: Jitter,
}

impl Supervisor {
    pub(super) async fn run(mut self) {
        let mut generations = self.member.client.generations();
        // A lazy member with nothing remembered is listed once at the
        // start (connect, list, remember, close), so its tools are in the
        // catalogue before its first call; one with a remembered listing
        // waits idle for a call.
        let mut list_once = self.member.lazy && self.remembered_listing().is_none();
        if self.member.lazy && !list_once && !self.idle(&mut generations).await {
            return;
        }
        loop {
            // An idle member woken by a call stays usable while its
            // session is finished: other calls are routed to it meanwhile.
            if self.member.health().state != HealthState::Idle {
                self.set(HealthState::Connecting);
            }
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
                    self.failures_in_a_row = 0;
                    generations.borrow_and_update();
                    match self.refresh().await {
                        Ok(()) if std::mem::take(&mut list_once) => {
                            // Listed and remembered: idle until a call.
                            let _ = self.member.client.close().await;
                            self.set(HealthState::Idle);
                            Step::Dormant
                        }
                        Ok(()) => Step::Serve,
                        Err(failed) => step_after(failed),
                    }
                }
                Err(error) => Step::Failed(self.keep(error)),
            };
            loop {
                step = match step {
                    Step::Serve => self.serve(&mut generations).await,
                    Step::Reconnect(failure) => self.reconnect(failure, &mut generations).await,
                    Step::Refused(failure) => self.refused(failure, &mut generations).await,
                    Step::Failed(failure) => self.failed(failure, &mut generations).await,
                    Step::Again => break,
                    Step::Dormant => {
                        if !self.idle(&mut generations).await {
                            return;
                        }
                        break;
                    }
                    Step::GroupGone => return,
                };
            }
        }
    }

    /// A lazy member until it is needed: idle until a call builds its
    /// session (or the application restarts it). False when the group is
    /// gone.
    async fn idle(&mut self, generations: &mut watch::Receiver<Generation>) -> bool {
        // `ServerGroup::add` published what is remembered and set it idle.
        tokio::select! {
            changed = generations.changed() => changed.is_ok(),
            () = self.member.wake.notified() => true,
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
        let mut calls = self.member.calls.subscribe();
        loop {
            tokio::select! {
                // A call began or ended: the idle bound is read again.
                Ok(()) = calls.changed(), if self.member.idle_close.is_some() => {}
                () = sleep_until(self.member.idle_close_due()) => {
                    if self.member.idle_close_due().is_some_and(|due| due <= Instant::now()) {
                        let _ = self.member.client.close().await;
                        self.set(HealthState::Idle);
                        return Step::Dormant;
                    }
                }
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
                            return step_after(failed);
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
                        Err(failed) => return step_after(failed),
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
        match tokio::time::timeout(bound, self.member.client.send(crate::protocol::Ping)).await {
            Ok(Ok(_)) => Ping::Answered,
            Ok(Err(error)) => Ping::Failed(error.failure(), error.is_session_lost()),
            Err(_) => Ping::Failed(Failure::new(Stage::REQUEST, FailureKind::Timeout), false),
        }
    }

    pub(super) async fn restart(&mut self) -> Step {
        self.publish(None);
        // Also ends a cool-down: a restart is the application's wish.
        let _ = self.member.client.close().await;
        match self.group.upgrade() {
            Some(_) => Step::Again,
            None => Step::GroupGone,
        }
    }

    /// Keeps a failed establishment's error for the application to read;
    /// its failure.
    pub(super) fn keep(&self, error: ClientError) -> Failure {
        let failure = error.failure();
        *self
            .member
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(error));
        failure
    }

    pub(super) fn set(&self, state: HealthState) {
        if state == HealthState::Ready {
            *self
                .member
                .last_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
        if !matches!(state, HealthState::Failed(_)) {
            // Only a failed member waits for its next try.
            *self
                .member
                .retry_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
        if let Some(group) = self.group.upgrade() {
            group.set_health(&self.member, state);
        }
    }

    /// Shows `listing` in the catalogue (`None`: nothing of this member).
    pub(super) fn publish(&self, listing: Option<Listing>) {
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
