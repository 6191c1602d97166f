//! What this client says about itself in every modern request's `_meta`
//! ([`ClientIdentity`]), merged into params or encoded once per session.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::protocol::{meta_keys, with_meta_entries, ClientInfo, ProtocolVersion};

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
