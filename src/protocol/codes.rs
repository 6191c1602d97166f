//! JSON-RPC and MCP error codes the client acts on.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Modern era: the HTTP routing headers do not match the request body.
pub const HEADER_MISMATCH: i64 = -32020;
/// Modern era: a required client capability or extension is missing.
pub const MISSING_REQUIRED_CAPABILITY: i64 = -32021;
/// Modern era: the requested protocol version is not supported; `data.supported`
/// lists the versions the server speaks.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The server is throttling this client (a draft SEP); `data.retryAfterMs`
/// says how long to wait, and is preferred to an HTTP `Retry-After`.
pub const RATE_LIMITED: i64 = -32023;
/// MCP: the resource does not exist.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// A short, fixed name for a code's category, safe to print (it never
/// contains anything the server said).
pub fn category(code: i64) -> &'static str {
    match code {
        PARSE_ERROR => "parse error",
        INVALID_REQUEST => "invalid request",
        METHOD_NOT_FOUND => "method not found",
        INVALID_PARAMS => "invalid params",
        INTERNAL_ERROR => "internal error",
        HEADER_MISMATCH => "header mismatch",
        MISSING_REQUIRED_CAPABILITY => "missing required capability",
        UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
        RESOURCE_NOT_FOUND => "resource not found",
        -32099..=-32000 => "server error",
        _ => "application error",
    }
}
