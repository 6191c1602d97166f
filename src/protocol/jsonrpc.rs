//! JSON-RPC 2.0 envelopes.
//!
//! Outgoing messages are written straight from borrowed parts; incoming ones
//! are parsed once into [`Incoming`], keeping `result` as raw JSON so a typed
//! caller deserializes it exactly once.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

mod rpc_error;

use super::EncodedRequest;

pub use rpc_error::RpcError;

/// A JSON-RPC request id: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id (this client only sends these).
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// An outgoing request: an id and an [`EncodedRequest`], whose params
/// were written once.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Request {
    /// The id; responses are matched on it.
    pub id: RequestId,
    body: EncodedRequest,
    /// A `_meta` object already encoded (the modern era's envelope, the
    /// same on every request of a session; a progress token, a trace
    /// context), written into `params` as the bytes are made instead of
    /// being rebuilt as a `Value` each time.
    meta: Option<Arc<RawValue>>,
    /// `Mcp-Param-*` header names and encoded values for a `tools/call` on
    /// the modern era (see [`header_params`](super::header_params)); only
    /// Streamable HTTP sends them.
    pub(crate) param_headers: Vec<(String, String)>,
}

/// An outgoing notification (a request without an id).
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params object, if any.
    pub params: Option<Value>,
}

#[derive(Serialize)]
struct OutgoingEnvelope<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct ResponseEnvelope<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody<'a>>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: i64,
    message: &'a str,
}

impl Request {
    /// A request of `method` with `params`.
    pub fn new(id: RequestId, method: impl Into<Cow<'static, str>>, params: Option<Value>) -> Self {
        Request::encoded(id, EncodedRequest::raw(method, params.as_ref()))
    }

    /// A request whose params are already encoded.
    pub fn encoded(id: RequestId, body: EncodedRequest) -> Self {
        Request {
            id,
            body,
            meta: None,
            param_headers: Vec::new(),
        }
    }

    /// The method.
    pub fn method(&self) -> &str {
        self.body.method()
    }

    /// What is sent: the method, the params, what the request is.
    pub fn body(&self) -> &EncodedRequest {
        &self.body
    }

    pub(crate) fn body_mut(&mut self) -> &mut EncodedRequest {
        &mut self.body
    }

    /// This request with an encoded `_meta` written into its params (which
    /// must not hold a `_meta` of their own).
    pub(crate) fn with_meta(mut self, meta: Arc<RawValue>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// This request with `fields` added to its `_meta`, never over a key
    /// already there: joined to the encoded `_meta` when the request
    /// carries one (its keys are namespaced, so none collide; nothing is
    /// decoded), merged into the params' own `_meta` when they have one,
    /// encoded as the `_meta` otherwise.
    pub(crate) fn add_meta(&mut self, fields: Map<String, Value>) {
        if fields.is_empty() {
            return;
        }
        if let Some(envelope) = &self.meta {
            self.meta = Some(envelope_with(envelope, &fields));
        } else if self.body.has_own_meta() {
            let params = with_meta_entries(self.body.params_value(), |meta| {
                for (key, value) in fields {
                    meta.entry(key).or_insert(value);
                }
            });
            self.body.set_params(&params);
        } else {
            let encoded = serde_json::to_string(&fields).expect("JSON values serialize");
            self.meta = Some(Arc::from(
                RawValue::from_string(encoded).expect("a map is a JSON object"),
            ));
        }
    }

    /// The JSON bytes of this request, its params written as they were
    /// encoded and the `_meta` spliced in as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let params = self.body.params();
        let meta = self.meta.as_deref().map(RawValue::get);
        let size = 48
            + self.body.method().len()
            + params.map_or(0, str::len)
            + meta.map_or(0, |meta| meta.len() + 10);
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, &self.id).expect("an id serializes");
        out.extend_from_slice(br#","method":"#);
        serde_json::to_writer(&mut out, self.body.method()).expect("a string serializes");
        match (params, meta) {
            (None, None) => {}
            (Some(params), None) => {
                out.extend_from_slice(br#","params":"#);
                out.extend_from_slice(params.as_bytes());
            }
            (params, Some(meta)) => {
                out.extend_from_slice(br#","params":{"#);
                // The params' own entries, then `_meta`. Params that are
                // not an object cannot carry one; only `_meta` is sent.
                let inner = params
                    .map(str::trim)
                    .and_then(|params| params.strip_prefix('{')?.strip_suffix('}'))
                    .filter(|inner| !inner.trim().is_empty());
                if let Some(inner) = inner {
                    out.extend_from_slice(inner.as_bytes());
                    out.push(b',');
                }
                out.extend_from_slice(br#""_meta":"#);
                out.extend_from_slice(meta.as_bytes());
                out.push(b'}');
            }
        }
        out.push(b'}');
        out
    }
}

/// The encoded `_meta` envelope with `fields` added in front, without
/// decoding it.
fn envelope_with(envelope: &RawValue, fields: &Map<String, Value>) -> Arc<RawValue> {
    let added = serde_json::to_string(fields).expect("strings serialize");
    let envelope = envelope.get().trim();
    let json = match (added.strip_suffix('}'), envelope.strip_prefix('{')) {
        (Some(added), Some(rest)) if rest.trim_start() != "}" => format!("{added},{rest}"),
        _ => added,
    };
    Arc::from(RawValue::from_string(json).expect("two JSON objects joined are one"))
}

impl Notification {
    /// The JSON bytes of this notification.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&OutgoingEnvelope {
            jsonrpc: "2.0",
            id: None,
            method: &self.method,
            params: self.params.as_ref(),
        })
        .expect("a JSON value always serializes")
    }
}

