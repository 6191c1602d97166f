//! What an answer says about the server's era: pure functions over
//! outcomes, so every branch has a unit test.

use crate::establish::stage;
use mcp_connect_layers::{CancelSource, Failure, FailureKind};

use crate::error::{Error, ErrorKind, TransportError, VersionError};
use crate::protocol::{
    codes, is_era_refusal, DiscoverResult, Era, ProtocolVersion, UnsupportedVersionData,
};
use crate::request::VersionPolicy;
use crate::transport::{Reply, TransportKind};

/// How many `server/discover` requests one establishment sends at most.
pub(super) const MAX_PROBES: u32 = 2;

/// What a probe's outcome says about the server.
///
/// The modern verdict is large (with `serde_json`'s `preserve_order` a
/// `Value` is 72 bytes) and made once per establishment, then taken
/// apart: boxing it would cost an allocation for nothing.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum ProbeVerdict {
    /// Modern, at this version.
    Modern(ProtocolVersion, DiscoverResult),
    /// Modern, but probe again at this mutual version.
    RetryAt(ProtocolVersion),
    /// Legacy; offer this version if the server named one.
    Legacy(Option<ProtocolVersion>, Failure),
    /// Legacy, and the transport died on the probe: use a fresh one.
    LegacyOnFreshTransport(Failure),
}

/// Judges the outcome of one probe (pure: unit-tested branch by branch).
pub(crate) fn judge_probe(
    outcome: Result<Reply, Error>,
    probed: &ProtocolVersion,
    policy: &VersionPolicy,
    kind: TransportKind,
    timeout_is_legacy: bool,
) -> Result<ProbeVerdict, Error> {
    let evidence = |failure: Failure| failure.with_kind(FailureKind::Outdated);
    let rpc = match outcome {
        Ok(Ok(raw)) => {
            let Ok(result) = serde_json::from_str::<DiscoverResult>(raw.get()) else {
                return Ok(ProbeVerdict::Legacy(
                    None,
                    Failure::new(stage::PROBE, FailureKind::Outdated),
                ));
            };
            if result.supported_versions.contains(probed) {
                return Ok(ProbeVerdict::Modern(probed.clone(), result));
            }
            if let Some(version) = policy.best_of(Era::Modern, &result.supported_versions) {
                return Ok(ProbeVerdict::RetryAt(version));
            }
            let offer = policy.best_of(Era::Legacy, &result.supported_versions);
            return Ok(ProbeVerdict::Legacy(
                offer,
                Failure::new(stage::PROBE, FailureKind::Outdated),
            ));
        }
        Ok(Err(rpc)) => rpc,
        Err(error) => {
            let failure = error.failure();
            return match error.kind() {
                ErrorKind::Transport(TransportError::Status { status, .. })
                    if (400..500).contains(status) && !matches!(status, 401 | 403 | 429) =>
                {
                    Ok(ProbeVerdict::Legacy(None, evidence(failure)))
                }
                ErrorKind::Transport(
                    TransportError::Closed(_)
                    | TransportError::Interrupted(_)
                    | TransportError::Io(_),
                ) if kind == TransportKind::Stdio => {
                    Ok(ProbeVerdict::LegacyOnFreshTransport(evidence(failure)))
                }
                ErrorKind::Timeout(CancelSource::ProbeTimeout)
                    if kind == TransportKind::Stdio || timeout_is_legacy =>
                {
                    Ok(ProbeVerdict::Legacy(None, evidence(failure)))
                }
                _ => Err(error),
            };
        }
    };
    let as_error = |rpc| Error::new(stage::PROBE, ErrorKind::Rpc(rpc));
    if let Some(status) = rpc.http_status() {
        if matches!(status, 401 | 403 | 429) || status >= 500 {
            return Err(as_error(rpc));
        }
    }
    let failure = evidence(as_error(rpc.clone()).failure());
    match rpc.code() {
        codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let Some(data) = rpc
                .data()
                .and_then(|d| serde_json::from_value::<UnsupportedVersionData>(d.clone()).ok())
            else {
                return Ok(ProbeVerdict::Legacy(None, failure));
            };
            if let Some(version) = policy.best_of(Era::Modern, &data.supported) {
                Ok(ProbeVerdict::RetryAt(version))
            } else if let Some(version) = policy.best_of(Era::Legacy, &data.supported) {
                Ok(ProbeVerdict::Legacy(Some(version), failure))
            } else {
                Err(Error::new(
                    stage::PROBE,
                    ErrorKind::Version(VersionError::NoMutual),
                ))
            }
        }
        codes::HEADER_MISMATCH | codes::MISSING_REQUIRED_CAPABILITY => {
            Err(Error::new(stage::PROBE, ErrorKind::Rejected(rpc)))
        }
        _ => Ok(ProbeVerdict::Legacy(None, failure)),
    }
}

