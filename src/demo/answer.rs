//! The demo server's answers: the HTTP exchange (sessions, the version
//! header, 404 for an unknown session) and each method's JSON-RPC reply,
//! in both eras.

use std::hash::BuildHasher;
use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as IncomingBody;
use serde_json::{json, Value};

use super::State;
use crate::protocol::{codes, meta_keys, RequestKind};

pub(super) type Reply = Response<Full<Bytes>>;

fn status(code: StatusCode) -> Reply {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}

fn json_reply(code: StatusCode, body: &Value) -> Reply {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn rpc_error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const MODERN: &str = "2026-07-28";

pub(super) async fn handle(state: &State, request: http::Request<IncomingBody>) -> Reply {
    state.requests.fetch_add(1, Ordering::Relaxed);
    state
        .header_names
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(request.headers().keys().cloned());
    if request.uri().path() != "/mcp" {
        return status(StatusCode::NOT_FOUND);
    }
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *request.method() {
        Method::GET => return status(StatusCode::METHOD_NOT_ALLOWED),
        Method::DELETE => {
            let removed = session
                .map(|id| {
                    state
                        .sessions
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&id)
                })
                .unwrap_or(false);
            return status(if removed {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            });
        }
        Method::POST => {}
        _ => return status(StatusCode::METHOD_NOT_ALLOWED),
    }
    let Ok(body) = request.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body.to_bytes()) else {
        return json_reply(
            StatusCode::BAD_REQUEST,
            &rpc_error(&Value::Null, codes::PARSE_ERROR, "Parse error", None),
        );
    };
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let id = message.get("id").cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let Some(id) = id else {
        // Notifications and responses.
        return status(StatusCode::ACCEPTED);
    };
    if RequestKind::of(method) == RequestKind::CallTool {
        state.tool_calls.fetch_add(1, Ordering::Relaxed);
    }
    let modern_version = params
        .get("_meta")
        .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION))
        .and_then(Value::as_str);
    if let Some(version) = modern_version {
        if version != MODERN {
            let data = json!({ "supported": [MODERN] });
            return json_reply(
                StatusCode::BAD_REQUEST,
                &rpc_error(
                    &id,
                    codes::UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                    Some(data),
                ),
            );
        }
        return json_reply(StatusCode::OK, &modern(&id, method, &params));
    }
    if RequestKind::of(method) == RequestKind::Initialize {
        return initialize(state, &id, &params);
    }
    match session {
        None => json_reply(
            StatusCode::BAD_REQUEST,
            &rpc_error(&id, codes::INVALID_REQUEST, "Missing session id", None),
        ),
        Some(session)
            if !state
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&session) =>
        {
            json_reply(
                StatusCode::NOT_FOUND,
                &rpc_error(&id, codes::INVALID_REQUEST, "Session not found", None),
            )
        }
        Some(_) => json_reply(StatusCode::OK, &common(&id, method, &params)),
    }
}

fn server_info() -> Value {
    json!({ "name": "mcp-connect-demo", "version": env!("CARGO_PKG_VERSION") })
}

fn capabilities() -> Value {
    json!({ "tools": { "listChanged": false } })
}

fn modern(id: &Value, method: &str, params: &Value) -> Value {
    if RequestKind::of(method) == RequestKind::Discover {
        let mut meta = serde_json::Map::new();
        meta.insert(meta_keys::SERVER_INFO.into(), server_info());
        return rpc_result(
            id,
            json!({
                "supportedVersions": [MODERN],
                "capabilities": capabilities(),
                "instructions": "A demo server with two tools: add and echo.",
                "resultType": "complete",
                "_meta": meta,
            }),
        );
    }
    common(id, method, params)
}

fn initialize(state: &State, id: &Value, params: &Value) -> Reply {
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = if LEGACY.contains(&requested) {
        requested
    } else {
        LEGACY[LEGACY.len() - 1]
    };
    let n = state.sessions_created.fetch_add(1, Ordering::Relaxed);
    let session = format!(
        "{:016x}{:016x}",
        state.seed.hash_one(n),
        state.seed.hash_one(!n)
    );
    state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(session.clone());
    let body = rpc_result(
        id,
        json!({
            "protocolVersion": version,
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "instructions": "A demo server with two tools: add and echo.",
        }),
    );
    let mut reply = json_reply(StatusCode::OK, &body);
    reply.headers_mut().insert(
        "mcp-session-id",
        http::HeaderValue::from_str(&session).expect("hex is a valid header"),
    );
    reply
}

fn common(id: &Value, method: &str, params: &Value) -> Value {
    match RequestKind::of(method) {
        RequestKind::Ping => rpc_result(id, json!({})),
        RequestKind::ListTools => rpc_result(
            id,
            json!({ "tools": [
                {
                    "name": "add",
                    "description": "Adds two numbers.",
                    "inputSchema": {
                        "type": "object",
                        "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
                        "required": ["a", "b"]
                    }
                },
                {
                    "name": "echo",
                    "description": "Returns its message.",
                    "inputSchema": {
                        "type": "object",
                        "properties": { "message": { "type": "string" } },
                        "required": ["message"]
                    }
                }
            ]}),
        ),
        RequestKind::CallTool => call_tool(id, params),
        _ => rpc_error(id, codes::METHOD_NOT_FOUND, "Method not found", None),
    }
}

fn call_tool(id: &Value, params: &Value) -> Value {
    let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
    let text = match params.get("name").and_then(Value::as_str) {
        Some("add") => match (
            arguments.get("a").and_then(Value::as_f64),
            arguments.get("b").and_then(Value::as_f64),
        ) {
            (Some(a), Some(b)) => format_number(a + b),
            _ => return rpc_error(id, codes::INVALID_PARAMS, "add takes numbers a and b", None),
        },
        Some("echo") => match arguments.get("message").and_then(Value::as_str) {
            Some(message) => message.to_owned(),
            None => return rpc_error(id, codes::INVALID_PARAMS, "echo takes a message", None),
        },
        _ => return rpc_error(id, codes::INVALID_PARAMS, "Unknown tool", None),
    };
    rpc_result(
        id,
        json!({ "content": [{ "type": "text", "text": text }], "isError": false }),
    )
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}
