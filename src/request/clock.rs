//! The time and cancellation context of one establishment attempt.
//!
//! Every wait in the handshake goes through [`Clock::limit`], which bounds it
//! by the stage's own limit *and* what is left of the overall deadline, and
//! races it against the caller's cancellation. Waits end by returning a typed
//! error, never by being dropped, so the handshake's own cleanup always runs.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::deadline::DeadlinePause;
use mcp_connect_layers::{CancelSource, Failure, Stage, StageEvent, StageObserver, StageOutcome};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, ErrorKind};

pub(crate) struct Clock {
    started: Instant,
    deadline: Option<Instant>,
    /// Time spent waiting for a person, which moves the deadline later.
    pause: DeadlinePause,
    cancel: Option<CancellationToken>,
    attempt: u32,
    observers: Vec<Arc<dyn StageObserver>>,
}

impl Clock {
    pub(crate) fn new(
        started: Instant,
        deadline: Option<Instant>,
        cancel: Option<CancellationToken>,
        attempt: u32,
        observers: Vec<Arc<dyn StageObserver>>,
        pause: DeadlinePause,
    ) -> Self {
        Clock {
            started,
            deadline,
            pause,
            cancel,
            attempt,
            observers,
        }
    }

    /// The overall deadline, moved later by the time spent waiting for a
    /// person.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline.map(|d| self.pause.extend(d))
    }

    /// Pauses the deadline while a person is waited for.
    pub(crate) fn pause(&self) -> &DeadlinePause {
        &self.pause
    }

    /// Runs `fut`, which may wait for a person, within the overall deadline
    /// (moved later by that wait, however long it is) and the caller's
    /// cancellation. Its machine steps bound themselves.
    pub(crate) async fn pausable<T, F>(&self, stage: Stage, fut: F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        self.check(stage)?;
        tokio::pin!(fut);
        let cancelled = async {
            match &self.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        loop {
            let now = Instant::now();
            let until = match self.deadline() {
                None => None,
                Some(_) if self.pause.is_paused() => Some(now + Duration::from_millis(100)),
                Some(deadline) if deadline <= now => {
                    return Err(Error::new(
                        stage,
                        ErrorKind::Timeout(CancelSource::Deadline),
                    ))
                }
                Some(deadline) => Some(deadline),
            };
            let expiry = async {
                match until {
                    Some(until) => tokio::time::sleep_until(until).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = &mut cancelled => return Err(Error::new(stage, ErrorKind::Cancelled)),
                outcome = &mut fut => return outcome,
                _ = expiry => {}
            }
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// An error if the caller cancelled or the deadline has passed: checked
    /// before starting anything new.
    pub(crate) fn check(&self, stage: Stage) -> Result<(), Error> {
        if self.is_cancelled() {
            return Err(Error::new(stage, ErrorKind::Cancelled));
        }
        if self.deadline().is_some_and(|d| Instant::now() >= d) {
            return Err(Error::new(
                stage,
                ErrorKind::Timeout(CancelSource::Deadline),
            ));
        }
        Ok(())
    }

    pub(crate) fn begin(&self, stage: Stage) {
        self.emit(stage, StageOutcome::Started, None);
    }

    pub(crate) fn succeed(&self, stage: Stage) {
        self.emit(stage, StageOutcome::Succeeded, None);
    }

    pub(crate) fn fail(&self, error: &Error) {
        self.fail_with(error.failure());
    }

    pub(crate) fn fail_with(&self, failure: Failure) {
        self.emit(
            failure.stage,
            StageOutcome::Failed(failure),
            failure.http_status,
        );
    }

    fn emit(&self, stage: Stage, outcome: StageOutcome, http_status: Option<u16>) {
        if self.observers.is_empty() {
            return;
        }
        let event = StageEvent::new(self.attempt, stage, self.started.elapsed(), outcome)
            .with_http_status(http_status);
        for observer in &self.observers {
            observer.on_event(&event);
        }
    }

    /// Runs one stage: reports it started, runs `fut`, reports how it
    /// ended. Every stage of the handshake goes through here (or
    /// [`timed`](Self::timed)), so none can forget an event.
    pub(crate) async fn stage<T, F>(&self, stage: Stage, fut: F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        self.begin(stage);
        let outcome = fut.await;
        match &outcome {
            Ok(_) => self.succeed(stage),
            Err(error) => self.fail(error),
        }
        outcome
    }

    /// [`stage`](Self::stage) with [`limit`](Self::limit): one stage, bounded.
    pub(crate) async fn timed<T, F>(
        &self,
        stage: Stage,
        limit: Duration,
        source: CancelSource,
        fut: F,
    ) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        self.stage(stage, self.limit(stage, limit, source, fut))
            .await
    }

    /// Runs `fut` within `limit` (reported as `source`), the overall
    /// deadline (reported as [`CancelSource::Deadline`]) and the caller's
    /// cancellation.
    pub(crate) async fn limit<T, F>(
        &self,
        stage: Stage,
        limit: Duration,
        source: CancelSource,
        fut: F,
    ) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        self.check(stage)?;
        // A limit of `Duration::MAX` means "none": saturate instead of overflowing.
        let own = mcp_connect_layers::instant::after(Instant::now(), limit);
        let (until, source) = match self.deadline() {
            Some(deadline) if deadline <= own => (deadline, CancelSource::Deadline),
            _ => (own, source),
        };
        let bounded = tokio::time::timeout_at(until, fut);
        let outcome = match &self.cancel {
            Some(token) => tokio::select! {
                biased;
                _ = token.cancelled() => return Err(Error::new(stage, ErrorKind::Cancelled)),
                outcome = bounded => outcome,
            },
            None => bounded.await,
        };
        outcome.unwrap_or_else(|_| Err(Error::new(stage, ErrorKind::Timeout(source))))
    }
}
