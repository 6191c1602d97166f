//! Classification policies: the conservative default and application vetoes.

use std::fmt;

use crate::{CancelSource, Child, Failure, FailureKind, Stage};

/// Whether a failure allows a fresh attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A fresh attempt may follow.
    Eligible,
    /// The policy's rules refuse a fresh attempt because of this failure.
    Ineligible(Failure),
    /// The application vetoed a fresh attempt because of this failure.
    Vetoed(Failure),
}

/// Decides one child failure.
pub trait ClassifyPolicy {
    /// The decision for one child.
    fn decide(&self, child: &Child<'_>) -> Decision;
}

/// The default: fresh attempts only where a new transport can plausibly
/// succeed where the old one failed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Conservative;

impl Conservative {
    /// The rule for one failure, as plain data.
    pub fn allows(failure: &Failure) -> bool {
        let establishing = matches!(
            failure.stage,
            Stage::Connect
                | Stage::SseEndpoint
                | Stage::Probe
                | Stage::Initialize
                | Stage::Initialized
        );
        match failure.kind {
            FailureKind::Closed
            | FailureKind::Io
            | FailureKind::Connect
            | FailureKind::LegacyEra => true,
            FailureKind::Timeout => matches!(
                failure.cancel_source,
                Some(CancelSource::ProbeTimeout | CancelSource::HandshakeTimeout)
            ),
            // 400/404/405 while establishing are era signals; any other status is not.
            FailureKind::HttpStatus => {
                establishing && matches!(failure.http_status, Some(400 | 404 | 405))
            }
            FailureKind::Rpc => {
                establishing
                    && failure
                        .http_status
                        .is_none_or(|s| matches!(s, 200..=299 | 400 | 404 | 405))
            }
            FailureKind::Configuration
            | FailureKind::Dns
            | FailureKind::Tls
            | FailureKind::Cancelled
            | FailureKind::Auth
            | FailureKind::Throttled
            | FailureKind::Rejected
            | FailureKind::Version
            | FailureKind::Protocol
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

    fn f(stage: Stage, kind: FailureKind) -> Failure {
        Failure::new(stage, kind)
    }

    #[test]
    fn conservative_rules() {
        let yes = [
            f(Stage::Initialize, FailureKind::Closed),
            f(Stage::Probe, FailureKind::Io),
            f(Stage::Probe, FailureKind::Connect),
            f(Stage::Probe, FailureKind::Timeout).with_cancel_source(CancelSource::ProbeTimeout),
            f(Stage::Initialize, FailureKind::Timeout)
                .with_cancel_source(CancelSource::HandshakeTimeout),
            f(Stage::Initialize, FailureKind::HttpStatus).with_http_status(404),
            f(Stage::Initialize, FailureKind::Rpc).with_jsonrpc_code(-32600),
        ];
        for failure in yes {
            assert!(Conservative::allows(&failure), "{failure}");
        }
        let no = [
            f(Stage::Probe, FailureKind::Auth).with_http_status(401),
            f(Stage::Probe, FailureKind::Auth).with_http_status(403),
            f(Stage::Probe, FailureKind::Throttled).with_http_status(429),
            f(Stage::Probe, FailureKind::Dns),
            f(Stage::Probe, FailureKind::Tls),
            f(Stage::Configure, FailureKind::Configuration),
            f(Stage::Probe, FailureKind::Cancelled).with_cancel_source(CancelSource::Caller),
            f(Stage::Probe, FailureKind::Timeout).with_cancel_source(CancelSource::Deadline),
            f(Stage::Probe, FailureKind::Rejected).with_jsonrpc_code(-32020),
            f(Stage::Initialize, FailureKind::Version),
            f(Stage::Initialize, FailureKind::HttpStatus).with_http_status(500),
            f(Stage::Initialize, FailureKind::Rpc).with_http_status(500),
            f(Stage::Request, FailureKind::Rpc),
            f(Stage::Probe, FailureKind::Other),
        ];
        for failure in no {
            assert!(!Conservative::allows(&failure), "{failure}");
        }
    }
}
