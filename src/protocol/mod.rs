//! The MCP wire vocabulary: JSON-RPC 2.0 envelopes, protocol versions, and the
//! messages needed to establish and use a session in either era.
//!
//! Parsing is lenient where real servers differ (extra fields, missing
//! optional ones) and strict where a mistake would change meaning (ids,
//! versions, error codes).

pub mod codes;
pub mod header_params;
mod incoming;
mod jsonrpc;
mod messages;
pub mod methods;
mod requests;
pub mod server_requests;
mod version;

pub use incoming::{NotificationKind, ServerRequestKind};
pub(crate) use jsonrpc::{error_bytes, result_bytes, with_meta_entries};
pub use jsonrpc::{Incoming, JsonError, MessageError, Notification, Request, RequestId, RpcError};
#[cfg(feature = "schema")]
pub use messages::StructuredContentError;
pub use messages::{
    meta_keys, CallToolParams, CallToolResult, ClientInfo, ContentBlock, DiscoverResult,
    GetPromptParams, InitializeParams, InitializeResult, ListToolsResult, Page, Prompt,
    ReadResourceParams, Resource, ResourceTemplate, ServerInfo, Tool, UnsupportedVersionData,
};
#[cfg(feature = "skills")]
pub(crate) use requests::listing;
pub use requests::{
    CallTool, Complete, EncodedRequest, GetPrompt, ListPrompts, ListResourceTemplates,
    ListResources, ListTools, McpRequest, Ping, RawRequest, ReadResource, RequestKind,
    SetLoggingLevel, Subscribe, Unsubscribe,
};
pub(crate) use version::is_era_refusal;
pub use version::{Era, ProtocolVersion};
