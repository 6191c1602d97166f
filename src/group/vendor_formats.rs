//! The catalogue as the two main model vendors take tools, and their tool
//! calls answered: the glue every agent wrote by hand.
//!
//! | | OpenAI (Chat Completions) | Anthropic (Messages) |
//! |---|---|---|
//! | a tool | `{"type": "function", "function": {"name", "description", "parameters"}}` | `{"name", "description", "input_schema"}` |
//! | a call | `{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}` | `{"type": "tool_use", "id", "name", "input"}` |
//! | its answer | `{"role": "tool", "tool_call_id", "content"}` | `{"type": "tool_result", "tool_use_id", "content", "is_error"}` |
//!
//! Names are the vendor names ([`Catalogue::vendor_tools`]): valid for
//! both, mapped back exactly. A schema is what both expect at the top: an
//! object schema with `properties` (a tool whose input schema is another
//! shape, or none, takes no arguments), without `$schema`. The answer is
//! the call's model text ([`CallToolResult::model_text`]): `Error: ` before
//! a tool error, a routing error or a failure, so the model reads every
//! outcome the same way; it holds the server's words, for the model only.

use serde_json::{json, Map, Value};

use super::{Catalogue, GroupError, ServerGroup};
use crate::protocol::{CallToolResult, Tool};

impl Catalogue {
    /// Every tool offered to a model, as OpenAI's Chat Completions API
    /// takes tools.
    pub fn openai_tools(&self) -> Vec<Value> {
        (self.vendor_tools())
            .map(|(name, tool)| {
                json!({ "type": "function", "function": {
                    "name": name, "description": description(&tool.item),
                    "parameters": object_schema(&tool.item) } })
            })
            .collect()
    }

    /// Every tool offered to a model, as Anthropic's Messages API takes
    /// tools.
    pub fn anthropic_tools(&self) -> Vec<Value> {
        (self.vendor_tools())
            .map(|(name, tool)| {
                json!({ "name": name, "description": description(&tool.item),
                        "input_schema": object_schema(&tool.item) })
            })
            .collect()
    }
}

impl super::ShownTools {
    /// The tools shown (the catalogue, or the meta-tools while discovery
    /// is on) as OpenAI's Chat Completions API takes tools, under their
    /// vendor names.
    pub fn openai_tools(&self) -> Vec<Value> {
        (self.vendor_shown().iter())
            .map(|(name, tool)| {
                json!({ "type": "function", "function": {
                    "name": name, "description": description(tool),
                    "parameters": object_schema(tool) } })
            })
            .collect()
    }

    /// The tools shown to a model as Anthropic's Messages API takes tools.
    pub fn anthropic_tools(&self) -> Vec<Value> {
        (self.vendor_shown().iter())
            .map(|(name, tool)| {
                json!({ "name": name, "description": description(tool),
                        "input_schema": object_schema(tool) })
            })
            .collect()
    }

    /// The shown tools under their vendor names.
    fn vendor_shown(&self) -> Vec<(String, std::sync::Arc<Tool>)> {
        let catalogue = self.catalogue();
        let vendor: std::collections::HashMap<&str, std::borrow::Cow<'_, str>> = (catalogue
            .vendor_tools())
        .map(|(vendor, tool)| (tool.name.as_str(), vendor))
        .collect();
        (self.tools().iter().cloned())
            .filter_map(|shown| {
                let name = match shown.server {
                    None => shown.name,
                    Some(_) => vendor.get(shown.name.as_str())?.to_string(),
                };
                Some((name, shown.tool))
            })
            .collect()
    }
}

impl ServerGroup {
    /// Answers one entry of an OpenAI assistant message's `tool_calls`
    /// with the `tool` message to send back: the call routed by its vendor
    /// name, its `arguments` (JSON text) parsed first.
    pub async fn answer_openai_tool_call(&self, call: &Value) -> Value {
        let id = call["id"].clone();
        let name = call["function"]["name"].as_str().unwrap_or_default();
        let arguments = match call["function"]["arguments"].as_str() {
            Some(text) if !text.trim().is_empty() => serde_json::from_str(text),
            _ => Ok(json!({})),
        };
        let content = match arguments {
            Ok(arguments) => outcome(self.call_vendor_tool(name, &arguments).await).0,
            Err(_) => "Error: the arguments are not JSON".to_owned(),
        };
        json!({ "role": "tool", "tool_call_id": id, "content": content })
    }

    /// Answers one `tool_use` block of an Anthropic assistant message with
    /// the `tool_result` block to send back.
    pub async fn answer_anthropic_tool_use(&self, block: &Value) -> Value {
        let id = block["id"].clone();
        let name = block["name"].as_str().unwrap_or_default();
        let input = match &block["input"] {
            Value::Null => json!({}),
            input => input.clone(),
        };
        let (content, is_error) = outcome(self.call_vendor_tool(name, &input).await);
        json!({ "type": "tool_result", "tool_use_id": id, "content": content,
                "is_error": is_error })
    }
}

/// What the model is told of a call, and whether it failed.
fn outcome(result: Result<CallToolResult, GroupError>) -> (String, bool) {
    match result {
        Ok(result) => (result.model_text(), result.is_error),
        Err(error) => (error.model_text(), true),
    }
}

fn description(tool: &Tool) -> String {
    (tool.description.clone())
        .or_else(|| tool.title.clone())
        .unwrap_or_default()
}

/// The tool's input schema as the vendors take it at the top: an object
/// schema with `properties`, without `$schema`.
fn object_schema(tool: &Tool) -> Value {
    let mut schema = match &tool.input_schema {
        Value::Object(schema) if schema.get("type").is_none_or(|t| t == "object") => schema.clone(),
        _ => Map::new(),
    };
    schema.remove("$schema");
    schema.insert("type".into(), "object".into());
    if !schema.get("properties").is_some_and(Value::is_object) {
        schema.insert("properties".into(), json!({}));
    }
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn schemas_are_object_schemas_with_properties() {
        let bare = tool(json!({ "name": "t", "inputSchema": { "type": "object" } }));
        assert_eq!(
            object_schema(&bare),
            json!({ "type": "object", "properties": {} })
        );
        let full = tool(json!({ "name": "t", "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": { "a": { "type": "number" } }, "required": ["a"] } }));
        assert_eq!(
            object_schema(&full),
            json!({ "type": "object", "properties": { "a": { "type": "number" } },
                    "required": ["a"] })
        );
        let odd = tool(json!({ "name": "t", "inputSchema": { "type": "array" } }));
        assert_eq!(
            object_schema(&odd),
            json!({ "type": "object", "properties": {} })
        );
    }
}
