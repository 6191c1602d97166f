//! Where an application hands telemetry (feature `otel`) to a request. The
//! rest of the crate reads it through crate-private accessors that exist
//! with the feature off too (on the stand-in types of
//! `telemetry/off.rs`), so no call site names the feature.

use super::ConnectRequest;
use crate::telemetry::Telemetry;

impl ConnectRequest {
    /// Instruments what this request makes with OpenTelemetry spans and
    /// metrics (feature `otel`; see [`telemetry`](crate::telemetry)): its
    /// establishments through the stack, each attempt, every request of
    /// its sessions (trace context in `params._meta`), and the server's
    /// requests to its handler.
    #[must_use]
    pub fn with_telemetry(self, telemetry: Telemetry) -> Self {
        self.with_instruments(Some(telemetry))
    }

    /// The request's telemetry, when it has one.
    pub fn telemetry(&self) -> Option<&Telemetry> {
        self.instruments()
    }
}
