//! What a server asks of the client, typed: `sampling/createMessage`,
//! `elicitation/create` and `roots/list`, and their results.
//!
//! Each type names the fields the specification defines and keeps every
//! other field the server (or the application) sent in `extra`, so nothing
//! is lost on the way through: a field a later revision adds reaches the
//! handler, and a field the handler adds reaches the server. Content
//! blocks stay JSON (`serde_json::Value`) because sampling content grows
//! with every revision (text, image, audio, tool use and results);
//! [`SamplingMessage::text`] reads the common case.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `sampling/createMessage` params: the server asks the client's model for
/// a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageRequest {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the server wants back.
    pub max_tokens: u64,
    /// The system prompt the server suggests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The server's model preferences (hints, priorities), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<Value>,
    /// Which context to include (`none`, `thisServer`, `allServers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// The sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sequences that end the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Every other field, as sent (`metadata`, `tools`, `_meta`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// One content block or a list of them, as sent.
    pub content: Value,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SamplingMessage {
    /// The text of a text block (or of the first text block of a list).
    pub fn text(&self) -> Option<&str> {
        fn text_of(block: &Value) -> Option<&str> {
            if block.get("type")?.as_str()? != "text" {
                return None;
            }
            block.get("text")?.as_str()
        }
        match &self.content {
            Value::Array(blocks) => blocks.iter().find_map(text_of),
            block => text_of(block),
        }
    }
}

/// The client's answer to `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageResult {
    /// `assistant`, normally.
    pub role: String,
    /// The content block (or blocks).
    pub content: Value,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateMessageResult {
    /// An assistant text message from `model`.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        CreateMessageResult {
            role: "assistant".into(),
            content: serde_json::json!({ "type": "text", "text": text.into() }),
            model: model.into(),
            stop_reason: None,
            extra: Map::new(),
        }
    }

    /// Sets why generation stopped.
    #[must_use]
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }
}

/// `elicitation/create` params: the server asks the person for input, in a
/// form (`requested_schema`) or, in URL mode, by sending them to a page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequest {
    /// What to tell the person.
    pub message: String,
    /// `form` (the default when absent) or `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The form's JSON Schema (form mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// The page to send the person to (URL mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The elicitation's id (URL mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitRequest {
    /// Whether this is a URL-mode elicitation.
    pub fn is_url_mode(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }
}

/// What the person did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitAction {
    /// Accepted, with `content` (form mode).
    Accept,
    /// Declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The client's answer to `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitResult {
    /// What the person did.
    pub action: ElicitAction,
    /// The form's values, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitResult {
    /// Accepted with these values.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            extra: Map::new(),
        }
    }

    /// Declined.
    pub fn decline() -> Self {
        Self::without_content(ElicitAction::Decline)
    }

    /// Cancelled.
    pub fn cancel() -> Self {
        Self::without_content(ElicitAction::Cancel)
    }

    fn without_content(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            extra: Map::new(),
        }
    }
}

/// `roots/list` params: nothing but what the server adds (`_meta`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsRequest {
    /// Every field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The client's answer to `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsResult {
    /// The roots the client offers.
    pub roots: Vec<Root>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ListRootsResult {
    /// These roots.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult {
            roots,
            extra: Map::new(),
        }
    }
}

/// One root: a `file://` URI the server may work under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// The URI.
    pub uri: String,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Root {
    /// A root at `uri`, with an optional name.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Root {
            uri: uri.into(),
            name,
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_survive_the_round_trip() {
        let sent = json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" }, "x": 1 }],
            "maxTokens": 100,
            "tools": [{ "name": "t" }],
            "_meta": { "k": "v" }
        });
        let request: CreateMessageRequest = serde_json::from_value(sent.clone()).unwrap();
        assert_eq!(request.messages[0].text(), Some("hi"));
        assert_eq!(request.max_tokens, 100);
        assert!(request.extra.contains_key("tools"));
        assert_eq!(serde_json::to_value(&request).unwrap(), sent);

        let elicit: ElicitRequest = serde_json::from_value(json!({
            "mode": "url", "message": "go", "url": "https://x.example/", "elicitationId": "e1", "later": true
        }))
        .unwrap();
        assert!(elicit.is_url_mode());
        assert_eq!(elicit.extra.get("later"), Some(&json!(true)));

        let result = serde_json::to_value(ElicitResult::decline()).unwrap();
        assert_eq!(result, json!({ "action": "decline" }));
        let roots = ListRootsResult::new(vec![Root::new("file:///srv", Some("srv".into()))]);
        assert_eq!(
            serde_json::to_value(roots).unwrap(),
            json!({ "roots": [{ "uri": "file:///srv", "name": "srv" }] })
        );
    }
}
