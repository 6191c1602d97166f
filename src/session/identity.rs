//! What this client says about itself in every modern request's `_meta`
//! ([`ClientIdentity`]), merged into params or encoded once per session.

use std::sync::{Arc, OnceLock};

use serde_json::value::RawValue;
use serde_json::Value;

use crate::protocol::{meta_keys, with_meta_entries, ClientInfo, ProtocolVersion};

/// What this client says about itself on every modern request.
#[derive(Debug, Clone)]
pub(crate) struct ClientIdentity {
    info: ClientInfo,
    capabilities: Value,
    /// The envelope of [`encoded_meta`](Self::encoded_meta) for the first
    /// version asked: built once per client configuration, not per session.
    encoded: OnceLock<(ProtocolVersion, Arc<RawValue>)>,
}

impl ClientIdentity {
    pub(crate) fn new(info: ClientInfo, capabilities: Value) -> Self {
        ClientIdentity {
            info,
            capabilities,
            encoded: OnceLock::new(),
        }
    }

    pub(crate) fn info(&self) -> &ClientInfo {
        &self.info
    }

    pub(crate) fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// The capabilities with `extension` offered under `extensions`, for a
    /// request that offers it for itself alone (a task).
    pub(crate) fn capabilities_offering(&self, extension: &str) -> Value {
        let mut capabilities = match self.capabilities.clone() {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let extensions = capabilities
            .entry("extensions")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(extensions) = extensions {
            extensions.insert(extension.into(), Value::Object(serde_json::Map::new()));
        }
        Value::Object(capabilities)
    }

    /// Replaces the capabilities (and forgets the encoded envelope).
    pub(crate) fn set_capabilities(&mut self, capabilities: Value) {
        self.capabilities = capabilities;
        self.encoded = OnceLock::new();
    }

    /// Replaces the client info (and forgets the encoded envelope).
    pub(crate) fn set_info(&mut self, info: ClientInfo) {
        self.info = info;
        self.encoded = OnceLock::new();
    }

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
    /// request of every session made with this configuration.
    pub(crate) fn encoded_meta(&self, version: &ProtocolVersion) -> Arc<RawValue> {
        let (cached, envelope) = self
            .encoded
            .get_or_init(|| (version.clone(), self.encode_meta(version)));
        if cached == version {
            return Arc::clone(envelope);
        }
        self.encode_meta(version)
    }

    fn encode_meta(&self, version: &ProtocolVersion) -> Arc<RawValue> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_envelope_is_encoded_once_per_configuration_and_anew_after_a_change() {
        let mut identity = ClientIdentity::new(ClientInfo::default(), json!({}));
        let modern = ProtocolVersion::V2026_07_28;
        let first = identity.encoded_meta(&modern);
        assert!(Arc::ptr_eq(&first, &identity.encoded_meta(&modern)));
        let other = identity.encoded_meta(&ProtocolVersion::V2025_11_25);
        assert!(
            other.get().contains("2025-11-25"),
            "another version encodes anew"
        );
        identity.set_capabilities(json!({ "sampling": {} }));
        let changed = identity.encoded_meta(&modern);
        assert!(!Arc::ptr_eq(&first, &changed));
        assert!(changed.get().contains("sampling"), "{}", changed.get());
    }
}
