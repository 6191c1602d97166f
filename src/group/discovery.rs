//! Progressive discovery: a model shown three tools instead of every tool
//! of every server. `search_tools` finds tools by what they do (names and
//! one-line summaries, [`ServerGroup::search_tools`]), `describe_tool`
//! gives one tool's whole definition, schema included, and `call_tool`
//! calls a tool by its catalogue name. Users of many servers report their
//! tool definitions shrinking from 55K tokens to 8K and from 135K to 3K
//! this way, for one extra turn per tool found.
//!
//! The group shows them ([`ServerGroup::shown_tools`]) when its
//! [`Discovery`] says so: by default when the catalogue's definitions are
//! estimated above 10,000 tokens ([`AUTO_TOKENS`]; 5.5 bytes of JSON to a
//! token, within 10% of OpenAI's o200k_base tokenizer on the bench's 169
//! real tool definitions, `bench -- discovery`). Tools
//! the application marks always loaded stay beside them. The three names
//! are the group's own while discovery is on: a server's tool of the same
//! name is reached through `call_tool` (its catalogue name is unchanged).
//! Whatever is shown, a call still goes through the catalogue: a tool a
//! filter left out is not found by any of the three.

use std::str::FromStr;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{Catalogue, GroupError, Named, ServerGroup};
use crate::protocol::{CallToolResult, Tool};

/// The meta-tool that searches the catalogue.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The meta-tool that gives one tool's whole definition.
pub const DESCRIBE_TOOL: &str = "describe_tool";
/// The meta-tool that calls a tool by its catalogue name.
pub const CALL_TOOL: &str = "call_tool";

/// The default threshold of [`Discovery::Auto`], in estimated tokens of
/// tool definitions: about 5% of a 200K-token context.
pub const AUTO_TOKENS: usize = 10_000;

/// How many tools `search_tools` returns unless asked for another number,
/// and the most it returns.
const DEFAULT_LIMIT: usize = 8;
const MAX_LIMIT: usize = 50;

/// When the group shows the meta-tools instead of its catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Discovery {
    /// When the catalogue's tool definitions are estimated above this
    /// many tokens ([`Catalogue::estimated_tokens`]).
    Auto {
        /// The threshold.
        tokens: usize,
    },
    /// Always.
    Always,
    /// Never: every tool is shown.
    Never,
}

impl Default for Discovery {
    fn default() -> Self {
        Discovery::Auto {
            tokens: AUTO_TOKENS,
        }
    }
}

/// A discovery mode that is not `auto`, `auto:TOKENS`, `always` or `never`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a discovery mode is auto, auto:TOKENS, always or never")]
#[non_exhaustive]
pub struct DiscoveryModeError;

impl FromStr for Discovery {
    type Err = DiscoveryModeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "always" => Ok(Discovery::Always),
            "never" => Ok(Discovery::Never),
            "auto" => Ok(Discovery::default()),
            _ => {
                let tokens = text.strip_prefix("auto:").ok_or(DiscoveryModeError)?;
                let tokens = tokens.parse().map_err(|_| DiscoveryModeError)?;
                Ok(Discovery::Auto { tokens })
            }
        }
    }
}

/// A tool as a model or a downstream client is shown it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ShownTool {
    /// The name it is called by.
    pub name: String,
    /// Its definition; its own `name` is the one its server gave it (a
    /// meta-tool's is `name`).
    pub tool: Arc<Tool>,
    /// The server that offers it; `None` for a meta-tool.
    pub server: Option<Arc<str>>,
}

/// What a call to a meta-tool comes to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum DiscoveryCall {
    /// Answered by the group (a search, a description, a call that named
    /// no tool).
    Answered(CallToolResult),
    /// `call_tool`: call the tool of this catalogue name with these
    /// arguments.
    Call {
        /// The catalogue name.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
}

