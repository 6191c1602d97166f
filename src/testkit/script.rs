//! What a scripted server sees and says: one recorded request, the answer
//! a test scripts for it, and the JSON-RPC replies that name its id.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method};
use serde_json::{json, Value};

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The HTTP method.
    pub method: Method,
    /// The path and query.
    pub path: String,
    /// The request headers.
    pub headers: HeaderMap,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as received.
    pub raw: Bytes,
    pub(super) seq: u64,
    pub(super) connection: u64,
}

impl Recorded {
    /// The JSON-RPC method, or `""` for bodiless requests and responses.
    pub fn rpc_method(&self) -> &str {
        self.body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The JSON-RPC id as sent (`Null` when absent).
    pub fn id(&self) -> Value {
        self.body.get("id").cloned().unwrap_or(Value::Null)
    }

    /// A form field of an `application/x-www-form-urlencoded` body, or a
    /// query parameter.
    pub fn field(&self, name: &str) -> Option<String> {
        let query = self
            .path
            .split_once('?')
            .map(|(_, q)| q)
            .unwrap_or_default();
        form_urlencoded::parse(&self.raw)
            .chain(form_urlencoded::parse(query.as_bytes()))
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }

    /// The path without its query.
    pub fn route(&self) -> &str {
        self.path
            .split_once('?')
            .map_or(&self.path, |(path, _)| path)
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// This request's number on the server, from 1.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The number of the connection it came on, from 1.
    pub fn connection(&self) -> u64 {
        self.connection
    }
}

/// How to answer one request.
#[derive(Debug)]
#[non_exhaustive]
pub enum Script {
    /// A JSON body with this status.
    Json(u16, Value),
    /// A JSON body with this status and extra headers.
    JsonWith(u16, Value, Vec<(&'static str, String)>),
    /// A JSON body with this status and extra headers given as bytes (for
    /// header values that are not text).
    JsonWithBytes(u16, Value, Vec<(&'static str, Vec<u8>)>),
    /// Any body with this status and content type.
    Raw(u16, &'static str, Bytes),
    /// A complete `text/event-stream` made of these raw chunks.
    Sse(Vec<String>),
    /// These SSE chunks, then the stream stays open and silent forever.
    SseThenStall(Vec<String>),
    /// SSE chunks, each sent after its delay; the stream then ends.
    SsePaced(Vec<(Duration, String)>),
    /// A status with no body.
    Status(u16),
    /// A status with no body and extra headers.
    StatusWith(u16, Vec<(&'static str, String)>),
    /// A 200 `application/json` body sent in these chunks (chunked encoding).
    Chunked(Vec<String>),
    /// Never answer (the headers never come).
    Stall,
    /// Close the connection before any header (FIN).
    CloseBeforeHeaders,
    /// Reset the connection before any header (RST).
    ResetBeforeHeaders,
    /// Send 200 headers with this content type and these bytes, then break
    /// the connection mid-body.
    BreakMidBody(&'static str, String),
    /// These SSE chunks, then (once they had time to arrive) the connection
    /// breaks.
    SseThenBreak(Vec<String>),
    /// This answer after a delay before the headers (a slow handler).
    Delayed(Duration, Box<Script>),
    /// A `text/event-stream` whose raw chunks the test sends, as it
    /// pleases, through the channel's sender; it ends when the sender is
    /// dropped.
    SseLive(tokio::sync::mpsc::UnboundedReceiver<String>),
}

/// A JSON-RPC result answering `request`.
pub fn result(request: &Recorded, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": request.id(), "result": result })
}

/// A JSON-RPC error answering `request`, with the message "scripted error".
pub fn error(request: &Recorded, code: i64, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": "scripted error" });
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({ "jsonrpc": "2.0", "id": request.id(), "error": error })
}
