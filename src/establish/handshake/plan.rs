//! Both halves of the ladder's plan: where one attempt starts (from the
//! attempt's strategy, or from a cached verdict), and what the next attempt
//! does differently when the recovery layer asks for one.
//!
//! Across attempts: as configured; then `initialize` first on a fresh
//! transport; then, for an HTTP target in auto mode, legacy HTTP+SSE; then
//! as configured again. The version policy, target, limits, deadline and
//! cancellation are the same on every attempt.

use mcp_connect_layers::recovery::Stop;
use mcp_connect_layers::Reattempt;

use crate::era_cache::Verdict;
use crate::protocol::{DiscoverResult, Era, ProtocolVersion};
use crate::request::Target;
use crate::request::{ConnectRequest, Strategy, TransportMode};
use crate::response_cache::Context;
use crate::transport::TransportKind;

/// Where the ladder starts on one attempt.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// Probe first, at this version.
    pub(super) probe_at: Option<ProtocolVersion>,
    /// The legacy version to offer, when known in advance.
    pub(super) offer: Option<ProtocolVersion>,
    /// The transport to open first.
    pub(super) transport: TransportKind,
    /// A fresh `server/discover` result at `probe_at` that stands in for
    /// the probe.
    pub(super) remembered: Option<DiscoverResult>,
}

impl Plan {
    /// The plan of an attempt that knows nothing of the server yet.
    pub(super) fn full(request: &ConnectRequest) -> Plan {
        let versions = request.versions();
        let legacy_allowed = versions.newest(Era::Legacy).is_some();
        let transport = first_transport(request);
        let probe_at = match request.strategy() {
            Strategy::InitializeFirst if legacy_allowed => None,
            Strategy::Sse if legacy_allowed && transport == TransportKind::StreamableHttp => {
                return Plan {
                    probe_at: None,
                    offer: None,
                    transport: TransportKind::Sse,
                    remembered: None,
                }
            }
            // The 2024 transport has no modern era to probe for.
            _ if transport == TransportKind::Sse => None,
            _ => versions.newest(Era::Modern),
        };
        Plan {
            probe_at,
            offer: None,
            transport,
            remembered: None,
        }
    }

    /// The plan of an attempt that starts where the last connection to the
    /// server ended, or `None` when the verdict names a transport the
    /// target cannot have (a hand-edited cache file), which is then
    /// ignored.
    /// A remembered discover result stands in for the probe when it is
    /// fresh and belongs to `context`.
    pub(super) fn cached(
        verdict: Verdict,
        request: &ConnectRequest,
        context: &Context,
    ) -> Option<Plan> {
        let first = first_transport(request);
        let plan = match verdict {
            Verdict::Modern { version, discover } => Plan {
                remembered: discover.and_then(|discover| discover.usable(context)),
                probe_at: Some(version),
                offer: None,
                transport: first,
            },
            Verdict::Legacy { transport, version } => Plan {
                probe_at: None,
                offer: Some(version),
                transport,
                remembered: None,
            },
        };
        let fits = match plan.transport {
            TransportKind::Stdio => first == TransportKind::Stdio,
            TransportKind::StreamableHttp | TransportKind::Sse => first != TransportKind::Stdio,
            TransportKind::Memory => false,
        };
        fits.then_some(plan)
    }
}

/// The transport the request's mode and target open first.
fn first_transport(request: &ConnectRequest) -> TransportKind {
    match (request.target(), request.mode()) {
        (Target::Stdio(_), _) => TransportKind::Stdio,
        (Target::Http { .. }, TransportMode::Sse) => TransportKind::Sse,
        (Target::Http { .. }, _) => TransportKind::StreamableHttp,
    }
}

impl Reattempt for ConnectRequest {
    fn next_attempt(&self, attempt: u32) -> Result<Self, Stop> {
        let sse_permitted = matches!(self.target(), Target::Http { .. })
            && self.mode() == TransportMode::Auto
            && self.versions().newest(Era::Legacy).is_some();
        let strategy = match attempt {
            2 => Strategy::InitializeFirst,
            3 if sse_permitted => Strategy::Sse,
            _ => Strategy::AsConfigured,
        };
        Ok(self.for_attempt(attempt, strategy))
    }
}
