//! What a request must be before its body is read: from an allowed host
//! and origin (DNS-rebinding protection), JSON in, JSON and SSE accepted
//! out, under a version this gateway speaks.

use http::{header, HeaderMap, StatusCode, Uri};
use mcp_connect::protocol::{codes, ProtocolVersion};

use crate::reply::RpcFailure;

/// Which `Host` names or `Origin`s the gateway answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Allowed {
    /// Loopback only: `localhost`, `127.0.0.1`, `::1` (any port). The
    /// default: a page in a browser cannot reach a gateway on loopback
    /// through a name of its own (DNS rebinding).
    Loopback,
    /// These host names (no port; compared without case), or for origins
    /// these whole origins (`https://app.example`).
    Only(Vec<String>),
    /// Anything: for a gateway behind a proxy that checks it.
    Any,
}

/// The well-known path of Protected Resource Metadata (RFC 9728).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// A request refused before anything is read: its status and error.
pub(crate) type Refusal = (StatusCode, RpcFailure);

const LOOPBACK: [&str; 4] = ["localhost", "127.0.0.1", "::1", "[::1]"];

/// The `Host` (or, over HTTP/2, the URI's authority) and the `Origin`,
/// each checked against what is allowed.
pub(crate) fn host_and_origin(
    headers: &HeaderMap,
    uri: &Uri,
    hosts: &Allowed,
    origins: &Allowed,
) -> Result<(), Refusal> {
    let forbidden = |what: &str| {
        let failure = RpcFailure::new(codes::INVALID_REQUEST, format!("{what} not allowed"));
        (StatusCode::FORBIDDEN, failure)
    };
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()));
    let host_allowed = match host {
        Some(host) => name_allowed(without_port(&host), hosts),
        None => matches!(hosts, Allowed::Any),
    };
    if !host_allowed {
        return Err(forbidden("host"));
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let allowed = match (origin.to_str().ok(), origins) {
        (_, Allowed::Any) => true,
        (Some(origin), Allowed::Only(list)) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
        (Some(origin), Allowed::Loopback) => origin
            .parse::<Uri>()
            .ok()
            .and_then(|uri| uri.host().map(|h| LOOPBACK.contains(&h)))
            .unwrap_or(false),
        (None, _) => false,
    };
    match allowed {
        true => Ok(()),
        false => Err(forbidden("origin")),
    }
}

fn name_allowed(name: &str, allowed: &Allowed) -> bool {
    match allowed {
        Allowed::Any => true,
        Allowed::Loopback => LOOPBACK.iter().any(|l| l.eq_ignore_ascii_case(name)),
        Allowed::Only(list) => list.iter().any(|l| l.eq_ignore_ascii_case(name)),
    }
}

/// `host:port` without its port (`[::1]:80` is `[::1]`).
fn without_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(colon) if !host[colon..].contains(']') && host.starts_with('[') => &host[..colon],
        Some(colon) if host.matches(':').count() == 1 => &host[..colon],
        _ => host,
    }
}

/// The bearer tokens requests must carry; `Debug` shows how many, never
/// one of them.
#[derive(Default)]
pub(crate) struct BearerTokens(pub(crate) Vec<Vec<u8>>);

impl std::fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BearerTokens({})", self.0.len())
    }
}

/// The request's `Authorization: Bearer` token, if any.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The request's `Authorization: Bearer` token, when the gateway has a
/// list: one of them (compared in constant time), or 401 with a
/// `WWW-Authenticate` challenge. The token goes no further: no member
/// ever sees it.
pub(crate) fn bearer(headers: &HeaderMap, tokens: &BearerTokens) -> Result<(), Refusal> {
    let tokens = &tokens.0;
    if tokens.is_empty() {
        return Ok(());
    }
    let presented = bearer_token(headers);
    let known = presented.is_some_and(|token| {
        // Every token compared, so the time says nothing of which matched.
        (tokens.iter()).fold(false, |found, t| found | same(t, token.as_bytes()))
    });
    match known {
        true => Ok(()),
        false => Err((
            StatusCode::UNAUTHORIZED,
            RpcFailure::new(codes::INVALID_REQUEST, "a valid bearer token is required"),
        )),
    }
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths
/// only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Whether `Accept` names `wanted` (or `*/*`).
pub(crate) fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().any(|value| {
        value.to_str().unwrap_or_default().split(',').any(|item| {
            let item = item.split(';').next().unwrap_or_default().trim();
            item.eq_ignore_ascii_case(wanted) || item == "*/*"
        })
    })
}

