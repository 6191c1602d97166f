//! The MCP messages used to establish and use a session.
//!
//! Only the fields this client reads are typed. Every result keeps the rest
//! of what the server sent in its `extra` map (fields a later revision adds,
//! vendor extensions), and the structs are `#[non_exhaustive]` so that typing
//! one more field later is not a breaking change.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ProtocolVersion;

/// The reserved `_meta` keys of the modern era.
pub mod meta_keys {
    /// The protocol version a modern request is made under.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's name and version, on every modern request.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The client's capabilities, on every modern request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The server's name and version, in a `DiscoverResult`'s `_meta`.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The id of the `subscriptions/listen` request a notification belongs
    /// to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The least severe log level a request wants to hear of while it runs
    /// (none without it).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
}

/// The client's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientInfo {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
}

impl ClientInfo {
    /// A name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ClientInfo {
            name: name.into(),
            version: version.into(),
        }
    }
}

impl Default for ClientInfo {
    fn default() -> Self {
        ClientInfo {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// The server's name and version, as it reported them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerInfo {
    /// Programmatic name.
    #[serde(default)]
    pub name: String,
    /// Version string.
    #[serde(default)]
    pub version: String,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `initialize` params (legacy era).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams<'a> {
    /// The version the client offers.
    pub protocol_version: &'a ProtocolVersion,
    /// The client's capabilities.
    pub capabilities: &'a Value,
    /// The client's name and version.
    pub client_info: &'a ClientInfo,
}

/// `initialize` result (legacy era).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: ProtocolVersion,
    /// The server's capabilities.
    #[serde(default)]
    pub capabilities: Value,
    /// The server's name and version.
    #[serde(default)]
    pub server_info: ServerInfo,
    /// Usage instructions for the model, if any.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `server/discover` result (modern era).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverResult {
    /// Every version the server speaks.
    pub supported_versions: Vec<ProtocolVersion>,
    /// The server's capabilities.
    #[serde(default)]
    pub capabilities: Value,
    /// Usage instructions for the model, if any.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Result metadata; the server's identity is under
    /// [`meta_keys::SERVER_INFO`].
    #[serde(default, rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    /// The server's identity from `_meta`, if present and well-formed.
    pub fn server_info(&self) -> Option<ServerInfo> {
        let raw = self.meta.as_ref()?.get(meta_keys::SERVER_INFO)?;
        ServerInfo::deserialize(raw).ok()
    }
}

/// The `data` of a `-32022` unsupported-version error.
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct UnsupportedVersionData {
    /// The versions the server speaks.
    pub supported: Vec<ProtocolVersion>,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tools/call` params.
#[derive(Debug, Clone, Serialize)]
pub struct CallToolParams<'a> {
    /// The tool name.
    pub name: &'a str,
    /// The arguments object.
    pub arguments: &'a Value,
}

/// `prompts/get` params.
#[derive(Debug, Clone, Serialize)]
pub struct GetPromptParams<'a> {
    /// The prompt name.
    pub name: &'a str,
    /// The arguments object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<&'a Value>,
}

/// `resources/read` params.
#[derive(Debug, Clone, Serialize)]
pub struct ReadResourceParams<'a> {
    /// The resource URI.
    pub uri: &'a str,
}

/// One tool from `tools/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// The tool name.
    pub name: String,
    /// A description for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The JSON Schema of its arguments, exactly as sent: never
    /// dereferenced, never rewritten.
    #[serde(default)]
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, when it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints (`readOnlyHint`, `destructiveHint`, ...), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Icons, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Metadata, as sent.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tools/list` result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// The cursor of the next page, if any.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// Tools the server listed but this client left out, because their
    /// `x-mcp-header` declarations are invalid (2026-07-28 era); they are
    /// never called.
    #[serde(skip)]
    pub excluded: Vec<crate::protocol::header_params::ExcludedTool>,
}

/// One prompt from `prompts/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The prompt name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments, as sent.
    #[serde(default)]
    pub arguments: Vec<Value>,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One resource from `resources/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One template from `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template (RFC 6570).
    pub uri_template: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Everything else the server sent, as it sent it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of a listing: its items and the cursor of the next page.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Page<T> {
    /// The items on this page.
    pub items: Vec<T>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

/// One content block of a tool result or prompt message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text(String),
    /// An image: base64 `data` and its MIME type.
    Image {
        /// Base64 data.
        data: String,
        /// The MIME type.
        mime_type: String,
    },
    /// Audio: base64 `data` and its MIME type.
    Audio {
        /// Base64 data.
        data: String,
        /// The MIME type.
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// Its name, when given.
        name: Option<String>,
    },
    /// An embedded resource (`{uri, text | blob, mimeType}`), as sent.
    Resource(Value),
    /// A block of a type this client does not know, as sent.
    Other(Value),
}

impl ContentBlock {
    /// Reads one block; a block that does not have its type's required
    /// fields is kept as [`ContentBlock::Other`].
    pub fn from_value(block: &Value) -> ContentBlock {
        let text = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_owned);
        let known = match block.get("type").and_then(Value::as_str) {
            Some("text") => text("text").map(ContentBlock::Text),
            Some("image") => text("data")
                .zip(text("mimeType"))
                .map(|(data, mime_type)| ContentBlock::Image { data, mime_type }),
            Some("audio") => text("data")
                .zip(text("mimeType"))
                .map(|(data, mime_type)| ContentBlock::Audio { data, mime_type }),
            Some("resource_link") => text("uri").map(|uri| ContentBlock::ResourceLink {
                uri,
                name: text("name"),
            }),
            Some("resource") => block.get("resource").cloned().map(ContentBlock::Resource),
            _ => None,
        };
        known.unwrap_or_else(|| ContentBlock::Other(block.clone()))
    }
}

/// `tools/call` result. Read by hand (call_result.rs), not derived: a
/// derived `flatten` buffers the whole result before reading it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallToolResult {
    /// Content blocks (text, images, resources) as the server sent them.
    pub content: Vec<Value>,
    /// Structured output, when the tool declares an output schema.
    pub structured_content: Option<Value>,
    /// Whether the tool reported a failure of its own.
    pub is_error: bool,
    /// Everything else the server sent, as it sent it.
    pub extra: Map<String, Value>,
}