/// The JSON bytes of a successful response to a server-initiated request.
pub(crate) fn result_bytes(id: &RequestId, result: &Value) -> Vec<u8> {
    serde_json::to_vec(&ResponseEnvelope {
        jsonrpc: "2.0",
        id,
        result: Some(result),
        error: None,
    })
    .expect("a JSON value always serializes")
}

/// The JSON bytes of an error response to a server-initiated request.
pub(crate) fn error_bytes(id: &RequestId, code: i64, message: &str) -> Vec<u8> {
    serde_json::to_vec(&ResponseEnvelope {
        jsonrpc: "2.0",
        id,
        result: None,
        error: Some(ErrorBody { code, message }),
    })
    .expect("a JSON value always serializes")
}

/// One message received from the server.
#[derive(Debug)]
pub enum Incoming {
    /// A successful response.
    Response {
        /// The id it answers.
        id: RequestId,
        /// The raw `result` JSON.
        result: Box<RawValue>,
    },
    /// An error response. `id` is `None` when the server could not tell which
    /// request it answers (`"id": null`, or no `id` member, which JSON-RPC
    /// does not allow but servers send).
    Error {
        /// The id it answers, if known.
        id: Option<RequestId>,
        /// The error.
        error: RpcError,
    },
    /// A request from the server.
    Request {
        /// Its id, to answer with.
        id: RequestId,
        /// The method.
        method: String,
        /// The params.
        params: Option<Value>,
    },
    /// A notification from the server.
    Notification {
        /// The method.
        method: String,
        /// The params.
        params: Option<Value>,
    },
}

/// Where JSON stopped parsing, without the text around it: serde_json's own
/// messages can quote the input, which is the server's payload, so only the
/// category and position are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("JSON {category} error at line {line}, column {column}")]
pub struct JsonError {
    category: &'static str,
    line: usize,
    column: usize,
}

impl From<serde_json::Error> for JsonError {
    fn from(error: serde_json::Error) -> Self {
        use serde_json::error::Category;
        JsonError {
            category: match error.classify() {
                Category::Io => "I/O",
                Category::Syntax => "syntax",
                Category::Data => "shape",
                Category::Eof => "end-of-input",
            },
            line: error.line(),
            column: error.column(),
        }
    }
}

/// Why bytes received from a server are not a JSON-RPC message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// Not JSON at all.
    #[error("not valid JSON")]
    Json(#[source] JsonError),
    /// JSON, but not a JSON-RPC 2.0 message.
    #[error("JSON but not a JSON-RPC 2.0 message")]
    NotJsonRpc,
}

#[derive(Deserialize)]
struct RawIncoming {
    #[serde(default)]
    jsonrpc: Option<IsVersion2>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Option<RequestId>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Whether a message's `jsonrpc` is `"2.0"`, read without keeping the
/// string (every message has one: no allocation for it).
struct IsVersion2(bool);

impl<'de> Deserialize<'de> for IsVersion2 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Check;
        impl serde::de::Visitor<'_> for Check {
            type Value = IsVersion2;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC version string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IsVersion2, E> {
                Ok(IsVersion2(v == "2.0"))
            }
        }
        d.deserialize_str(Check)
    }
}

/// Tells a present `null` (`Some(None)`) from an absent field (`None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<RequestId>>, D::Error> {
    Option::<RequestId>::deserialize(d).map(Some)
}

impl TryFrom<RawIncoming> for Incoming {
    type Error = MessageError;

    fn try_from(raw: RawIncoming) -> Result<Self, MessageError> {
        if !raw.jsonrpc.is_some_and(|version| version.0) {
            return Err(MessageError::NotJsonRpc);
        }
        match (raw.id, raw.method, raw.result, raw.error) {
            (Some(Some(id)), Some(method), None, None) => Ok(Incoming::Request {
                id,
                method,
                params: raw.params,
            }),
            (None, Some(method), None, None) => Ok(Incoming::Notification {
                method,
                params: raw.params,
            }),
            (Some(Some(id)), None, Some(result), None) => Ok(Incoming::Response { id, result }),
            (Some(id), None, None, Some(mut error)) => {
                error.id_null = id.is_none();
                Ok(Incoming::Error { id, error })
            }
            // JSON-RPC asks for `"id": null`; servers built on the
            // TypeScript SDK v1 examples leave the member out instead.
            (None, None, None, Some(mut error)) => {
                error.id_null = true;
                Ok(Incoming::Error { id: None, error })
            }
            _ => Err(MessageError::NotJsonRpc),
        }
    }
}

impl Incoming {
    /// Parses one message.
    pub fn parse(bytes: &[u8]) -> Result<Incoming, MessageError> {
        let raw: RawIncoming = serde_json::from_slice(bytes).map_err(|e| {
            if e.is_data() {
                MessageError::NotJsonRpc
            } else {
                MessageError::Json(e.into())
            }
        })?;
        raw.try_into()
    }

    /// Parses one message or a batch (a JSON array of messages).
    pub fn parse_many(bytes: &[u8]) -> Result<Vec<Incoming>, MessageError> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'[') {
            let raws: Vec<RawIncoming> =
                serde_json::from_slice(bytes).map_err(|e| match e.is_data() {
                    true => MessageError::NotJsonRpc,
                    false => MessageError::Json(e.into()),
                })?;
            raws.into_iter().map(Incoming::try_from).collect()
        } else {
            Incoming::parse(bytes).map(|m| vec![m])
        }
    }

    /// Parses a JSON-RPC error object out of a body that may or may not hold
    /// one (an HTTP error body of any content type). `None` when it does not.
    pub(crate) fn error_in(bytes: &[u8]) -> Option<RpcError> {
        match Incoming::parse_many(bytes).ok()?.into_iter().next()? {
            Incoming::Error { error, .. } => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod properties;

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
