//! A ready-made [`Establishment`] around any request value.
//!
//! A protocol client whose request type has no room for a deadline or
//! observers wraps it in an [`Envelope`] instead of implementing the traits
//! itself; an `Envelope<T>` with `T: Clone` is also a [`Reattempt`] that
//! sends the same value again.

use std::fmt;
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::failure::Stop;
use crate::{Establishment, Reattempt, StageObserver};

/// A request value with what the layers carry beside it.
///
/// ```
/// use mcp_connect_layers::{Envelope, Establishment};
/// use tokio_util::sync::CancellationToken;
///
/// let token = CancellationToken::new();
/// let request = Envelope::new("ping").with_cancellation(token.clone());
/// assert_eq!(*request.payload(), "ping");
/// assert!(request.cancellation().is_some());
/// ```
#[derive(Clone)]
pub struct Envelope<T> {
    payload: T,
    deadline: Option<Instant>,
    started: Option<Instant>,
    cancel: Option<CancellationToken>,
    observers: Vec<Arc<dyn StageObserver>>,
    attempt: u32,
    label: &'static str,
    pause: Option<crate::deadline::DeadlinePause>,
}

impl<T> Envelope<T> {
    /// `payload`, with no deadline yet, no cancellation and attempt 1.
    pub fn new(payload: T) -> Self {
        Envelope {
            payload,
            deadline: None,
            started: None,
            cancel: None,
            observers: Vec::new(),
            attempt: 1,
            label: "request",
            pause: None,
        }
    }

    /// Links the caller's cancellation.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// An absolute deadline of its own (the deadline layer keeps the earlier
    /// of this and its own).
    #[must_use]
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The label diagnostics reports (a stable, lower-case name).
    #[must_use]
    pub fn with_label(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }

    /// The request value.
    pub fn payload(&self) -> &T {
        &self.payload
    }

    /// The request value, unwrapped.
    pub fn into_payload(self) -> T {
        self.payload
    }
}

impl<T> fmt::Debug for Envelope<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope")
            .field("deadline", &self.deadline)
            .field("attempt", &self.attempt)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl<T> Establishment for Envelope<T> {
    /// The deadline, moved later by any time spent waiting for a person.
    fn deadline(&self) -> Option<Instant> {
        match &self.pause {
            Some(pause) => self.deadline.map(|d| pause.extend(d)),
            None => self.deadline,
        }
    }

    fn deadline_pause(&self) -> Option<&crate::deadline::DeadlinePause> {
        self.pause.as_ref()
    }

    fn set_deadline_pause(&mut self, pause: crate::deadline::DeadlinePause) {
        self.pause = Some(pause);
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
        self.label
    }
}

impl<T: Clone> Reattempt for Envelope<T> {
    fn next_attempt(&self, attempt: u32) -> Result<Self, Stop> {
        let mut next = self.clone();
        next.attempt = attempt;
        Ok(next)
    }
}
