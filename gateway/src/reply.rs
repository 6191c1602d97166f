//! What the gateway answers with: an HTTP status alone, a JSON-RPC message
//! as `application/json`, or a stream of them as `text/event-stream`.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use std::time::Duration;
use tokio::sync::mpsc;

use crate::body::ReplyBody;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// A response of the gateway.
pub(crate) type Reply = Response<ReplyBody>;

/// A JSON-RPC error the gateway answers with: its code, a message of the
/// gateway's own words (or a member's, forwarded), the data.
#[derive(Debug, Clone)]
pub(crate) struct RpcFailure {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcFailure {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcFailure {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// What a request is answered with: a result's JSON, or an error.
pub(crate) type Answer = Result<Box<RawValue>, RpcFailure>;

pub(crate) fn status(code: StatusCode) -> Reply {
    let mut response = Response::new(ReplyBody::whole(Bytes::new()));
    *response.status_mut() = code;
    response
}

fn json_body(code: StatusCode, body: String) -> Reply {
    let mut response = Response::new(ReplyBody::whole(Bytes::from(body)));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Any JSON document as the body.
#[cfg(feature = "oauth")]
pub(crate) fn json(code: StatusCode, document: &Value) -> Reply {
    json_body(code, document.to_string())
}

/// A stream of server-sent events, each what `events` receives.
pub(crate) fn events(events: mpsc::Receiver<Bytes>, keepalive: Duration) -> Reply {
    let mut response = Response::new(ReplyBody::events(events, keepalive));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A result's JSON-RPC message for request `id`, written once around the
/// member's own bytes.
pub(crate) fn result_message(id: &Value, result: &RawValue) -> String {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".into());
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#, result.get())
}

/// An error's JSON-RPC message for request `id` (`null` when unknown).
pub(crate) fn error_message(id: Option<&Value>, failure: &RpcFailure) -> String {
    let mut error = json!({ "code": failure.code, "message": failure.message });
    if let Some(data) = &failure.data {
        error["data"] = data.clone();
    }
    let id = id.cloned().unwrap_or(Value::Null);
    json!({ "jsonrpc": "2.0", "id": id, "error": error }).to_string()
}

/// A result for request `id`, its JSON written once around the member's
/// own bytes when it is forwarded.
pub(crate) fn result(id: &Value, result: &RawValue) -> Reply {
    json_body(StatusCode::OK, result_message(id, result))
}

/// An error for request `id` (`null` when it could not be read), with the
/// HTTP status it travels under.
pub(crate) fn error(code: StatusCode, id: Option<&Value>, failure: &RpcFailure) -> Reply {
    json_body(code, error_message(id, failure))
}

/// 404: the session named is not (or no longer) open.
pub(crate) fn session_not_found(id: Option<&Value>) -> Reply {
    let failure = RpcFailure::new(
        mcp_connect::protocol::codes::INVALID_REQUEST,
        "Session not found",
    );
    error(StatusCode::NOT_FOUND, id, &failure)
}
