//! The establishment stack, assembled: the layers of `mcp-connect-layers`
//! over the [`Connector`], erased into one cloneable service.
//!
//! ```text
//! DeadlineLayer               one absolute deadline from the first poll_ready; hard cut at
//!                             deadline + cleanup bound
//!   LifecycleDiagnosticsLayer spans and payload-free events; metrics callback
//!     FreshSessionRecoveryLayer attempt 1..=N, each on a fresh transport (opt-in)
//!       FailureClassifierLayer  every error decided: eligible, ineligible, vetoed
//!         Connector             new transport + handshake per call
//! ```
//!
//! Recovery is off unless asked for: [`EstablishBuilder::new`] makes one
//! attempt, exactly as configured, within a 60-second deadline.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use mcp_connect_layers::classify::{Classified, FailureClassifierLayer};
use mcp_connect_layers::deadline::{DeadlineError, DeadlineLayer};
use mcp_connect_layers::diagnostics::{LifecycleDiagnosticsLayer, LifecycleMetrics};
use mcp_connect_layers::recovery::{
    FreshSessionRecoveryLayer, RecoveryError, RecoveryPolicy, Stop,
};
use mcp_connect_layers::{CancelSource, Child, Classify, Failure, FailureKind, Stage};
use tower::util::BoxCloneSyncService;

use crate::telemetry::establish::{EstablishOutcome, Established};
use tower::{ServiceBuilder, ServiceExt};
use tower_service::Service;

use crate::error::Error;
use crate::establish::stage::EraSignals;
use crate::establish::Connector;
use crate::request::ConnectRequest;
use crate::session::Session;

