//! Telemetry with the `otel` feature off: the names the rest of the crate
//! calls, on types that cannot be made. Every `Option<Telemetry>` is then
//! `None`, each instrumented path reduces to the plain one at compile time,
//! and no call site needs a `cfg`. The real module is `mod.rs` beside this.

use serde_json::Value;

/// Cannot be made without the `otel` feature.
#[derive(Clone, Debug)]
pub(crate) enum Telemetry {}

pub(crate) mod call {
    use serde_json::value::RawValue;
    use serde_json::Value;

    use super::Telemetry;
    use crate::protocol::Request;
    use crate::target::Target;
    use crate::Error;

    /// Cannot be made without the `otel` feature.
    pub(crate) enum SessionTelemetry {}

    impl SessionTelemetry {
        pub(crate) fn new(
            telemetry: &Telemetry,
            _: &Target,
            _: &str,
            _: impl FnOnce() -> Option<String>,
        ) -> Self {
            match *telemetry {}
        }

        pub(crate) fn end(&self) {
            match *self {}
        }
    }

    /// Cannot be made without the `otel` feature.
    pub(crate) enum CallSpan {}

    impl CallSpan {
        pub(crate) fn start(
            session: &SessionTelemetry,
            _: &str,
            _: i64,
            _: Option<&Value>,
        ) -> Self {
            match *session {}
        }

        pub(crate) fn carry(&self, _: &mut Request) {
            match *self {}
        }

        pub(crate) fn finish(self, _: &Result<Box<RawValue>, Error>) {
            match self {}
        }
    }
}

pub(crate) mod establish {
    use std::future::Future;

    use futures_util::future::BoxFuture;

    use super::Telemetry;
    use crate::stack::EstablishError;
    use crate::{ConnectRequest, Error, Session};

    pub(crate) fn establishment<F>(
        telemetry: &Telemetry,
        _: ConnectRequest,
        _: impl FnOnce(ConnectRequest) -> F,
    ) -> BoxFuture<'static, Result<Session, EstablishError>>
    where
        F: Future<Output = Result<Session, EstablishError>> + Send + 'static,
    {
        match *telemetry {}
    }

    pub(crate) async fn attempt<F>(
        telemetry: &Telemetry,
        _: ConnectRequest,
        _: impl FnOnce(ConnectRequest) -> F,
    ) -> Result<Session, Error>
    where
        F: Future<Output = Result<Session, Error>>,
    {
        match *telemetry {}
    }
}

pub(crate) mod inbound {
    use std::future::Future;

    use super::{Telemetry, Value};
    use crate::protocol::RpcError;

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