/// A POST's `Content-Type` (JSON) and `Accept` (JSON and SSE, which the
/// specification asks every client to accept).
pub(crate) fn post_headers(headers: &HeaderMap) -> Result<(), Refusal> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        let failure = RpcFailure::new(
            codes::INVALID_REQUEST,
            "Content-Type must be application/json",
        );
        return Err((StatusCode::UNSUPPORTED_MEDIA_TYPE, failure));
    }
    if !(accepts(headers, "application/json") && accepts(headers, "text/event-stream")) {
        let failure = RpcFailure::new(
            codes::INVALID_REQUEST,
            "Accept must name application/json and text/event-stream",
        );
        return Err((StatusCode::NOT_ACCEPTABLE, failure));
    }
    Ok(())
}

/// The `MCP-Protocol-Version` header, when there is one: a version this
/// gateway speaks, or 400.
pub(crate) fn version_header(headers: &HeaderMap) -> Result<Option<ProtocolVersion>, Refusal> {
    let Some(value) = headers.get("mcp-protocol-version") else {
        return Ok(None);
    };
    let version = value.to_str().ok().map(ProtocolVersion::new);
    match version {
        Some(version) if version.is_supported() => Ok(Some(version)),
        _ => {
            let supported: Vec<&str> = ProtocolVersion::SUPPORTED
                .iter()
                .map(|v| v.as_str())
                .collect();
            let failure = RpcFailure::new(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(serde_json::json!({ "supported": supported }));
            Err((StatusCode::BAD_REQUEST, failure))
        }
    }
}

/// The session named by `Mcp-Session-Id`, if any.
pub(crate) fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get("mcp-session-id").and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn only_loopback_hosts_and_origins_by_default() {
        let uri: Uri = "/mcp".parse().unwrap();
        let check = |pairs: &[(&'static str, &str)]| {
            host_and_origin(
                &headers(pairs),
                &uri,
                &Allowed::Loopback,
                &Allowed::Loopback,
            )
            .map_err(|(status, _)| status)
        };
        assert!(check(&[("host", "127.0.0.1:8080")]).is_ok());
        assert!(check(&[("host", "localhost")]).is_ok());
        assert!(check(&[("host", "[::1]:3000")]).is_ok());
        assert!(check(&[("host", "localhost:1"), ("origin", "http://localhost:5173")]).is_ok());
        assert_eq!(
            check(&[("host", "evil.example")]),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            check(&[("host", "evil.example:80")]),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            check(&[("host", "127.0.0.1:80"), ("origin", "https://evil.example")]),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(check(&[]), Err(StatusCode::FORBIDDEN));
    }

    #[test]
    fn a_bearer_list_admits_its_tokens_only() {
        let tokens = BearerTokens(vec![b"first-token".to_vec(), b"second".to_vec()]);
        let check = |value: &str| {
            bearer(&headers(&[("authorization", value)]), &tokens).map_err(|(s, _)| s)
        };
        assert!(check("Bearer first-token").is_ok());
        assert!(check("bearer second").is_ok());
        assert_eq!(check("Bearer first"), Err(StatusCode::UNAUTHORIZED));
        assert_eq!(check("Basic second"), Err(StatusCode::UNAUTHORIZED));
        assert_eq!(
            bearer(&HeaderMap::new(), &tokens).map_err(|(s, _)| s),
            Err(StatusCode::UNAUTHORIZED)
        );
        assert!(bearer(&HeaderMap::new(), &BearerTokens::default()).is_ok());
        assert_eq!(format!("{tokens:?}"), "BearerTokens(2)");
    }

    #[test]
    fn json_in_and_both_accepted_out() {
        let ok = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        assert!(post_headers(&headers(&ok)).is_ok());
        let any = [
            ("content-type", "application/json; charset=utf-8"),
            ("accept", "*/*"),
        ];
        assert!(post_headers(&headers(&any)).is_ok());
        let text = [("content-type", "text/plain"), ("accept", "*/*")];
        assert_eq!(
            post_headers(&headers(&text)).unwrap_err().0,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        let json_only = [
            ("content-type", "application/json"),
            ("accept", "application/json"),
        ];
        assert_eq!(
            post_headers(&headers(&json_only)).unwrap_err().0,
            StatusCode::NOT_ACCEPTABLE
        );
    }
}
