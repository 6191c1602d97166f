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
