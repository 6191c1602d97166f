//! The error of a recovered establishment: every attempt, the first primary.

use std::fmt;

use crate::decision::{Decided, Decision};
use crate::failure::Stop;
use crate::{CancelSource, Child, Classify, Failure, FailureKind};

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every attempt's error, in order; the first is primary.
pub struct RecoveryError<E> {
    errors: Vec<E>,
    stop: Stop,
}

impl<E> RecoveryError<E> {
    pub(crate) fn new(errors: Vec<E>, stop: Stop) -> Self {
        debug_assert!(!errors.is_empty());
        RecoveryError { errors, stop }
    }

    /// The first attempt's error.
    pub fn primary(&self) -> &E {
        &self.errors[0]
    }

    /// The errors of the attempts after the first, in order.
    pub fn later(&self) -> &[E] {
        &self.errors[1..]
    }

    /// How many attempts were made.
    pub fn attempts(&self) -> u32 {
        self.errors.len() as u32
    }

    /// Why recovery stopped.
    pub fn stop(&self) -> Stop {
        self.stop
    }

    /// Every attempt's error, in order, and why recovery stopped.
    pub fn into_parts(self) -> (Vec<E>, Stop) {
        (self.errors, self.stop)
    }

    /// The first attempt's error, unwrapped.
    pub fn into_primary(self) -> E {
        self.errors
            .into_iter()
            .next()
            .expect("at least one attempt")
    }
}

impl<E: fmt::Debug> fmt::Debug for RecoveryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecoveryError")
            .field("stop", &self.stop)
            .field("errors", &self.errors)
            .finish()
    }
}

/// Says how many attempts ran and why they stopped. The first attempt's
/// error is the [`source`](std::error::Error::source), so it is not repeated
/// here; the later ones are in [`RecoveryError::later`].
impl<E> fmt::Display for RecoveryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errors.len() {
            1 => f.write_str("gave up after 1 attempt")?,
            n => write!(f, "gave up after {n} attempts")?,
        }
        write!(f, ": {}", self.stop.describe())
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RecoveryError<E> {
    /// The first attempt's error, with its own chain.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.primary())
    }
}

impl<E> Classify for RecoveryError<E>
where
    E: Classify + Decided + std::error::Error + 'static,
{
    /// The failure that ended recovery: the caller's cancellation, the
    /// deadline, or a later attempt's vetoed or ineligible failure are
    /// reported as such; otherwise the first attempt's failure.
    fn failure(&self) -> Failure {
        let last = self.errors.last().expect("at least one attempt");
        if let Decision::Ineligible(failure) | Decision::Vetoed(failure) = last.decision() {
            return *failure;
        }
        match self.stop {
            Stop::Cancelled => Failure::new(last.failure().stage, FailureKind::Cancelled)
                .with_cancel_source(CancelSource::Caller),
            Stop::Deadline => Failure::new(last.failure().stage, FailureKind::Timeout)
                .with_cancel_source(CancelSource::Deadline),
            _ => self.primary().failure(),
        }
    }

    fn children(&self) -> Vec<Child<'_>> {
        self.errors.iter().flat_map(|e| e.children()).collect()
    }

    fn attempts(&self) -> u32 {
        RecoveryError::attempts(self)
    }

    fn stop(&self) -> Option<Stop> {
        Some(self.stop)
    }
}