mod call_result;

/// Why a tool result's structured content does not fit the tool's output
/// schema. Never shows the content or the validator's words (both may hold
/// the server's data): only how many places failed.
#[cfg(feature = "schema")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredContentError {
    /// The tool declares an output schema and the result has no
    /// `structuredContent`.
    #[error("the tool declares an output schema but the result has no structured content")]
    Missing,
    /// The output schema itself is not a valid JSON Schema (or needs a
    /// remote document, which is never fetched).
    #[error("the tool's output schema cannot be used")]
    InvalidSchema,
    /// The content does not validate.
    #[error("structured content does not match the output schema ({errors} errors)")]
    Mismatch {
        /// How many validation errors.
        errors: usize,
    },
}

impl CallToolResult {
    /// Checks `structuredContent` against `tool`'s output schema (nothing to
    /// check when it declares none). Only local `$ref`s resolve: a schema
    /// that points elsewhere is [`StructuredContentError::InvalidSchema`].
    #[cfg(feature = "schema")]
    pub fn check_structured(&self, tool: &Tool) -> Result<(), StructuredContentError> {
        let Some(schema) = &tool.output_schema else {
            return Ok(());
        };
        let Some(content) = &self.structured_content else {
            return Err(StructuredContentError::Missing);
        };
        let validator =
            jsonschema::validator_for(schema).map_err(|_| StructuredContentError::InvalidSchema)?;
        match validator.iter_errors(content).count() {
            0 => Ok(()),
            errors => Err(StructuredContentError::Mismatch { errors }),
        }
    }

    /// The content blocks, typed.
    pub fn blocks(&self) -> Vec<ContentBlock> {
        self.content.iter().map(ContentBlock::from_value).collect()
    }

    /// The `text` of every text content block, joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        texts.join("\n")
    }

    /// What to tell the model that called the tool: the text blocks, or
    /// the structured content as JSON when there is no text, with
    /// `Error: ` in front when the tool reported a failure.
    pub fn model_text(&self) -> String {
        let mut text = self.text();
        if text.is_empty() {
            if let Some(structured) = &self.structured_content {
                text = structured.to_string();
            }
        }
        if self.is_error {
            text.insert_str(0, "Error: ");
        }
        text
    }
}

#[cfg(test)]
mod tests;
