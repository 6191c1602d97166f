//! The deadline layer's error.

use std::fmt;

use crate::failure::Stop;
use crate::{CancelSource, Child, Classify, Failure, FailureKind, Stage};

/// What [`Deadline`](super::Deadline) fails with.
#[derive(Debug)]
#[non_exhaustive]
pub enum DeadlineError<E> {
    /// The inner service's own error (which, when the deadline or the
    /// caller stopped it cooperatively, says so in its failure).
    Inner(E),
    /// The inner service neither got ready nor finished within the deadline
    /// plus the cleanup bound, and was dropped.
    Elapsed,
    /// The caller cancelled and the inner service did not finish within the
    /// cleanup bound, and was dropped.
    Cancelled,
}

impl<E> DeadlineError<E> {
    /// The inner error, if that is what this is.
    pub fn inner(&self) -> Option<&E> {
        match self {
            DeadlineError::Inner(e) => Some(e),
            _ => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for DeadlineError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeadlineError::Inner(e) => e.fmt(f),
            DeadlineError::Elapsed => f.write_str("the deadline passed"),
            DeadlineError::Cancelled => f.write_str("the caller cancelled"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for DeadlineError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DeadlineError::Inner(e) => e.source(),
            _ => None,
        }
    }
}

impl<E> Classify for DeadlineError<E>
where
    E: Classify + std::error::Error + 'static,
{
    fn failure(&self) -> Failure {
        match self {
            DeadlineError::Inner(e) => e.failure(),
            DeadlineError::Elapsed => Failure::new(Stage::REQUEST, FailureKind::Timeout)
                .with_cancel_source(CancelSource::Deadline),
            DeadlineError::Cancelled => Failure::new(Stage::REQUEST, FailureKind::Cancelled)
                .with_cancel_source(CancelSource::Caller),
        }
    }

    fn children(&self) -> Vec<Child<'_>> {
        match self {
            DeadlineError::Inner(e) => e.children(),
            _ => vec![Child {
                failure: self.failure(),
                error: self,
            }],
        }
    }

    fn attempts(&self) -> u32 {
        match self {
            DeadlineError::Inner(e) => e.attempts(),
            _ => 1,
        }
    }

    fn stop(&self) -> Option<Stop> {
        match self {
            DeadlineError::Inner(e) => e.stop(),
            DeadlineError::Elapsed => Some(Stop::Deadline),
            DeadlineError::Cancelled => Some(Stop::Cancelled),
        }
    }
}
