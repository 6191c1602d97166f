//! The establishment stack, assembled: the layers of `mcp-connect-layers`
//! over the [`Connector`], erased into one cloneable service.
//!
//! ```text
//! FreshSessionRecoveryLayer   attempt 1..=N, each on a fresh transport (opt-in)
//!   FailureClassifierLayer    every error decided: eligible, ineligible, vetoed
//!     Connector               new transport + handshake per call
//! ```
//!
//! Recovery is off unless asked for: [`EstablishBuilder::new`] makes one
//! attempt, exactly as configured.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use mcp_connect_layers::classify::{Classified, FailureClassifierLayer};
use mcp_connect_layers::recovery::{FreshSessionRecoveryLayer, RecoveryError, RecoveryPolicy};
use mcp_connect_layers::Child;
use tower::util::BoxCloneSyncService;
use tower::{ServiceBuilder, ServiceExt};
use tower_service::Service;

use crate::connector::Connector;
use crate::error::Error;
use crate::request::ConnectRequest;
use crate::session::Session;

/// The error of the assembled stack: every attempt's decided error, the
/// first primary.
pub type EstablishError = RecoveryError<Classified<Error>>;

type Veto = Arc<dyn Fn(&Child<'_>) -> bool + Send + Sync>;

/// Configures an [`Establish`] stack.
pub struct EstablishBuilder {
    connector: Connector,
    recovery: RecoveryPolicy,
    veto: Option<Veto>,
}

impl EstablishBuilder {
    /// A stack over `connector` with recovery off.
    pub fn new(connector: Connector) -> Self {
        EstablishBuilder {
            connector,
            recovery: RecoveryPolicy::disabled(),
            veto: None,
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

    /// Assembles the stack.
    pub fn build(self) -> Establish {
        let veto = self.veto.unwrap_or_else(|| Arc::new(|_: &Child<'_>| false));
        let service = ServiceBuilder::new()
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
            .finish()
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
