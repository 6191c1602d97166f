//! The error object a server answers with. It keeps the server's message
//! and data for the application and never prints them.

use std::fmt;

use serde::Deserialize;
use serde_json::Value;

/// A JSON-RPC error object sent by the server.
///
/// Its `Debug` and `Display` show the code and HTTP status only: the message
/// and data are the server's words and may carry anything, so they are
/// reachable through [`message`](Self::message) and [`data`](Self::data) but
/// never printed by this crate.
#[derive(Clone, PartialEq, Deserialize)]
pub struct RpcError {
    code: i64,
    #[serde(default)]
    message: String,
    /// Boxed: an error stays small whatever `serde_json`'s features make
    /// a `Value` (with `preserve_order`, which an application's other
    /// dependencies may turn on, a `Value` is 72 bytes).
    #[serde(default)]
    data: Option<Box<Value>>,
    #[serde(skip)]
    http_status: Option<u16>,
    /// Whether the error object's `id` was `null` or missing.
    #[serde(skip)]
    pub(super) id_null: bool,
    /// Whether the request this error answered carried a session id.
    #[serde(skip)]
    carried_session: bool,
}

impl RpcError {
    /// A new error object (for servers and tests).
    pub fn new(code: i64, message: impl Into<String>, data: Option<Value>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: data.map(Box::new),
            http_status: None,
            id_null: false,
            carried_session: false,
        }
    }

    /// The error code.
    pub fn code(&self) -> i64 {
        self.code
    }

    /// The server's message. Never printed by this crate.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The server's `data`, if any. Never printed by this crate.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_deref()
    }

    /// The HTTP status of the response that carried this error, if any.
    pub fn http_status(&self) -> Option<u16> {
        self.http_status
    }

    /// Whether the error's `id` was `null` or missing: the server did not
    /// tie it to the request. A handler's error names its request's id; an error
    /// without one comes from before any handler (a parse error, or a
    /// transport that refused the request, as servers built on the
    /// TypeScript SDK v1 examples do for a session they do not know).
    pub fn id_is_null(&self) -> bool {
        self.id_null
    }

    /// Whether the HTTP request this error answered carried the session
    /// id (`false` when it came on no HTTP response).
    pub fn answered_session_request(&self) -> bool {
        self.carried_session
    }

    pub(crate) fn with_http_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
        self
    }

    /// Records that the HTTP request this error answered carried the
    /// session id.
    pub(crate) fn with_session_request(mut self, carried: bool) -> Self {
        self.carried_session = carried;
        self
    }
}

impl fmt::Debug for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcError")
            .field("code", &self.code)
            .field("http_status", &self.http_status)
            .field("id_null", &self.id_null)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "JSON-RPC error {} ({}",
            self.code,
            crate::protocol::codes::category(self.code)
        )?;
        if let Some(status) = self.http_status {
            write!(f, ", HTTP {status}")?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for RpcError {}
