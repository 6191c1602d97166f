//! The 2026-07-28 era: every request stands alone, and says its version,
//! its capabilities and what it is about twice: in its `_meta` and in its
//! HTTP headers. This module checks that, in the order the specification
//! gives the errors, and dresses a result the way the era wants it
//! (`resultType`, and the caching hints on what may be cached).
//!
//! - no `_meta`, or one without its version or the client's capabilities:
//!   400 with `-32602`;
//! - `MCP-Protocol-Version` not the `_meta`'s version, `Mcp-Method` not the
//!   method, `Mcp-Name` not the tool's or prompt's name or the resource's
//!   URI: 400 with `-32020` (header values compared after trimming the
//!   spaces HTTP allows around them, case-sensitively);
//! - a version this gateway does not speak: 400 with `-32022` and the
//!   versions it does;
//! - a method the era removed (`initialize`, `ping`, `logging/setLevel`,
//!   the resource subscriptions) or never had: 404 with `-32601`.

use http::{HeaderMap, StatusCode};
use mcp_connect::group::Catalogue;
use mcp_connect::protocol::header_params::HeaderParams;
use mcp_connect::protocol::{codes, meta_keys, ProtocolVersion, RequestKind};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::checks::Refusal;
use crate::reply::RpcFailure;

/// The versions a modern request may name: the one this gateway speaks.
pub(crate) fn supported() -> Value {
    json!([ProtocolVersion::LATEST_MODERN.as_str()])
}

/// Whether a request is the modern era's: its `_meta` names a version, or
/// its `MCP-Protocol-Version` header names one that is not a 2025 (or
/// older) version, which only a session's requests carry.
pub(crate) fn is_modern(params: Option<&Value>, header_version: Option<&str>) -> bool {
    let in_meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION))
        .is_some();
    let legacy_header = |v: &str| {
        let version = ProtocolVersion::new(v.trim());
        version.is_supported() && version != ProtocolVersion::LATEST_MODERN
    };
    in_meta || header_version.is_some_and(|v| !legacy_header(v))
}

fn refused(status: StatusCode, code: i64, message: &str) -> Refusal {
    (status, RpcFailure::new(code, message))
}

/// The header named, its value trimmed of the spaces around it.
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// Checks a modern request's `_meta` and headers (see the module's docs).
pub(crate) fn check(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
) -> Result<(), Refusal> {
    let invalid = |message| refused(StatusCode::BAD_REQUEST, codes::INVALID_PARAMS, message);
    let mismatch = || {
        refused(
            StatusCode::BAD_REQUEST,
            codes::HEADER_MISMATCH,
            "the Mcp-* headers must match the request",
        )
    };
    let Some(meta) = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
    else {
        return Err(invalid("_meta is required"));
    };
    let Some(version) = meta
        .get(meta_keys::PROTOCOL_VERSION)
        .and_then(Value::as_str)
    else {
        return Err(invalid("_meta must name the protocol version"));
    };
    if header(headers, "mcp-protocol-version") != Some(version) {
        return Err(mismatch());
    }
    if ProtocolVersion::new(version) != ProtocolVersion::LATEST_MODERN {
        let failure = RpcFailure::new(
            codes::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({ "supported": supported(), "requested": version }));
        return Err((StatusCode::BAD_REQUEST, failure));
    }
    if !meta
        .get(meta_keys::CLIENT_CAPABILITIES)
        .is_some_and(Value::is_object)
    {
        return Err(invalid("_meta must carry the client's capabilities"));
    }
    if header(headers, "mcp-method") != Some(method) {
        return Err(mismatch());
    }
    let named = match RequestKind::of(method) {
        RequestKind::CallTool | RequestKind::GetPrompt => Some("name"),
        RequestKind::ReadResource => Some("uri"),
        _ => None,
    };
    if let Some(field) = named {
        let value = params.and_then(|p| p.get(field)).and_then(Value::as_str);
        if value.is_some() && header(headers, "mcp-name") != value {
            return Err(mismatch());
        }
    }
    Ok(())
}

/// A `tools/call`'s `Mcp-Param-*` headers against its arguments, for a
/// tool whose schema mirrors arguments into headers (SEP-2243): a header
/// that disagrees with the body, is left out or does not decode is 400
/// with `-32020`, before the member sees the call.
pub(crate) fn check_params(
    headers: &HeaderMap,
    params: Option<&Value>,
    catalogue: &Catalogue,
) -> Result<(), Refusal> {
    let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
    let Some(tool) = name.and_then(|name| catalogue.tool(name)) else {
        return Ok(());
    };
    let Ok(Some(mirrored)) = HeaderParams::from_input_schema(&tool.item.input_schema) else {
        return Ok(());
    };
    let empty = json!({});
    let arguments = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
    if mirrored.agree(arguments, |name| header(headers, name)) {
        Ok(())
    } else {
        Err(refused(
            StatusCode::BAD_REQUEST,
            codes::HEADER_MISMATCH,
            "the Mcp-Param headers must match the arguments",
        ))
    }
}

