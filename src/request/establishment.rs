//! What the layers and the rest of the crate read of a request: the
//! `Establishment` the layers see, and the crate's own accessors. The
//! fields stay private to `request`, so every reader goes through one
//! meaning per name.

use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::{Establishment, StageObserver};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{ConnectRequest, Strategy, TransportMode};
use crate::era_cache::EraCache;
use crate::inbound::Inbound;
use crate::request::clock::Clock;
use crate::request::Target;
use crate::session::ClientIdentity;

/// What the rest of the crate reads of a request; its fields stay private
/// so that every reader goes through one meaning per name.
impl ConnectRequest {
    /// This attempt's strategy (chosen by the ladder's plan).
    pub(crate) fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// A copy for attempt number `attempt`, run with `strategy`.
    pub(crate) fn for_attempt(&self, attempt: u32, strategy: Strategy) -> Self {
        let mut next = self.clone();
        next.attempt = attempt;
        next.strategy = strategy;
        next
    }

    /// The clock of one establishment of this request: its start (the
    /// deadline layer's, or now), deadline, pause, cancellation and
    /// observers.
    pub(crate) fn clock(&self) -> Clock {
        Clock::new(
            self.started.unwrap_or_else(Instant::now),
            self.deadline,
            self.cancel.clone(),
            self.attempt,
            self.observers.clone(),
            self.pause.clone(),
        )
    }

    pub(crate) fn client(&self) -> &Arc<ClientIdentity> {
        &self.settings.client
    }

    pub(crate) fn inbound(&self) -> &Arc<Inbound> {
        &self.settings.inbound
    }

    pub(crate) fn auth(&self) -> Option<&crate::auth::Authorization> {
        self.settings.auth.as_ref()
    }

    pub(crate) fn era_cache(&self) -> Option<&EraCache> {
        self.settings.era_cache.as_ref()
    }

    pub(crate) fn probe_timeout_is_legacy(&self) -> bool {
        self.settings.probe_timeout_is_legacy
    }
}

impl Establishment for ConnectRequest {
    /// The deadline, moved later by any time spent waiting for a person.
    fn deadline(&self) -> Option<Instant> {
        ConnectRequest::deadline(self)
    }

    fn deadline_pause(&self) -> Option<&mcp_connect_layers::deadline::DeadlinePause> {
        Some(&self.pause)
    }

    fn set_deadline_pause(&mut self, pause: mcp_connect_layers::deadline::DeadlinePause) {
        self.pause = pause;
    }

    fn set_deadline(&mut self, started: Instant, deadline: Instant) {
        self.started = Some(started);
        self.deadline = Some(deadline);
    }

    fn started(&self) -> Option<Instant> {
        self.started
    }

    fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancel.as_ref()
    }

    fn add_observer(&mut self, observer: Arc<dyn StageObserver>) {
        self.observers.push(observer);
    }

    fn observers(&self) -> &[Arc<dyn StageObserver>] {
        &self.observers
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }

    fn label(&self) -> &'static str {
        match (self.settings.mode, &*self.target) {
            (TransportMode::Auto, Target::Http { .. }) => "auto",
            (TransportMode::Auto, Target::Stdio(_)) | (TransportMode::Stdio, _) => "stdio",
            (TransportMode::StreamableHttp, _) => "streamable-http",
            (TransportMode::Sse, _) => "sse",
        }
    }

    /// Every attempt opens a new transport and session: nothing of an
    /// earlier attempt is reused, so sending it again is always safe.
    fn is_replay_safe(&self) -> bool {
        true
    }

    /// The handshake reports its stages (probe, initialize, ...) itself.
    fn reports_stages(&self) -> bool {
        true
    }

    /// The stdio close ladder: stdin EOF, SIGTERM, SIGKILL, each given the
    /// close grace; an HTTP session's DELETE fits well inside.
    fn cleanup_bound(&self) -> Duration {
        self.settings.limits.close_bound()
    }
}
