//! Telemetry with the `otel` feature off: the names the rest of the crate
//! calls, on types that cannot be made. Every `Option<Telemetry>` is then
//! `None`, each instrumented path reduces to the plain one at compile time,
//! and no call site needs a `cfg`. The real module is `mod.rs` beside this;
//! `outcome.rs` is shared by both.

use std::future::Future;
use std::sync::Arc;

use mcp_connect_layers::{Failure, StageObserver};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::protocol::{Request, RpcError};

#[path = "outcome.rs"]
mod outcome;

/// Cannot be made without the `otel` feature.
#[derive(Clone, Debug)]
pub(crate) enum Telemetry {}

pub(crate) mod call {
    use super::*;

    pub(crate) fn record_unsent(
        telemetry: &Telemetry,
        _: super::establish::Peer<'_>,
        _: &crate::protocol::EncodedRequest,
        _: std::time::Duration,
        _: &str,
    ) {
        match *telemetry {}
    }

    /// Cannot be made without the `otel` feature.
    pub(crate) enum SessionTelemetry {}

    impl SessionTelemetry {
        pub(crate) fn new(
            telemetry: &Telemetry,
            _: super::establish::Peer<'_>,
            _: &str,
            _: impl FnOnce() -> Option<String>,
        ) -> Self {
            match *telemetry {}
        }

        pub(crate) fn within_establishment<'a, T: 'a>(
            &self,
            _: futures_util::future::BoxFuture<'a, T>,
        ) -> futures_util::future::BoxFuture<'a, T> {
            match *self {}
        }

        pub(crate) fn end(&self) {
            match *self {}
        }

        pub(crate) fn loss_cause(&self) -> super::establish::Cause {
            match *self {}
        }
    }

    /// Cannot be made without the `otel` feature.
    pub(crate) enum CallSpan {}

    impl CallSpan {
        pub(crate) fn start(
            session: &SessionTelemetry,
            _: &crate::protocol::EncodedRequest,
            _: i64,
        ) -> Self {
            match *session {}
        }

        pub(crate) fn carry(&self, _: &mut Request) {
            match *self {}
        }

        pub(crate) fn finish(self, _: Result<&RawValue, Failure>) {
            match self {}
        }
    }
}

pub(crate) mod establish {
    use futures_util::future::BoxFuture;

    pub(crate) use super::outcome::{EstablishOutcome, Established, Peer};
    use super::*;

    /// Nothing to link to without the `otel` feature.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct Cause;

    pub(crate) fn establishment<T, E, F>(
        telemetry: &Telemetry,
        _: Peer<'_>,
        _: &Cause,
        _: impl FnOnce(Arc<dyn StageObserver>) -> F,
        _: fn(&Result<T, E>) -> EstablishOutcome<'_>,
    ) -> BoxFuture<'static, Result<T, E>>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
    {
        match *telemetry {}
    }

    pub(crate) async fn attempt<T, E, F>(
        telemetry: &Telemetry,
        _: Peer<'_>,
        _: u32,
        _: impl FnOnce(Arc<dyn StageObserver>) -> F,
        _: impl FnOnce(&Result<T, E>) -> Option<Failure>,
    ) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        match *telemetry {}
    }
}

pub(crate) mod inbound {
    use super::*;

    /// Runs the handler on a server request.
    pub(crate) async fn answer<F>(
        _: Option<&Telemetry>,
        _: &str,
        params: Option<Value>,
        handle: impl FnOnce(Option<Value>) -> F,
    ) -> Result<Value, RpcError>
    where
        F: Future<Output = Result<Value, RpcError>>,
    {
        handle(params).await
    }
}
