//! Where the ladder starts: from the request's strategy, or from a cached
//! verdict.

use crate::era_cache::{LegacyTransport, Verdict};
use crate::protocol::{Era, ProtocolVersion};
use crate::request::{ConnectRequest, Strategy, TransportMode};
use crate::target::Target;

/// Where the ladder starts.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// Probe first, at this version.
    pub(super) probe_at: Option<ProtocolVersion>,
    /// The legacy version to offer, when known in advance.
    pub(super) offer: Option<ProtocolVersion>,
    /// Go straight to legacy HTTP+SSE.
    pub(super) sse: bool,
}

impl Plan {
    pub(super) fn full(request: &ConnectRequest) -> Plan {
        let legacy_allowed = request.versions.newest(Era::Legacy).is_some();
        match request.strategy {
            Strategy::InitializeFirst if legacy_allowed => {
                return Plan {
                    probe_at: None,
                    offer: None,
                    sse: request.mode == TransportMode::Sse,
                }
            }
            Strategy::Sse if legacy_allowed && matches!(request.target, Target::Http { .. }) => {
                return Plan {
                    probe_at: None,
                    offer: None,
                    sse: true,
                }
            }
            _ => {}
        }
        let sse = request.mode == TransportMode::Sse;
        Plan {
            probe_at: if sse {
                None
            } else {
                request.versions.newest(Era::Modern)
            },
            offer: None,
            sse,
        }
    }

    pub(super) fn cached(verdict: Verdict) -> Plan {
        match verdict {
            Verdict::Modern { version } => Plan {
                probe_at: Some(version),
                offer: None,
                sse: false,
            },
            Verdict::Legacy { transport, version } => Plan {
                probe_at: None,
                offer: Some(version),
                sse: transport == LegacyTransport::Sse,
            },
        }
    }
}
