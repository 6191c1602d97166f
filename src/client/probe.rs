//! The circuit breaker's half-open probe for MCP: the era's liveness check
//! (`ping`, or `server/discover` on the modern era) before the call it
//! admits, so that a server still down never sees a real call.

use mcp_connect_layers::policy::{BreakerConfig, CircuitBreakerLayer, Probe};

use super::{Call, ClientError};
use crate::protocol::{McpRequest, Ping};

/// Sends the liveness check before the half-open breaker's call.
#[derive(Debug, Clone, Copy, Default)]
pub struct LivenessProbe;

impl Probe<Call> for LivenessProbe {
    fn probe(&self, _: &Call) -> Option<Call> {
        // The liveness check (`ping`, or the modern era's
        // `server/discover`), with none of the call's own options.
        Some(Call::new(Ping.encode()))
    }
}

/// A circuit breaker for one server's calls (see
/// [`CircuitBreakerLayer`]) whose half-open probe is the liveness check.
///
/// ```no_run
/// use mcp_connect::layers::policy::BreakerConfig;
/// # fn run(builder: mcp_connect::client::McpClientBuilder) -> mcp_connect::client::McpClientBuilder {
/// builder.with_call_layer(mcp_connect::client::circuit_breaker(BreakerConfig::default()))
/// # }
/// ```
pub fn circuit_breaker(config: BreakerConfig) -> CircuitBreakerLayer<ClientError, LivenessProbe> {
    CircuitBreakerLayer::new(config).with_probe(LivenessProbe)
}
