//! One server's call policies as a value: what the command's flags and a
//! config entry's `policies` block say, built once and put on a client's
//! call path in one fixed order
//! ([`McpClientBuilder::with_policies`](super::McpClientBuilder::with_policies)).
//! An application that wants another order, or other layers, calls
//! [`McpClientBuilder::with_call_layer`](super::McpClientBuilder::with_call_layer)
//! itself.

use std::time::Duration;

use mcp_connect_layers::policy::{BreakerConfig, BulkheadLayer, RateLimitRetryLayer};

use super::service::{pending, PendingLayer};
use super::{circuit_breaker, idle_timeout, HedgeLayer, McpClient, ReplicaConfig, ReplicasLayer};
use crate::ConnectRequest;

/// The call policies of one server (each off unless set).
///
/// Applied outermost first: the bulkhead (it bounds everything under it,
/// retries too), the breaker, hedging, the rate-limit retry, the idle
/// timeout, the replicas.
///
/// ```
/// use std::time::Duration;
/// use mcp_connect::client::CallPolicies;
///
/// let policies = CallPolicies::new()
///     .with_max_in_flight(4)
///     .with_breaker()
///     .with_idle_timeout(Duration::from_secs(30), Duration::from_secs(300));
/// assert!(!policies.is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CallPolicies {
    max_in_flight: Option<usize>,
    breaker: bool,
    retry_rate_limited: bool,
    idle_timeout: Option<(Duration, Duration)>,
    hedge_after: Option<Duration>,
    safe_tools: Vec<String>,
    replicas: Vec<ConnectRequest>,
}

/// Alike when every policy is, replicas compared by the server they reach
/// ([`Target::identity`](crate::request::Target::identity)).
impl PartialEq for CallPolicies {
    fn eq(&self, other: &Self) -> bool {
        let reached = |policies: &Self| -> Vec<String> {
            (policies.replicas.iter())
                .map(|replica| replica.target().identity())
                .collect()
        };
        self.max_in_flight == other.max_in_flight
            && self.breaker == other.breaker
            && self.retry_rate_limited == other.retry_rate_limited
            && self.idle_timeout == other.idle_timeout
            && self.hedge_after == other.hedge_after
            && self.safe_tools == other.safe_tools
            && reached(self) == reached(other)
    }
}

impl CallPolicies {
    /// No policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` calls in flight to the server; up to `n` more wait (at
    /// most 5 s), the rest fail at once
    /// ([`BulkheadLayer`](mcp_connect_layers::policy::BulkheadLayer)).
    #[must_use]
    pub fn with_max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = Some(n.max(1));
        self
    }

    /// A circuit breaker with its defaults ([`circuit_breaker`]): never
    /// opened by tool errors.
    #[must_use]
    pub fn with_breaker(mut self) -> Self {
        self.breaker = true;
        self
    }

    /// A throttled call (429 `Retry-After`, JSON-RPC -32023
    /// `retryAfterMs`) is sent once more after the delay it states
    /// ([`RateLimitRetryLayer`](mcp_connect_layers::policy::RateLimitRetryLayer)).
    #[must_use]
    pub fn with_rate_limit_retry(mut self) -> Self {
        self.retry_rate_limited = true;
        self
    }

    /// A call may go `idle` without a word from the server (each progress
    /// notification restarts it), `cap` in all ([`idle_timeout`]).
    #[must_use]
    pub fn with_idle_timeout(mut self, idle: Duration, cap: Duration) -> Self {
        self.idle_timeout = Some((idle, cap));
        self
    }

    /// Idempotent reads, and `tools/call` of the `safe_tools` named, are
    /// sent a second time when the first has had no answer after `after`
    /// ([`HedgeLayer`]).
    #[must_use]
    pub fn with_hedge(
        mut self,
        after: Duration,
        safe_tools: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.hedge_after = Some(after);
        self.safe_tools = safe_tools.into_iter().map(Into::into).collect();
        self
    }

    /// Other endpoints of the same server, each made with
    /// [`ConnectRequest::for_replica`]: calls are balanced over them and the
    /// server's own ([`ReplicasLayer`], [`ReplicaConfig::default`]), each a
    /// lazy client of the same establishment stack.
    #[must_use]
    pub fn with_replicas(mut self, replicas: impl IntoIterator<Item = ConnectRequest>) -> Self {
        self.replicas = replicas.into_iter().collect();
        self
    }

    /// Whether no policy is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The layers of these policies, innermost first; `sibling` makes a
    /// replica's client.
    pub(super) fn layers(
        &self,
        sibling: impl Fn(&ConnectRequest) -> McpClient,
    ) -> Vec<PendingLayer> {
        let mut layers = Vec::new();
        if !self.replicas.is_empty() {
            let others: Vec<McpClient> = self.replicas.iter().map(sibling).collect();
            layers.push(pending(ReplicasLayer::new(
                others,
                ReplicaConfig::default(),
            )));
        }
        if let Some((idle, cap)) = self.idle_timeout {
            layers.push(pending(idle_timeout(idle, cap)));
        }
        if self.retry_rate_limited {
            layers.push(pending(RateLimitRetryLayer::new()));
        }
        if let Some(after) = self.hedge_after {
            let tools = self.safe_tools.iter().cloned();
            layers.push(pending(HedgeLayer::after(after).with_safe_tools(tools)));
        }
        if self.breaker {
            layers.push(pending(circuit_breaker(BreakerConfig::default())));
        }
        if let Some(n) = self.max_in_flight {
            layers.push(pending(BulkheadLayer::new(n)));
        }
        layers
    }
}