impl Catalogue {
    /// The tokens its tool definitions take, estimated as their JSON
    /// length over 5.5 (see the module docs); computed once per snapshot.
    pub fn estimated_tokens(&self) -> usize {
        *self.tokens.get_or_init(|| {
            let bytes: usize = (self.tools().iter())
                .map(|tool| {
                    serde_json::to_vec(&*tool.item).map_or(0, |json| json.len())
                        + tool.name.len().saturating_sub(tool.item.name.len())
                })
                .sum();
            bytes * 2 / 11
        })
    }
}

/// What a model or a downstream client is shown now, from one catalogue
/// snapshot: the catalogue's tools, or, while discovery is on, the three
/// meta-tools and the tools marked always loaded
/// ([`ServerGroupBuilder::with_always_loaded`](super::ServerGroupBuilder::with_always_loaded)).
/// Calls made with what was shown are answered with [`call`](Self::call).
#[derive(Debug, Clone)]
pub struct ShownTools {
    group: ServerGroup,
    catalogue: Arc<Catalogue>,
    discovery: bool,
    tools: Vec<ShownTool>,
}

impl ServerGroup {
    /// What a model or a downstream client is shown now (see
    /// [`ShownTools`]).
    pub fn shown_tools(&self) -> ShownTools {
        let catalogue = self.catalogue();
        let discovery = self.discovery_active_in(&catalogue);
        let shown = |tool: &Named<Tool>| ShownTool {
            name: tool.name.clone(),
            tool: Arc::clone(&tool.item),
            server: Some(Arc::clone(&tool.server)),
        };
        let tools = if discovery {
            let mut tools = meta_tools();
            let pinned = (catalogue.tools().iter())
                .filter(|tool| !is_meta_tool(&tool.name))
                .filter(|tool| {
                    (self.shared.always_loaded.iter()).any(|glob| glob.matches(&tool.name))
                });
            tools.extend(pinned.map(shown));
            tools
        } else {
            catalogue.tools().iter().map(shown).collect()
        };
        ShownTools {
            group: self.clone(),
            catalogue,
            discovery,
            tools,
        }
    }

    /// Whether the meta-tools are shown with `catalogue`.
    pub(super) fn discovery_active_in(&self, catalogue: &Catalogue) -> bool {
        match self.shared.discovery {
            Discovery::Never => false,
            Discovery::Always => true,
            Discovery::Auto { tokens } => catalogue.estimated_tokens() > tokens,
        }
    }

    /// A call of `name` when it is a meta-tool the group answers (see
    /// [`ShownTools::call`]); `None` for any other call, which costs one
    /// name compare.
    pub(super) async fn call_meta_tool(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Option<Result<CallToolResult, GroupError>> {
        if !is_meta_tool(name) {
            return None;
        }
        match self.shown_tools().call(name, arguments)? {
            DiscoveryCall::Answered(result) => Some(Ok(result)),
            DiscoveryCall::Call { name, arguments } => {
                Some(self.call_tool(&name, &arguments).await)
            }
        }
    }
}

impl ShownTools {
    /// The tools, meta-tools first.
    pub fn tools(&self) -> &[ShownTool] {
        &self.tools
    }

    /// Whether the meta-tools are shown instead of the catalogue.
    pub fn is_discovery(&self) -> bool {
        self.discovery
    }

