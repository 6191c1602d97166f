//! The MCP request headers of Streamable HTTP: names, and values built
//! without allocating for the common cases.
//!
//! `Mcp-Method` and `Mcp-Name` mirror the JSON-RPC method and its target
//! (tool, prompt or resource) so that gateways can route without reading the
//! body; a name that is not printable ASCII is sent base64-wrapped so its
//! exact bytes survive.

use std::borrow::Cow;

use http::header::{HeaderName, HeaderValue};

use crate::protocol::header_params::encode_value;
use crate::protocol::{EncodedRequest, Notification, ProtocolVersion, Request, RequestKind};

pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
pub(crate) const ACCEPT_BOTH: HeaderValue =
    HeaderValue::from_static("application/json, text/event-stream");
pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");
/// Error bodies are read only this far when looking for a JSON-RPC error.
/// What a POST's MCP headers say of the message it carries (2026-07-28
/// era): its method, the name it targets, and whether it may start a
/// session (only `initialize` does).
pub(crate) struct Rpc<'a> {
    pub(crate) method: Option<HeaderValue>,
    pub(crate) name: Option<&'a str>,
    pub(crate) starts_session: bool,
}

impl<'a> Rpc<'a> {
    /// A request's: `Mcp-Name` mirrors the tool of a `tools/call`, the
    /// prompt of a `prompts/get` and the URI of a `resources/read`.
    pub(crate) fn request(request: &'a Request) -> Self {
        let body = request.body();
        let name = match body.kind() {
            RequestKind::CallTool | RequestKind::GetPrompt | RequestKind::ReadResource => {
                body.target()
            }
            _ => None,
        };
        Rpc {
            method: method_header(body),
            name,
            starts_session: body.kind() == RequestKind::Initialize,
        }
    }

    /// `subscriptions/listen`'s: its method only.
    pub(crate) fn listen(request: &Request) -> Self {
        Rpc {
            method: method_header(request.body()),
            name: None,
            starts_session: false,
        }
    }

    /// A notification's: its method only.
    pub(crate) fn notification(notification: &Notification) -> Self {
        Rpc {
            method: HeaderValue::from_str(&notification.method).ok(),
            name: None,
            starts_session: false,
        }
    }
}

/// `value` as a header value, base64-wrapped unless it is plain printable
/// ASCII (see [`encode_value`]).
pub(crate) fn encode_header_value(value: &str) -> HeaderValue {
    match encode_value(value) {
        Cow::Borrowed(plain) => HeaderValue::from_str(plain),
        Cow::Owned(wrapped) => HeaderValue::try_from(wrapped),
    }
    .expect("printable ASCII is a valid header value")
}

/// The `Mcp-Param-*` headers of a request: names and values were checked
/// when the tool was listed and encoded as printable ASCII, so a pair that
/// still fails (never expected) is left out rather than sent malformed.
pub(crate) fn param_headers(
    pairs: &[(String, String)],
) -> impl Iterator<Item = (HeaderName, HeaderValue)> + '_ {
    pairs.iter().filter_map(|(name, value)| {
        Some((
            HeaderName::try_from(name.as_str()).ok()?,
            HeaderValue::from_str(value).ok()?,
        ))
    })
}

/// The `MCP-Protocol-Version` value: static for the versions this client
/// speaks (no allocation), parsed for any other.
pub(crate) fn version_header(version: &ProtocolVersion) -> Option<HeaderValue> {
    match ProtocolVersion::SUPPORTED
        .iter()
        .find(|known| *known == version)
        .and_then(ProtocolVersion::static_str)
    {
        Some(known) => Some(HeaderValue::from_static(known)),
        None => HeaderValue::from_str(version.as_str()).ok(),
    }
}

/// The `Mcp-Method` value: static for every method this crate has a kind
/// for (no allocation).
fn method_header(request: &EncodedRequest) -> Option<HeaderValue> {
    match request.kind().method() {
        Some(known) => Some(HeaderValue::from_static(known)),
        None => HeaderValue::from_str(request.method()).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_header_is_plain_or_base64() {
        assert_eq!(encode_header_value("add"), "add");
        assert_eq!(encode_header_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(encode_header_value(" x"), "=?base64?IHg=?=");
    }
}
