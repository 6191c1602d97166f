//! What this client says about itself in every modern request's `_meta`
//! ([`ClientIdentity`]), and the two ways `_meta` is added to: entries
//! merged into params, and fields joined to the encoded envelope without
//! decoding it.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::protocol::{meta_keys, ClientInfo, ProtocolVersion};

/// What this client says about itself on every modern request.
#[derive(Debug, Clone)]
pub(crate) struct ClientIdentity {
    pub(crate) info: ClientInfo,
    pub(crate) capabilities: Value,
}

impl ClientIdentity {
    /// `params` with the modern `_meta` envelope merged in (for params that
    /// carry a `_meta` of their own).
    pub(crate) fn stamp(&self, version: &ProtocolVersion, params: Option<Value>) -> Value {
        with_meta_entries(params, |meta| {
            meta.insert(meta_keys::PROTOCOL_VERSION.into(), version.as_str().into());
            meta.insert(
                meta_keys::CLIENT_INFO.into(),
                serde_json::to_value(&self.info).expect("client info serializes"),
            );
            // A request that states its own capabilities (offering an
            // extension for this request only) keeps them.
            meta.entry(meta_keys::CLIENT_CAPABILITIES)
                .or_insert_with(|| self.capabilities.clone());
        })
    }

    /// The modern `_meta` envelope, encoded once: the same bytes go on every
    /// request of a session.
    pub(crate) fn encoded_meta(&self, version: &ProtocolVersion) -> Arc<RawValue> {
        #[derive(serde::Serialize)]
        struct Envelope<'a> {
            #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
            version: &'a str,
            #[serde(rename = "io.modelcontextprotocol/clientInfo")]
            info: &'a ClientInfo,
            #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
            capabilities: &'a Value,
        }
        let json = serde_json::to_string(&Envelope {
            version: version.as_str(),
            info: &self.info,
            capabilities: &self.capabilities,
        })
        .expect("the envelope serializes");
        Arc::from(RawValue::from_string(json).expect("serde_json wrote valid JSON"))
    }
}

/// The encoded `_meta` envelope with `fields` added in front (their keys
/// never collide with the envelope's namespaced ones), without decoding it.
#[cfg(feature = "otel")]
pub(crate) fn envelope_with(envelope: &RawValue, fields: &Map<String, Value>) -> Arc<RawValue> {
    let added = serde_json::to_string(fields).expect("strings serialize");
    let envelope = envelope.get().trim();
    let json = match (added.strip_suffix('}'), envelope.strip_prefix('{')) {
        (Some(added), Some(rest)) if rest.trim_start() != "}" => format!("{added},{rest}"),
        _ => added,
    };
    Arc::from(RawValue::from_string(json).expect("two JSON objects joined are one"))
}

/// `params` as an object (an empty one when absent or not an object) with
/// `add` applied to its `_meta` object (made when missing).
pub(crate) fn with_meta_entries(
    params: Option<Value>,
    add: impl FnOnce(&mut Map<String, Value>),
) -> Value {
    let mut params = match params {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        add(meta);
    }
    Value::Object(params)
}

#[cfg(all(test, feature = "otel"))]
mod envelope_tests {
    use super::*;

    #[test]
    fn trace_fields_join_the_encoded_envelope() {
        let envelope = RawValue::from_string(
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#.into(),
        )
        .unwrap();
        let mut fields = Map::new();
        fields.insert("traceparent".into(), "00-a-b-01".into());
        let joined: Value = serde_json::from_str(envelope_with(&envelope, &fields).get()).unwrap();
        assert_eq!(joined["traceparent"], "00-a-b-01");
        assert_eq!(
            joined["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let empty = RawValue::from_string("{}".into()).unwrap();
        let joined: Value = serde_json::from_str(envelope_with(&empty, &fields).get()).unwrap();
        assert_eq!(joined, serde_json::json!({ "traceparent": "00-a-b-01" }));
    }
}