    /// The catalogue snapshot they were shown from.
    pub(super) fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// A call to `name` when it is one of the meta-tools the group answers
    /// (discovery on, or no tool of the catalogue has that name); `None`
    /// for any other call, which goes to the catalogue as it is.
    pub fn call(&self, name: &str, arguments: &Value) -> Option<DiscoveryCall> {
        if !is_meta_tool(name) || self.group.shared.discovery == Discovery::Never {
            return None;
        }
        let catalogue = &self.catalogue;
        if !self.discovery && catalogue.tool(name).is_some() {
            return None;
        }
        let text = |field: &str| arguments.get(field).and_then(Value::as_str);
        Some(match name {
            SEARCH_TOOLS => {
                let limit = (arguments.get("limit").and_then(Value::as_u64))
                    .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
                let query = text("query").unwrap_or_default();
                let hits = (self.group.shared.search).search(catalogue, query, limit);
                let tools: Vec<Value> = (hits.iter())
                    .map(|hit| {
                        json!({ "name": hit.tool.name, "server": &*hit.tool.server,
                                "summary": hit.summary() })
                    })
                    .collect();
                DiscoveryCall::Answered(structured(json!({ "tools": tools })))
            }
            DESCRIBE_TOOL => match catalogue.tool(text("name").unwrap_or_default()) {
                Some(tool) => {
                    let mut definition = serde_json::to_value(&*tool.item).unwrap_or_default();
                    definition["name"] = Value::String(tool.name.clone());
                    let described = json!({ "tool": definition, "server": &*tool.server });
                    DiscoveryCall::Answered(structured(described))
                }
                None => DiscoveryCall::Answered(failed(
                    "no tool has that name; search_tools finds tools",
                )),
            },
            _ => match text("name") {
                Some(name) => DiscoveryCall::Call {
                    name: name.to_owned(),
                    arguments: (arguments.get("arguments").cloned()).unwrap_or_else(|| json!({})),
                },
                None => DiscoveryCall::Answered(failed("call_tool needs the name of a tool")),
            },
        })
    }
}

/// Whether `name` is one of the three meta-tools' names.
pub fn is_meta_tool(name: &str) -> bool {
    matches!(name, SEARCH_TOOLS | DESCRIBE_TOOL | CALL_TOOL)
}

/// A result with `value` as structured content and as its text.
fn structured(value: Value) -> CallToolResult {
    CallToolResult {
        content: vec![json!({ "type": "text", "text": value.to_string() })],
        structured_content: Some(value),
        ..CallToolResult::default()
    }
}

fn failed(text: &str) -> CallToolResult {
    CallToolResult {
        content: vec![json!({ "type": "text", "text": text })],
        is_error: true,
        ..CallToolResult::default()
    }
}

/// The three meta-tools' definitions.
fn meta_tools() -> Vec<ShownTool> {
    let definitions = [
        json!({ "name": SEARCH_TOOLS, "title": "Search tools",
            "description": "Find the tools that can do a task: give a few words of what you want to do; get the best matching tools' names and one-line summaries. Then describe_tool gives a tool's parameters and call_tool calls it.",
            "inputSchema": { "type": "object", "properties": {
                "query": { "type": "string", "description": "What you want to do, in a few words" },
                "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": "How many tools to return (default 8)" } },
                "required": ["query"] },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": DESCRIBE_TOOL, "title": "Describe a tool",
            "description": "Get a tool's whole definition, its input schema included, by the name search_tools gave.",
            "inputSchema": { "type": "object", "properties": {
                "name": { "type": "string", "description": "The tool's name" } },
                "required": ["name"] },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": CALL_TOOL, "title": "Call a tool",
            "description": "Call a tool found with search_tools by its name, with arguments that follow its input schema (see describe_tool).",
            "inputSchema": { "type": "object", "properties": {
                "name": { "type": "string", "description": "The tool's name" },
                "arguments": { "type": "object", "description": "The tool's arguments" } },
                "required": ["name"] } }),
    ];
    (definitions.into_iter())
        .map(|definition| {
            let tool: Tool = serde_json::from_value(definition).expect("a meta-tool's definition");
            ShownTool {
                name: tool.name.clone(),
                tool: Arc::new(tool),
                server: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_from_text() {
        assert_eq!("never".parse(), Ok(Discovery::Never));
        assert_eq!("always".parse(), Ok(Discovery::Always));
        assert_eq!("auto".parse(), Ok(Discovery::default()));
        assert_eq!("auto:500".parse(), Ok(Discovery::Auto { tokens: 500 }));
        for bad in ["", "auto:", "auto:-1", "sometimes", "Always"] {
            assert_eq!(bad.parse::<Discovery>(), Err(DiscoveryModeError), "{bad:?}");
        }
    }

    #[test]
    fn meta_tools_have_names_every_vendor_takes() {
        let tools = meta_tools();
        assert_eq!(tools.len(), 3);
        for tool in tools {
            assert_eq!(super::super::vendor_name(&tool.name), tool.name);
            assert!(tool.tool.input_schema["properties"].is_object());
        }
    }
}