/// Whether the era has this method: the ones it removed and the unknown
/// ones are 404 with `-32601`.
pub(crate) fn has_method(kind: RequestKind) -> bool {
    !matches!(
        kind,
        RequestKind::Initialize
            | RequestKind::Ping
            | RequestKind::SetLoggingLevel
            | RequestKind::Subscribe
            | RequestKind::Unsubscribe
            | RequestKind::Other
    )
}

/// How long, and for whom, a listing may be cached.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CacheHints {
    /// `ttlMs`.
    pub(crate) ttl_ms: u64,
    /// `cacheScope` is `private` (the answer may differ between principals).
    pub(crate) private: bool,
}

/// A result dressed for the era: `resultType` when the member left it out
/// (a 2025 member's answer), and on what may be cached (`kind`), the
/// caching hints when it has none. A result that is not a JSON object is
/// left as it is.
pub(crate) fn dressed(
    result: Box<RawValue>,
    kind: RequestKind,
    hints: CacheHints,
) -> Box<RawValue> {
    let cacheable = matches!(
        kind,
        RequestKind::ListTools
            | RequestKind::ListPrompts
            | RequestKind::ListResources
            | RequestKind::ListResourceTemplates
            | RequestKind::ReadResource
    );
    let Ok(mut fields) = serde_json::from_str::<Map<String, Value>>(result.get()) else {
        return result;
    };
    let mut changed = false;
    let mut add = |key: &str, value: Value| {
        if !fields.contains_key(key) {
            fields.insert(key.to_owned(), value);
            changed = true;
        }
    };
    add("resultType", json!("complete"));
    if cacheable {
        add("ttlMs", json!(hints.ttl_ms));
        let scope = if hints.private { "private" } else { "public" };
        add("cacheScope", json!(scope));
    }
    if !changed {
        return result;
    }
    serde_json::value::to_raw_value(&fields).unwrap_or(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_connect::protocol::methods::TOOLS_CALL as CALL;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn meta(version: &str) -> Value {
        json!({ "name": "echo", "_meta": {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
        }})
    }

    #[test]
    fn a_request_is_modern_by_its_meta_or_a_version_header_no_session_carries() {
        assert!(is_modern(Some(&meta("2026-07-28")), None));
        assert!(is_modern(Some(&json!({})), Some("2026-07-28")));
        assert!(is_modern(None, Some("2099-01-01")));
        assert!(!is_modern(Some(&json!({})), Some("2025-11-25")));
        assert!(!is_modern(None, None));
    }

    #[test]
    fn each_broken_rule_gets_its_own_code_in_the_specified_order() {
        // The method with the spaces HTTP allows around a value.
        let spaced = format!(" {CALL} ");
        let good = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", &spaced),
            ("mcp-name", "echo"),
        ]);
        assert!(check(&good, CALL, Some(&meta("2026-07-28"))).is_ok());
        let code = |h: &HeaderMap, p: Option<&Value>| check(h, CALL, p).unwrap_err().1.code;
        assert_eq!(code(&good, None), codes::INVALID_PARAMS);
        assert_eq!(
            code(&good, Some(&json!({"_meta": {}}))),
            codes::INVALID_PARAMS
        );
        let no_capabilities =
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        assert_eq!(code(&good, Some(&no_capabilities)), codes::INVALID_PARAMS);
        // The header and the body disagree: a mismatch, before the version.
        assert_eq!(
            code(&good, Some(&meta("2099-01-01"))),
            codes::HEADER_MISMATCH
        );
        let future = headers(&[("mcp-protocol-version", "2099-01-01"), ("mcp-method", CALL)]);
        assert_eq!(
            code(&future, Some(&meta("2099-01-01"))),
            codes::UNSUPPORTED_PROTOCOL_VERSION
        );
        let wrong_name = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", CALL),
            ("mcp-name", "other"),
        ]);
        assert_eq!(
            code(&wrong_name, Some(&meta("2026-07-28"))),
            codes::HEADER_MISMATCH
        );
        let no_name = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", CALL)]);
        assert_eq!(
            code(&no_name, Some(&meta("2026-07-28"))),
            codes::HEADER_MISMATCH
        );
        let upper = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "TOOLS/CALL"),
            ("mcp-name", "echo"),
        ]);
        assert_eq!(
            code(&upper, Some(&meta("2026-07-28"))),
            codes::HEADER_MISMATCH
        );
    }

    #[test]
    fn a_result_gets_what_the_era_asks_and_keeps_what_it_had() {
        let hints = CacheHints {
            ttl_ms: 5,
            private: true,
        };
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let listed = dressed(raw(r#"{"tools":[]}"#), RequestKind::ListTools, hints);
        let listed: Value = serde_json::from_str(listed.get()).unwrap();
        assert_eq!(listed["ttlMs"], 5);
        assert_eq!(listed["cacheScope"], "private");
        assert_eq!(listed["resultType"], "complete");
        let called = dressed(
            raw(r#"{"content":[],"resultType":"incomplete"}"#),
            RequestKind::CallTool,
            hints,
        );
        assert_eq!(called.get(), r#"{"content":[],"resultType":"incomplete"}"#);
    }
}
