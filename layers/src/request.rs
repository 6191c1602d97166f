//! What a request must carry to travel through the layers.
//!
//! One trait, [`Establishment`], carries what every layer reads or writes:
//! the absolute deadline and when it started, the caller's cancellation, the
//! stage observers diagnostics adds, and a few facts about the request
//! (its label, whether sending it twice is safe). The recovery layer also
//! needs to make the next attempt's request: that is [`Reattempt`], an
//! extension of the same trait.
//!
//! With the `http` feature, `http::Request<B>` implements both, keeping
//! everything in its extensions (see [`crate::http`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::failure::Stop;
use crate::StageObserver;

/// A request that can travel through the layers.
///
/// The deadline layer sets the deadline, diagnostics adds observers, the
/// classifier and recovery read the rest. The provided methods describe a
/// request that may be sent twice, reports no stages of its own, and needs
/// no time to clean up after a cut.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot travel through the establishment layers",
    label = "this request type does not implement `Establishment`",
    note = "implement `mcp_connect_layers::Establishment` for it, or enable the `http` feature of `mcp-connect-layers` for `http::Request<B>`"
)]
pub trait Establishment {
    /// The absolute deadline, if one is set.
    fn deadline(&self) -> Option<Instant>;

    /// Sets when the whole establishment started and its absolute deadline.
    fn set_deadline(&mut self, started: Instant, deadline: Instant);

    /// When the whole establishment started, once set.
    fn started(&self) -> Option<Instant>;

    /// The caller's cancellation.
    fn cancellation(&self) -> Option<&CancellationToken>;

    /// Adds an observer for every stage event of this request.
    fn add_observer(&mut self, observer: Arc<dyn StageObserver>);

    /// The observers added so far.
    fn observers(&self) -> &[Arc<dyn StageObserver>];

    /// The attempt this request is for, starting at 1.
    fn attempt(&self) -> u32 {
        1
    }

    /// A stable, lower-case label for diagnostics (a transport mode, a
    /// scheme): never a URL or anything the caller wrote.
    fn label(&self) -> &'static str {
        "request"
    }

    /// Whether sending it a second time is safe when a failure may have
    /// come after it was sent. When `false`, only a failure before anything
    /// was sent (the connect stage) allows a fresh attempt.
    fn is_replay_safe(&self) -> bool {
        true
    }

    /// Whether the service below reports its own stage events. When
    /// `false`, the classifier reports one [`Stage::REQUEST`](crate::Stage::REQUEST)
    /// per attempt.
    fn reports_stages(&self) -> bool {
        false
    }

    /// The record of time spent waiting for a person, when this request
    /// keeps one: that time does not count against the deadline. `None` by
    /// default: every moment counts.
    fn deadline_pause(&self) -> Option<&crate::pause::DeadlinePause> {
        None
    }

    /// Gives the request the deadline layer's pause record; ignored by
    /// requests that keep none.
    fn set_deadline_pause(&mut self, pause: crate::pause::DeadlinePause) {
        let _ = pause;
    }

    /// How long the service below may take to dispose of what it opened
    /// after the deadline or a cancellation, before the deadline layer drops
    /// it. Zero suits a service whose future is cleaned up by dropping it.
    fn cleanup_bound(&self) -> Duration {
        Duration::ZERO
    }
}

/// A request that can make the request for a later attempt.
pub trait Reattempt: Establishment + Sized {
    /// The request for attempt `attempt` (2 or more), made before this one
    /// is sent. `Err` says why there is none: [`Stop::NoPlan`] when the plan
    /// has no such attempt, [`Stop::NotReplayable`] when the request cannot
    /// be sent again (a streaming body, say).
    fn next_attempt(&self, attempt: u32) -> Result<Self, Stop>;
}
