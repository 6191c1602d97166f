//! MCP's own establishment stages, and the policy that reads MCP's era
//! signals in them.
//!
//! `mcp-connect-layers` knows only neutral stages (connect, request, close,
//! ...) and a conservative recovery policy that reads failure kinds. MCP adds
//! four stages of its own and one rule: while establishing, an HTTP 400, 404
//! or 405, or a JSON-RPC error, is what an older server answers to a newer
//! request, so a fresh attempt planned for the older era may succeed.

use crate::protocol::methods;
use mcp_connect_layers::classify::{ClassifyPolicy, Conservative, Decision};
use mcp_connect_layers::{Child, Failure, FailureKind, Phase, StageInfo};

pub use mcp_connect_layers::Stage;

/// Opening a legacy HTTP+SSE stream and waiting for its `endpoint` event.
pub const SSE_ENDPOINT: Stage = Stage::new(&StageInfo {
    name: "sse_endpoint",
    phase: Phase::Establish,
});
/// The 2026-era probe, `server/discover`.
pub const PROBE: Stage = Stage::new(&StageInfo {
    name: "probe",
    phase: Phase::Establish,
});
/// The 2025-era handshake request, `initialize`.
pub const INITIALIZE: Stage = Stage::new(&StageInfo {
    name: methods::INITIALIZE,
    phase: Phase::Establish,
});
/// The 2025-era handshake acknowledgement, `notifications/initialized`.
pub const INITIALIZED: Stage = Stage::new(&StageInfo {
    name: "initialized",
    phase: Phase::Establish,
});

/// [`Conservative`], plus MCP's era signals: while establishing, HTTP 400,
/// 404 or 405, and a JSON-RPC error (with no status or a 2xx, 400, 404 or
/// 405 one) allow a fresh attempt. The stack built by
/// [`EstablishBuilder`](crate::EstablishBuilder) uses it; a stack built by
/// hand should too:
///
/// ```
/// use mcp_connect::layers::classify::FailureClassifierLayer;
/// use mcp_connect::establish::stage::EraSignals;
///
/// let layer = FailureClassifierLayer::new().with_policy(EraSignals);
/// # let _ = layer;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EraSignals;

impl EraSignals {
    /// The rule for one failure, as plain data.
    pub fn allows(failure: &Failure) -> bool {
        let signal = failure.stage.is_establishing()
            && match failure.kind {
                FailureKind::HttpStatus => crate::protocol::is_era_refusal(failure.http_status),
                FailureKind::Rpc => failure.http_status.is_none_or(|s| {
                    (200..=299).contains(&s) || crate::protocol::is_era_refusal(Some(s))
                }),
                _ => false,
            };
        signal || Conservative::allows(failure)
    }
}

impl ClassifyPolicy for EraSignals {
    fn decide(&self, child: &Child<'_>) -> Decision {
        if EraSignals::allows(&child.failure) {
            Decision::Eligible
        } else {
            Decision::Ineligible(child.failure)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_connect_layers::CancelSource;

    #[test]
    fn era_signals_only_while_establishing() {
        let yes = [
            Failure::new(INITIALIZE, FailureKind::HttpStatus).with_http_status(404),
            Failure::new(PROBE, FailureKind::HttpStatus).with_http_status(400),
            Failure::new(PROBE, FailureKind::HttpStatus).with_http_status(405),
            Failure::new(INITIALIZE, FailureKind::Rpc).with_jsonrpc_code(-32600),
            Failure::new(PROBE, FailureKind::Rpc).with_http_status(200),
            Failure::new(INITIALIZE, FailureKind::Closed),
            Failure::new(PROBE, FailureKind::Timeout)
                .with_cancel_source(CancelSource::ProbeTimeout),
        ];
        for failure in yes {
            assert!(EraSignals::allows(&failure), "{failure}");
        }
        let no = [
            Failure::new(Stage::REQUEST, FailureKind::HttpStatus).with_http_status(404),
            Failure::new(Stage::REQUEST, FailureKind::Rpc),
            Failure::new(INITIALIZE, FailureKind::HttpStatus).with_http_status(500),
            Failure::new(INITIALIZE, FailureKind::HttpStatus).with_http_status(503),
            Failure::new(INITIALIZE, FailureKind::Rpc).with_http_status(500),
            Failure::new(PROBE, FailureKind::Auth).with_http_status(401),
            Failure::new(PROBE, FailureKind::Throttled).with_http_status(429),
        ];
        for failure in no {
            assert!(!EraSignals::allows(&failure), "{failure}");
        }
    }
}
