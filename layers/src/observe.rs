//! Stage events: the one stream from which timelines, logs and metrics are made.

use std::fmt;
use std::time::Duration;

use crate::{Failure, Stage};

/// How a stage ended, or that it began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StageOutcome {
    /// The stage began.
    Started,
    /// The stage finished successfully.
    Succeeded,
    /// The stage failed.
    Failed(Failure),
}

/// One stage transition of one establishment attempt. Payload-free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StageEvent {
    /// The attempt number, starting at 1.
    pub attempt: u32,
    /// The stage.
    pub stage: Stage,
    /// Time since the establishment started (not since the attempt).
    pub elapsed: Duration,
    /// What happened.
    pub outcome: StageOutcome,
    /// The HTTP status the stage ended with, when it was an HTTP exchange.
    pub http_status: Option<u16>,
}

impl StageEvent {
    /// A new event.
    pub fn new(attempt: u32, stage: Stage, elapsed: Duration, outcome: StageOutcome) -> Self {
        StageEvent {
            attempt,
            stage,
            elapsed,
            outcome,
            http_status: None,
        }
    }

    /// Sets the HTTP status.
    #[must_use]
    pub fn with_http_status(mut self, status: Option<u16>) -> Self {
        self.http_status = status;
        self
    }
}

/// Receives stage events as they happen, for timelines, logs or metrics.
///
/// Called inline on the establishing task: keep it cheap and never block.
pub trait StageObserver: Send + Sync + fmt::Debug {
    /// One stage event.
    fn on_event(&self, event: &StageEvent);
}