type Layered = DeadlineError<RecoveryError<Classified<Error>>>;
type Veto = Arc<dyn Fn(&Child<'_>) -> bool + Send + Sync>;

/// Configures an [`Establish`] stack.
///
/// ```
/// use std::time::Duration;
/// use mcp_connect::layers::recovery::RecoveryPolicy;
/// use mcp_connect::{Connector, EstablishBuilder};
///
/// // Up to three attempts, each on a new transport, all within 10 s.
/// let stack = EstablishBuilder::new(Connector::new())
///     .with_deadline(Duration::from_secs(10))
///     .with_recovery(RecoveryPolicy::new().with_max_attempts(3))
///     .build();
/// # drop(stack);
/// ```
pub struct EstablishBuilder {
    connector: Connector,
    recovery: RecoveryPolicy,
    veto: Option<Veto>,
    deadline: DeadlineLayer,
    diagnostics: LifecycleDiagnosticsLayer,
}

impl EstablishBuilder {
    /// A stack over `connector`: recovery off, a 60-second overall deadline,
    /// diagnostics to `tracing` only.
    pub fn new(connector: Connector) -> Self {
        EstablishBuilder {
            connector,
            recovery: RecoveryPolicy::disabled(),
            veto: None,
            deadline: DeadlineLayer::new(Duration::from_secs(60)),
            diagnostics: LifecycleDiagnosticsLayer::new().with_protocol("mcp"),
        }
    }

    /// Turns on recovery with `policy`.
    #[must_use]
    pub fn with_recovery(mut self, policy: RecoveryPolicy) -> Self {
        self.recovery = policy;
        self
    }

    /// Vetoes a fresh attempt whenever `veto` returns `true` for any child
    /// failure (for example when [`Child::find`] finds the application's own
    /// error type in the chain).
    #[must_use]
    pub fn with_veto<F>(mut self, veto: F) -> Self
    where
        F: Fn(&Child<'_>) -> bool + Send + Sync + 'static,
    {
        self.veto = Some(Arc::new(veto));
        self
    }

    /// The overall deadline of each establishment, measured from the
    /// caller's first `poll_ready` (a request's own earlier deadline wins).
    #[must_use]
    pub fn with_deadline(mut self, budget: Duration) -> Self {
        self.deadline = DeadlineLayer::new(budget);
        self
    }

    /// The deadline layer, with its cleanup bound.
    #[must_use]
    pub fn with_deadline_layer(mut self, deadline: DeadlineLayer) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sends every lifecycle value to `metrics` as well as `tracing`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<dyn LifecycleMetrics>) -> Self {
        self.diagnostics = LifecycleDiagnosticsLayer::new()
            .with_protocol("mcp")
            .with_metrics(metrics);
        self
    }

    /// Assembles the stack.
    pub fn build(self) -> Establish {
        let veto = self.veto.unwrap_or_else(|| Arc::new(|_: &Child<'_>| false));
        let service = ServiceBuilder::new()
            .map_err(EstablishError::from_layers)
            .layer(self.deadline)
            .layer(self.diagnostics)
            .layer(FreshSessionRecoveryLayer::new(self.recovery))
            .layer(
                FailureClassifierLayer::new()
                    .with_policy(EraSignals)
                    .with_veto(move |child: &Child<'_>| veto(child)),
            )
            .service(self.connector);
        Establish {
            service: BoxCloneSyncService::new(service),
        }
    }
}

impl fmt::Debug for EstablishBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EstablishBuilder")
            .field("recovery", &self.recovery)
            .field("veto", &self.veto.is_some())
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// The assembled establishment stack: a cloneable
/// `Service<ConnectRequest, Response = Session, Error = EstablishError>`.
#[derive(Clone)]
pub struct Establish {
    service: BoxCloneSyncService<ConnectRequest, Session, EstablishError>,
}

impl Establish {
    /// Establishes one session through the stack.
    pub async fn connect(&self, request: ConnectRequest) -> Result<Session, EstablishError> {
        self.clone().oneshot(request).await
    }
}

impl fmt::Debug for Establish {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Establish").finish_non_exhaustive()
    }
}

impl Service<ConnectRequest> for Establish {
    type Response = Session;
    type Error = EstablishError;
    type Future = futures_util::future::BoxFuture<'static, Result<Session, EstablishError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), EstablishError>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: ConnectRequest) -> Self::Future {
        if let Some(telemetry) = request.instruments().cloned() {
            // Owned: the request moves into the establishment.
            let peer = request.peer().owned();
            let cause = request.cause().clone();
            return crate::telemetry::establish::establishment(
                &telemetry,
                peer.borrowed(),
                &cause,
                |attempts| self.service.call(request.with_observer(attempts)),
                established,
            );
        }
        // Already boxed by the erased service: not boxed again.
        self.service.call(request)
    }
}

/// What the establishment span records of a result.
fn established(made: &Result<Session, EstablishError>) -> EstablishOutcome<'_> {
    match made {
        Ok(session) => Ok(Established {
            era: session.era().as_str(),
            transport: session.transport_kind().as_str(),
            version: session.protocol_version().as_str(),
        }),
        Err(error) => Err((error.failure(), Some(error.attempts()))),
    }
}

/// Why an establishment through the stack failed.
#[non_exhaustive]
pub enum EstablishError {
    /// Every attempt failed: each one's decided error, the first primary, and
    /// why no further attempt was made.
    Failed(RecoveryError<Classified<Error>>),
    /// The deadline passed and the attempt in progress did not end within
    /// its cleanup bound, so it was dropped (which closes what it opened).
    Deadline,
    /// The caller cancelled and the attempt in progress did not end within
    /// its cleanup bound, so it was dropped.
    Cancelled,
}

crate::error::report::reportable!(EstablishError);

impl EstablishError {
    fn from_layers(error: Layered) -> Self {
        match error {
            DeadlineError::Inner(attempts) => EstablishError::Failed(attempts),
            DeadlineError::Cancelled => EstablishError::Cancelled,
            _ => EstablishError::Deadline,
        }
    }

    fn attempts_error(&self) -> Option<&RecoveryError<Classified<Error>>> {
        match self {
            EstablishError::Failed(attempts) => Some(attempts),
            _ => None,
        }
    }

    /// How many attempts were made.
    pub fn attempts(&self) -> u32 {
        self.attempts_error().map_or(1, RecoveryError::attempts)
    }

    /// Why it stopped.
    pub fn stop(&self) -> Stop {
        match self {
            EstablishError::Failed(attempts) => attempts.stop(),
            EstablishError::Cancelled => Stop::Cancelled,
            EstablishError::Deadline => Stop::Deadline,
        }
    }

    /// The first attempt's error, with its decision; `None` when an attempt
    /// was cut and never returned one.
    pub fn primary(&self) -> Option<&Classified<Error>> {
        self.attempts_error().map(RecoveryError::primary)
    }

    /// The first attempt's error itself, in one call: its stage, its
    /// [`ErrorKind`](crate::ErrorKind), its source chain. `None` when an
    /// attempt was cut by the deadline or the caller and never returned one
    /// (then [`stop`](Self::stop) says which). The classifier's decision
    /// on it is in [`primary`](Self::primary).
    ///
    /// ```no_run
    /// # async fn run(stack: mcp_connect::Establish, request: mcp_connect::ConnectRequest) {
    /// use tower::ServiceExt;
    ///
    /// if let Err(failed) = stack.oneshot(request).await {
    ///     if let Some(error) = failed.error() {
    ///         eprintln!("{} failed: {:?}", error.stage(), error.kind());
    ///     }
    /// }
    /// # }
    /// ```
    pub fn error(&self) -> Option<&Error> {
        self.primary().map(Classified::get_ref)
    }

    /// The errors of the later attempts, in order.
    pub fn later(&self) -> &[Classified<Error>] {
        self.attempts_error().map_or(&[], RecoveryError::later)
    }
}

impl fmt::Debug for EstablishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EstablishError::Failed(attempts) => f.debug_tuple("Failed").field(attempts).finish(),
            EstablishError::Deadline => f.write_str("Deadline"),
            EstablishError::Cancelled => f.write_str("Cancelled"),
        }
    }
}

impl fmt::Display for EstablishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EstablishError::Failed(attempts) => attempts.fmt(f),
            EstablishError::Deadline => f.write_str(
                "the deadline passed and the attempt did not end within its cleanup bound",
            ),
            EstablishError::Cancelled => {
                f.write_str("cancelled, and the attempt did not end within its cleanup bound")
            }
        }
    }
}

impl std::error::Error for EstablishError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.primary().map(|e| e as _)
    }
}

impl Classify for EstablishError {
    fn failure(&self) -> Failure {
        match self {
            EstablishError::Failed(attempts) => attempts.failure(),
            EstablishError::Deadline => Failure::new(Stage::REQUEST, FailureKind::Timeout)
                .with_cancel_source(CancelSource::Deadline),
            EstablishError::Cancelled => Failure::new(Stage::REQUEST, FailureKind::Cancelled)
                .with_cancel_source(CancelSource::Caller),
        }
    }

    fn children(&self) -> Vec<Child<'_>> {
        match self {
            EstablishError::Failed(attempts) => attempts.children(),
            _ => vec![Child {
                failure: self.failure(),
                error: self,
            }],
        }
    }

    fn attempts(&self) -> u32 {
        EstablishError::attempts(self)
    }

    fn stop(&self) -> Option<Stop> {
        Some(EstablishError::stop(self))
    }
}
