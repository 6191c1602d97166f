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
    FreshSessionRecoveryLayer, Outcome, RecoveryError, RecoveryPolicy, Stop,
};
use mcp_connect_layers::{Child, Classify, Failure};
use tower::util::BoxCloneSyncService;
use tower::{ServiceBuilder, ServiceExt};
use tower_service::Service;

use crate::connector::Connector;
use crate::error::Error;
use crate::request::ConnectRequest;
use crate::session::Session;

type Layered = DeadlineError<RecoveryError<Classified<Error>>>;
type Veto = Arc<dyn Fn(&Child<'_>) -> bool + Send + Sync>;

/// Configures an [`Establish`] stack.
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
            diagnostics: LifecycleDiagnosticsLayer::new(),
        }
    }

    /// Turns on recovery with `policy`.
    pub fn with_recovery(mut self, policy: RecoveryPolicy) -> Self {
        self.recovery = policy;
        self
    }

    /// Vetoes a fresh attempt whenever `veto` returns `true` for any child
    /// failure (for example when [`Child::find`] finds the application's own
    /// error type in the chain).
    pub fn with_veto<F>(mut self, veto: F) -> Self
    where
        F: Fn(&Child<'_>) -> bool + Send + Sync + 'static,
    {
        self.veto = Some(Arc::new(veto));
        self
    }

    /// The overall deadline of each establishment, measured from the
    /// caller's first `poll_ready` (a request's own earlier deadline wins).
    pub fn with_deadline(mut self, budget: Duration) -> Self {
        self.deadline = DeadlineLayer::new(budget);
        self
    }

    /// The deadline layer, with its cleanup bound.
    pub fn with_deadline_layer(mut self, deadline: DeadlineLayer) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sends every lifecycle value to `metrics` as well as `tracing`.
    pub fn with_metrics(mut self, metrics: Arc<dyn LifecycleMetrics>) -> Self {
        self.diagnostics = LifecycleDiagnosticsLayer::new().with_metrics(metrics);
        self
    }

    /// Assembles the stack.
    pub fn build(self) -> Establish {
        let veto = self.veto.unwrap_or_else(|| Arc::new(|_: &Child<'_>| false));
        let service = ServiceBuilder::new()
            .map_err(EstablishError)
            .layer(self.deadline)
            .layer(self.diagnostics)
            .layer(FreshSessionRecoveryLayer::new(self.recovery))
            .layer(FailureClassifierLayer::new().with_veto(move |child: &Child<'_>| veto(child)))
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
        self.service.clone().oneshot(request).await
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
    type Future = <BoxCloneSyncService<ConnectRequest, Session, EstablishError> as Service<
        ConnectRequest,
    >>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), EstablishError>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: ConnectRequest) -> Self::Future {
        self.service.call(request)
    }
}

/// Why an establishment through the stack failed: every attempt's decided
/// error (the first primary), or the deadline layer's hard cut.
pub struct EstablishError(Layered);

impl EstablishError {
    fn recovery(&self) -> Option<&RecoveryError<Classified<Error>>> {
        self.0.inner()
    }

    /// How many attempts were made.
    pub fn attempts(&self) -> u32 {
        self.0.attempts()
    }

    /// Why it stopped (the hard cut reads as [`Stop::Deadline`] or
    /// [`Stop::Cancelled`]).
    pub fn stop(&self) -> Stop {
        match &self.0 {
            DeadlineError::Inner(e) => e.stop(),
            DeadlineError::Cancelled => Stop::Cancelled,
            _ => Stop::Deadline,
        }
    }

    /// The first attempt's error, with its decision; `None` only when the
    /// deadline layer cut an attempt that never returned.
    pub fn primary(&self) -> Option<&Classified<Error>> {
        self.recovery().map(RecoveryError::primary)
    }

    /// The errors of the later attempts, in order.
    pub fn later(&self) -> &[Classified<Error>] {
        self.recovery().map_or(&[], RecoveryError::later)
    }

    /// The layered error, for matching on every case.
    pub fn get_ref(&self) -> &DeadlineError<RecoveryError<Classified<Error>>> {
        &self.0
    }
}

impl fmt::Debug for EstablishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for EstablishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            DeadlineError::Inner(e) => e.fmt(f),
            other => other.fmt(f),
        }
    }
}

impl std::error::Error for EstablishError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            DeadlineError::Inner(e) => Some(e.primary()),
            _ => None,
        }
    }
}

impl Classify for EstablishError {
    fn failure(&self) -> Failure {
        self.0.failure()
    }

    fn children(&self) -> Vec<Child<'_>> {
        self.0.children()
    }
}

impl Outcome for EstablishError {
    fn attempts(&self) -> u32 {
        self.0.attempts()
    }

    fn exhaustion(&self) -> Option<&'static str> {
        self.0.exhaustion()
    }
}
