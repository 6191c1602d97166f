//! Reading a `tools/call` result: every call pays for it.
//!
//! serde's derived `#[serde(flatten)]` (how every other result keeps its
//! unknown fields) first buffers the whole object, content blocks and
//! all, into an intermediate tree and then reads the struct out of that:
//! about twice the work. This reads the object once, the three typed
//! fields by name and the rest straight into `extra`.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::CallToolResult;

impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Fields)
    }
}

struct Fields;

impl<'de> Visitor<'de> for Fields {
    type Value = CallToolResult;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tools/call result object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallToolResult, A::Error> {
        let mut result = CallToolResult::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Content => result.content = map.next_value()?,
                Key::StructuredContent => result.structured_content = map.next_value()?,
                Key::IsError => result.is_error = map.next_value()?,
                Key::Other(name) => {
                    let value = map.next_value()?;
                    result.extra.insert(name, value);
                }
            }
        }
        Ok(result)
    }
}

/// A member's name: the typed ones recognised without copying them.
enum Key {
    Content,
    StructuredContent,
    IsError,
    Other(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Key, E> {
        Ok(match name {
            "content" => Key::Content,
            "structuredContent" => Key::StructuredContent,
            "isError" => Key::IsError,
            other => Key::Other(other.to_owned()),
        })
    }
}

impl serde::Serialize for CallToolResult {
    /// As the server sent it: `content`, `structuredContent` when there is
    /// one, `isError` when it is set, and every other field.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &self.content)?;
        if let Some(structured) = &self.structured_content {
            map.serialize_entry("structuredContent", structured)?;
        }
        if self.is_error {
            map.serialize_entry("isError", &true)?;
        }
        for (key, value) in &self.extra {
            if !matches!(key.as_str(), "content" | "structuredContent" | "isError") {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn typed_fields_are_read_and_everything_else_is_kept() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [{ "type": "text", "text": "3" }],
            "structuredContent": { "sum": 3 },
            "isError": true,
            "_meta": { "vendor": { "trace": "t" } },
            "later": [1, 2],
        }))
        .expect("a result");
        assert_eq!(result.content, vec![json!({ "type": "text", "text": "3" })]);
        assert_eq!(result.structured_content, Some(json!({ "sum": 3 })));
        assert!(result.is_error);
        assert_eq!(result.extra.len(), 2);
        assert_eq!(result.extra["_meta"], json!({ "vendor": { "trace": "t" } }));
        assert_eq!(result.extra["later"], json!([1, 2]));
    }

    #[test]
    fn absent_fields_take_their_defaults_and_wrong_types_are_errors() {
        let empty: CallToolResult = serde_json::from_str("{}").expect("an empty result");
        assert!(empty.content.is_empty() && empty.structured_content.is_none());
        assert!(!empty.is_error && empty.extra.is_empty());
        let null: CallToolResult =
            serde_json::from_str(r#"{"structuredContent":null}"#).expect("null is none");
        assert!(null.structured_content.is_none());
        for wrong in [
            r#"{"content":"text"}"#,
            r#"{"isError":"yes"}"#,
            r#"{"content":null}"#,
            "[]",
            "3",
        ] {
            assert!(
                serde_json::from_str::<CallToolResult>(wrong).is_err(),
                "{wrong}"
            );
        }
    }
}