/// Whether a failed Streamable HTTP `initialize` allows the HTTP+SSE
/// fallback: 400, 404 or 405 without a modern JSON-RPC error body.
pub(super) fn sse_fallback_allowed(error: &Error) -> bool {
    let failure = error.failure();
    let modern_code = matches!(
        failure.jsonrpc_code,
        Some(
            codes::UNSUPPORTED_PROTOCOL_VERSION
                | codes::HEADER_MISMATCH
                | codes::MISSING_REQUIRED_CAPABILITY
        )
    );
    failure.stage == stage::INITIALIZE && is_era_refusal(failure.http_status) && !modern_code
}

/// A `-32022` answer to `initialize` naming a mutual modern version.
pub(super) fn modern_evidence(error: &Error, policy: &VersionPolicy) -> Option<ProtocolVersion> {
    let rpc = error.rpc_error()?;
    if rpc.code() != codes::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    let data: UnsupportedVersionData = serde_json::from_value(rpc.data()?.clone()).ok()?;
    policy.best_of(Era::Modern, &data.supported)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use serde_json::value::RawValue;

    use super::*;
    use crate::protocol::RpcError;

    const HTTP: TransportKind = TransportKind::StreamableHttp;
    const STDIO: TransportKind = TransportKind::Stdio;

    fn judge(outcome: Result<Reply, Error>, kind: TransportKind) -> Result<ProbeVerdict, Error> {
        let probed = ProtocolVersion::LATEST_MODERN;
        judge_probe(outcome, &probed, &VersionPolicy::Auto, kind, false)
    }

    fn result(value: serde_json::Value) -> Result<Reply, Error> {
        Ok(Ok(RawValue::from_string(value.to_string()).unwrap()))
    }

    fn rpc(
        code: i64,
        data: Option<serde_json::Value>,
        status: Option<u16>,
    ) -> Result<Reply, Error> {
        let error = RpcError::new(code, "words that are never read", data);
        Ok(Err(match status {
            Some(status) => error.with_http_status(status),
            None => error,
        }))
    }

    fn transport(error: TransportError) -> Result<Reply, Error> {
        Err(Error::transport(stage::PROBE, error))
    }

    fn status(status: u16) -> Result<Reply, Error> {
        transport(TransportError::Status {
            status,
            retry_after: None,
        })
    }

    #[test]
    fn a_discover_result_naming_the_probed_version_is_modern() {
        let verdict = judge(result(json!({ "supportedVersions": ["2026-07-28"] })), HTTP);
        assert!(
            matches!(verdict, Ok(ProbeVerdict::Modern(v, _)) if v == ProtocolVersion::LATEST_MODERN)
        );
    }

    #[test]
    fn a_result_without_the_probed_version_retries_or_goes_legacy() {
        let probed = ProtocolVersion::new("2099-01-01");
        let listed = result(json!({ "supportedVersions": ["2026-07-28"] }));
        let retry = judge_probe(listed, &probed, &VersionPolicy::Auto, HTTP, false);
        assert!(
            matches!(retry, Ok(ProbeVerdict::RetryAt(v)) if v == ProtocolVersion::LATEST_MODERN)
        );
        let legacy = judge(result(json!({ "supportedVersions": ["2025-06-18"] })), HTTP);
        assert!(matches!(
            legacy,
            Ok(ProbeVerdict::Legacy(Some(v), f)) if v == ProtocolVersion::V2025_06_18 && f.kind == FailureKind::Outdated
        ));
        let unparseable = judge(result(json!({ "tools": [] })), HTTP);
        assert!(matches!(unparseable, Ok(ProbeVerdict::Legacy(None, _))));
    }

    #[test]
    fn unsupported_version_names_a_mutual_version_or_none() {
        let data = |versions: &[&str]| Some(json!({ "supported": versions }));
        let retry_policy = VersionPolicy::Auto;
        let probed = ProtocolVersion::new("2099-01-01");
        let retry = judge_probe(
            rpc(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                data(&["2026-07-28"]),
                Some(400),
            ),
            &probed,
            &retry_policy,
            HTTP,
            false,
        );
        assert!(
            matches!(retry, Ok(ProbeVerdict::RetryAt(v)) if v == ProtocolVersion::LATEST_MODERN)
        );
        let legacy = judge(
            rpc(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                data(&["2025-11-25"]),
                None,
            ),
            HTTP,
        );
        assert!(
            matches!(legacy, Ok(ProbeVerdict::Legacy(Some(v), _)) if v == ProtocolVersion::V2025_11_25)
        );
        let none = judge(
            rpc(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                data(&["1999-01-01"]),
                None,
            ),
            HTTP,
        );
        assert!(matches!(
            none.unwrap_err().kind(),
            ErrorKind::Version(VersionError::NoMutual)
        ));
        let no_data = judge(rpc(codes::UNSUPPORTED_PROTOCOL_VERSION, None, None), HTTP);
        assert!(matches!(no_data, Ok(ProbeVerdict::Legacy(None, _))));
    }

    #[test]
    fn modern_rejections_are_fatal() {
        for code in [codes::HEADER_MISMATCH, codes::MISSING_REQUIRED_CAPABILITY] {
            let error = judge(rpc(code, None, Some(400)), HTTP).unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::Rejected(_)), "{code}");
        }
    }

    #[test]
    fn any_other_json_rpc_error_is_legacy_evidence_unless_its_status_says_otherwise() {
        for code in [-32601, -32600, -32602, -32000, 1] {
            let verdict = judge(rpc(code, None, Some(400)), HTTP);
            assert!(
                matches!(&verdict, Ok(ProbeVerdict::Legacy(None, f)) if f.kind == FailureKind::Outdated),
                "{code}: {verdict:?}"
            );
        }
        for status in [401, 403, 429, 500, 503] {
            assert!(
                judge(rpc(-32601, None, Some(status)), HTTP).is_err(),
                "{status}"
            );
        }
    }

    #[test]
    fn a_plain_4xx_is_legacy_evidence_but_auth_and_throttling_are_not() {
        for code in [400, 404, 405, 406, 415, 422] {
            assert!(
                matches!(judge(status(code), HTTP), Ok(ProbeVerdict::Legacy(None, _))),
                "{code}"
            );
        }
        for code in [401, 403, 429, 500, 502, 503] {
            assert!(judge(status(code), HTTP).is_err(), "{code}");
        }
    }

    #[test]
    fn a_stdio_server_dying_on_the_probe_asks_for_a_fresh_process() {
        let died = transport(TransportError::Closed(
            mcp_connect_layers::Closure::ProcessExit,
        ));
        assert!(matches!(
            judge(died, STDIO),
            Ok(ProbeVerdict::LegacyOnFreshTransport(_))
        ));
        let closed = transport(TransportError::Closed(mcp_connect_layers::Closure::Eof));
        assert!(
            judge(closed, HTTP).is_err(),
            "over HTTP a closed connection proves nothing"
        );
    }

    #[test]
    fn a_probe_timeout_is_legacy_only_where_configured() {
        let timeout = || {
            Err(Error::new(
                stage::PROBE,
                ErrorKind::Timeout(CancelSource::ProbeTimeout),
            ))
        };
        assert!(matches!(
            judge(timeout(), STDIO),
            Ok(ProbeVerdict::Legacy(None, _))
        ));
        assert!(judge(timeout(), HTTP).is_err());
        let probed = ProtocolVersion::LATEST_MODERN;
        let configured = judge_probe(timeout(), &probed, &VersionPolicy::Auto, HTTP, true);
        assert!(matches!(configured, Ok(ProbeVerdict::Legacy(None, _))));
        let deadline = Err(Error::new(
            stage::PROBE,
            ErrorKind::Timeout(CancelSource::Deadline),
        ));
        assert!(
            judge(deadline, STDIO).is_err(),
            "the overall deadline is never evidence"
        );
    }
}
