//! Classification policies: the conservative default and application vetoes.

use std::fmt;

use crate::decision::Decision;
use crate::{CancelSource, Child, Failure, FailureKind};

/// Decides one child failure.
pub trait ClassifyPolicy {
    /// The decision for one child.
    fn decide(&self, child: &Child<'_>) -> Decision;
}

/// The default: fresh attempts only where a new connection can plausibly
/// succeed where the old one failed.
///
/// It reads the failure's kind only; a protocol with rules of its own (a
/// status that is evidence of an older peer while establishing, say) wraps it
/// in a policy of its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct Conservative;

impl Conservative {
    /// The rule for one failure, as plain data.
    pub fn allows(failure: &Failure) -> bool {
        match failure.kind {
            FailureKind::Closed
            | FailureKind::Io
            | FailureKind::Connect
            | FailureKind::Unavailable
            | FailureKind::Outdated => true,
            FailureKind::Timeout => matches!(
                failure.cancel_source,
                Some(CancelSource::ProbeTimeout | CancelSource::HandshakeTimeout)
            ),
            FailureKind::Configuration
            | FailureKind::Dns
            | FailureKind::Tls
            | FailureKind::Cancelled
            | FailureKind::Auth
            | FailureKind::Throttled
            | FailureKind::HttpStatus
            | FailureKind::Rpc
            | FailureKind::Rejected
            | FailureKind::Version
            | FailureKind::Protocol
            | FailureKind::Proxy
            | FailureKind::Other => false,
        }
    }
}

impl ClassifyPolicy for Conservative {
    fn decide(&self, child: &Child<'_>) -> Decision {
        if Conservative::allows(&child.failure) {
            Decision::Eligible
        } else {
            Decision::Ineligible(child.failure)
        }
    }
}

/// A policy with an application veto on top.
#[derive(Clone)]
pub struct Vetoing<P, F> {
    base: P,
    veto: F,
}

impl<P, F> Vetoing<P, F> {
    pub(crate) fn new(base: P, veto: F) -> Self {
        Vetoing { base, veto }
    }
}

impl<P: fmt::Debug, F> fmt::Debug for Vetoing<P, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vetoing")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<P, F> ClassifyPolicy for Vetoing<P, F>
where
    P: ClassifyPolicy,
    F: Fn(&Child<'_>) -> bool,
{
    fn decide(&self, child: &Child<'_>) -> Decision {
        if (self.veto)(child) {
            return Decision::Vetoed(child.failure);
        }
        self.base.decide(child)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stage;

    fn f(stage: Stage, kind: FailureKind) -> Failure {
        Failure::new(stage, kind)
    }

    #[test]
    fn conservative_rules() {
        let yes = [
            f(Stage::HANDSHAKE, FailureKind::Closed),
            f(Stage::REQUEST, FailureKind::Io),
            f(Stage::CONNECT, FailureKind::Connect),
            f(Stage::HANDSHAKE, FailureKind::Timeout)
                .with_cancel_source(CancelSource::HandshakeTimeout),
            f(Stage::DISCOVER, FailureKind::Timeout).with_cancel_source(CancelSource::ProbeTimeout),
            f(Stage::REQUEST, FailureKind::Unavailable).with_http_status(503),
            f(Stage::HANDSHAKE, FailureKind::Outdated),
        ];
        for failure in yes {
            assert!(Conservative::allows(&failure), "{failure}");
        }
        let no = [
            f(Stage::REQUEST, FailureKind::Auth).with_http_status(401),
            f(Stage::REQUEST, FailureKind::Auth).with_http_status(403),
            f(Stage::REQUEST, FailureKind::Throttled).with_http_status(429),
            f(Stage::CONNECT, FailureKind::Dns),
            f(Stage::CONNECT, FailureKind::Tls),
            f(Stage::CONFIGURE, FailureKind::Configuration),
            f(Stage::REQUEST, FailureKind::Cancelled).with_cancel_source(CancelSource::Caller),
            f(Stage::REQUEST, FailureKind::Timeout).with_cancel_source(CancelSource::Deadline),
            f(Stage::REQUEST, FailureKind::Timeout).with_cancel_source(CancelSource::Interaction),
            f(Stage::HANDSHAKE, FailureKind::Rejected).with_jsonrpc_code(-32020),
            f(Stage::HANDSHAKE, FailureKind::Version),
            f(Stage::HANDSHAKE, FailureKind::HttpStatus).with_http_status(404),
            f(Stage::REQUEST, FailureKind::HttpStatus).with_http_status(500),
            f(Stage::HANDSHAKE, FailureKind::Rpc),
            f(Stage::REQUEST, FailureKind::Other),
            f(Stage::CONNECT, FailureKind::Proxy).with_http_status(407),
        ];
        for failure in no {
            assert!(!Conservative::allows(&failure), "{failure}");
        }
    }
}
