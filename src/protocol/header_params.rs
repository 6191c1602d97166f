//! Tool arguments mirrored into `Mcp-Param-*` headers (2026-07-28, SEP-2243).
//!
//! A tool's input schema may mark a property with `x-mcp-header: "Region"`:
//! a client calling it over Streamable HTTP then sends that argument's value
//! as `Mcp-Param-Region`, so a gateway can route without reading the body,
//! and the server checks that header and body agree. This module reads the
//! declarations from a schema, applies the specification's validity rules,
//! and encodes argument values; the transport turns the pairs into headers.
//!
//! A declaration is valid only when
//! - it sits on a property reached from the root through `properties` keys
//!   alone (under `items`, `allOf`, `if`, `$defs` and the other applicator
//!   keywords the argument it names is not statically known);
//! - its value is a non-empty RFC 9110 token, unique in the tool without
//!   regard to case;
//! - the property's `type` is `string`, `integer` or `boolean` (`number` is
//!   excluded by the specification; a `null` alternative is allowed).
//!
//! One invalid declaration invalidates the whole tool: it is left out of the
//! tool list and never called, because a gateway would route its calls on a
//! header the client cannot send faithfully.
//!
//! A value is sent as its JSON text (`42`, `true`, or the string itself)
//! when that is printable ASCII without leading or trailing spaces;
//! anything else, and anything that already looks like the wrapper, is sent
//! as `=?base64?<standard base64 of the UTF-8 bytes>?=`. A `null` or absent
//! argument sends no header.

use std::borrow::Cow;
use std::collections::HashSet;

use base64::Engine as _;
use serde_json::{Map, Value};

/// Why a tool's `x-mcp-header` declarations are invalid. Says which rule
/// was broken, never the names or values involved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderParamError {
    /// A declaration is not a JSON string.
    #[error("an x-mcp-header declaration is not a string")]
    NotAString,
    /// A declaration is the empty string.
    #[error("an x-mcp-header declaration is empty")]
    Empty,
    /// A declaration is not an HTTP token (RFC 9110): spaces, colons,
    /// control or non-ASCII characters.
    #[error("an x-mcp-header declaration is not an HTTP header name token")]
    NotAToken,
    /// Two declarations name the same header, ignoring case.
    #[error("two x-mcp-header declarations name the same header")]
    Duplicate,
    /// A declaration is on a property whose type is not `string`,
    /// `integer` or `boolean`.
    #[error(
        "an x-mcp-header declaration is on a property that is not a string, integer or boolean"
    )]
    UnsupportedType,
    /// A declaration is inside a schema keyword other than `properties`
    /// (`items`, `allOf`, `$defs`, ...), so the argument it names is not
    /// statically known.
    #[error("an x-mcp-header declaration is not reachable through properties alone")]
    Unreachable,
}

/// A tool that was left out of a listing because its declarations are
/// invalid; it is never called.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExcludedTool {
    /// The tool's name.
    pub name: String,
    /// The rule its input schema broke.
    pub reason: HeaderParamError,
}

impl ExcludedTool {
    pub(crate) fn new(name: String, reason: HeaderParamError) -> Self {
        ExcludedTool { name, reason }
    }
}

/// The arguments one tool mirrors into headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParams {
    params: Vec<HeaderParam>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HeaderParam {
    /// The whole header name, `Mcp-Param-<declaration>`.
    header: String,
    /// Property names from the arguments object down to the value.
    path: Vec<String>,
}

/// The keywords whose values are schemas (or arrays or maps of schemas)
/// other than `properties`: a declaration under any of them is unreachable.
const APPLICATORS: &[&str] = &[
    "items",
    "prefixItems",
    "contains",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "dependentSchemas",
    "unevaluatedItems",
    "unevaluatedProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
    "contentSchema",
];

const DECLARATION: &str = "x-mcp-header";
const PREFIX: &str = "Mcp-Param-";

impl HeaderParams {
    /// The declarations of a tool's input schema: `None` when it has none,
    /// an error when any is invalid.
    pub fn from_input_schema(schema: &Value) -> Result<Option<HeaderParams>, HeaderParamError> {
        let Value::Object(root) = schema else {
            return Ok(None);
        };
        if root.contains_key(DECLARATION) {
            // The root is the arguments object, never a primitive.
            return Err(HeaderParamError::UnsupportedType);
        }
        let mut found = Found::default();
        scan_object(root, &mut Vec::new(), &mut found)?;
        Ok((!found.params.is_empty()).then_some(HeaderParams {
            params: found.params,
        }))
    }

    /// The header name and encoded value of every declared argument present
    /// in `arguments` (and not `null`).
    pub fn values<'a>(&'a self, arguments: &Value) -> Vec<(&'a str, String)> {
        self.params
            .iter()
            .filter_map(|param| {
                let value = param
                    .path
                    .iter()
                    .try_fold(arguments, |value, key| value.get(key))?;
                let text = match value {
                    Value::String(text) => encode_value(text).into_owned(),
                    Value::Bool(flag) => flag.to_string(),
                    Value::Number(number) => number.to_string(),
                    // Null is omitted; a structure is not a header value
                    // (the server will find the arguments do not match).
                    Value::Null | Value::Array(_) | Value::Object(_) => return None,
                };
                Some((param.header.as_str(), text))
            })
            .collect()
    }
}

#[derive(Default)]
struct Found {
    params: Vec<HeaderParam>,
    lowercase: HashSet<String>,
}

/// Scans a schema reached through `properties` only.
fn scan_object(
    schema: &Map<String, Value>,
    path: &mut Vec<String>,
    found: &mut Found,
) -> Result<(), HeaderParamError> {
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            let Value::Object(property) = property else {
                continue;
            };
            path.push(name.clone());
            if let Some(declaration) = property.get(DECLARATION) {
                found.add(declaration, property, path)?;
            }
            scan_object(property, path, found)?;
            path.pop();
        }
    }
    for keyword in APPLICATORS {
        if let Some(value) = schema.get(*keyword) {
            if declares_anywhere(value) {
                return Err(HeaderParamError::Unreachable);
            }
        }
    }
    Ok(())
}

impl Found {
    fn add(
        &mut self,
        declaration: &Value,
        property: &Map<String, Value>,
        path: &[String],
    ) -> Result<(), HeaderParamError> {
        let Value::String(name) = declaration else {
            return Err(HeaderParamError::NotAString);
        };
        if name.is_empty() {
            return Err(HeaderParamError::Empty);
        }
        if !name.bytes().all(is_token_byte) {
            return Err(HeaderParamError::NotAToken);
        }
        if !is_primitive(property.get("type")) {
            return Err(HeaderParamError::UnsupportedType);
        }
        if !self.lowercase.insert(name.to_ascii_lowercase()) {
            return Err(HeaderParamError::Duplicate);
        }
        self.params.push(HeaderParam {
            header: format!("{PREFIX}{name}"),
            path: path.to_vec(),
        });
        Ok(())
    }
}

/// `string`, `integer` or `boolean`, alone or with `null`.
fn is_primitive(kind: Option<&Value>) -> bool {
    let primitive = |kind: &str| matches!(kind, "string" | "integer" | "boolean");
    match kind {
        Some(Value::String(kind)) => primitive(kind),
        Some(Value::Array(kinds)) => {
            let mut named = kinds.iter().filter(|kind| kind.as_str() != Some("null"));
            matches!((named.next(), named.next()), (Some(Value::String(kind)), None) if primitive(kind))
        }
        _ => false,
    }
}

/// Whether any schema inside `value` carries a declaration. Walks every
/// object and array: data keywords (`const`, `default`, `examples`) under
/// an applicator are rare enough that a false alarm there is the safe side.
fn declares_anywhere(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.contains_key(DECLARATION) || map.values().any(declares_anywhere),
        Value::Array(items) => items.iter().any(declares_anywhere),
        _ => false,
    }
}

/// RFC 9110 `tchar`.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Printable ASCII without edge spaces goes as is; anything else (and
/// anything that looks like the wrapper already) as `=?base64?...?=`, so
/// the exact bytes survive.
pub fn encode_value(text: &str) -> Cow<'_, str> {
    let printable = text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = text.starts_with(' ') || text.ends_with(' ');
    let looks_wrapped = text.starts_with("=?base64?") && text.ends_with("?=");
    if printable && !padded && !looks_wrapped {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scan(properties: Value) -> Result<Option<HeaderParams>, HeaderParamError> {
        HeaderParams::from_input_schema(&json!({ "type": "object", "properties": properties }))
    }

    fn headers(properties: Value, arguments: Value) -> Vec<(String, String)> {
        scan(properties)
            .unwrap()
            .unwrap()
            .values(&arguments)
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect()
    }

    #[test]
    fn no_declarations_is_none() {
        assert_eq!(scan(json!({ "q": { "type": "string" } })), Ok(None));
        assert_eq!(HeaderParams::from_input_schema(&json!(true)), Ok(None));
    }

    #[test]
    fn primitives_are_mirrored_and_null_or_absent_omitted() {
        let properties = json!({
            "region": { "type": "string", "x-mcp-header": "Region" },
            "priority": { "type": "integer", "x-mcp-header": "Priority" },
            "verbose": { "type": ["boolean", "null"], "x-mcp-header": "Verbose" },
            "absent": { "type": "string", "x-mcp-header": "Absent" },
            "query": { "type": "string" },
        });
        let mut got = headers(
            properties,
            json!({ "region": "us-west1", "priority": 42, "verbose": null, "query": "q" }),
        );
        got.sort();
        assert_eq!(
            got,
            [
                ("Mcp-Param-Priority".to_owned(), "42".to_owned()),
                ("Mcp-Param-Region".to_owned(), "us-west1".to_owned()),
            ]
        );
    }

    #[test]
    fn nested_properties_are_reachable() {
        let properties = json!({
            "options": { "type": "object", "properties": {
                "limit": { "type": "integer", "x-mcp-header": "Limit" }
            }}
        });
        assert_eq!(
            headers(properties, json!({ "options": { "limit": 7 } })),
            [("Mcp-Param-Limit".to_owned(), "7".to_owned())]
        );
    }

    #[test]
    fn values_that_are_not_plain_ascii_are_wrapped() {
        assert_eq!(encode_value("us west 1"), "us west 1");
        assert_eq!(encode_value(""), "");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode_value("line1\r\nline2"),
            "=?base64?bGluZTENCmxpbmUy?="
        );
        assert_eq!(encode_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(encode_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
        // A long value is one unbroken base64 run (no line wrapping).
        let long = "é".repeat(3000);
        let encoded = encode_value(&long);
        assert!(!encoded.contains('\n'));
        let inner = &encoded["=?base64?".len()..encoded.len() - 2];
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .unwrap();
        assert_eq!(decoded, long.as_bytes());
    }

    #[test]
    fn invalid_declarations() {
        let cases = [
            (
                json!({ "v": { "type": "string", "x-mcp-header": "" } }),
                HeaderParamError::Empty,
            ),
            (
                json!({ "v": { "type": "string", "x-mcp-header": 3 } }),
                HeaderParamError::NotAString,
            ),
            (
                json!({ "v": { "type": "string", "x-mcp-header": "My Region" } }),
                HeaderParamError::NotAToken,
            ),
            (
                json!({ "v": { "type": "string", "x-mcp-header": "Region:Primary" } }),
                HeaderParamError::NotAToken,
            ),
            (
                json!({ "v": { "type": "string", "x-mcp-header": "Région" } }),
                HeaderParamError::NotAToken,
            ),
            (
                json!({ "v": { "type": "string", "x-mcp-header": "Region\t1" } }),
                HeaderParamError::NotAToken,
            ),
            (
                json!({ "v": { "type": "object", "x-mcp-header": "Data" } }),
                HeaderParamError::UnsupportedType,
            ),
            (
                json!({ "v": { "type": "array", "items": { "type": "string" }, "x-mcp-header": "Items" } }),
                HeaderParamError::UnsupportedType,
            ),
            (
                json!({ "v": { "type": "null", "x-mcp-header": "Nil" } }),
                HeaderParamError::UnsupportedType,
            ),
            (
                json!({ "v": { "type": "number", "x-mcp-header": "Score" } }),
                HeaderParamError::UnsupportedType,
            ),
            (
                json!({ "v": { "x-mcp-header": "Untyped" } }),
                HeaderParamError::UnsupportedType,
            ),
            (
                json!({ "v": { "type": ["string", "integer"], "x-mcp-header": "Either" } }),
                HeaderParamError::UnsupportedType,
            ),
            (
                json!({ "a": { "type": "string", "x-mcp-header": "Region" }, "b": { "type": "string", "x-mcp-header": "Region" } }),
                HeaderParamError::Duplicate,
            ),
            (
                json!({ "a": { "type": "string", "x-mcp-header": "MyField" }, "b": { "type": "string", "x-mcp-header": "myfield" } }),
                HeaderParamError::Duplicate,
            ),
            (
                json!({ "v": { "type": "array", "items": { "type": "string", "x-mcp-header": "Region" } } }),
                HeaderParamError::Unreachable,
            ),
            (
                json!({ "v": { "anyOf": [{ "type": "string", "x-mcp-header": "Region" }] } }),
                HeaderParamError::Unreachable,
            ),
        ];
        for (properties, expected) in cases {
            assert_eq!(scan(properties.clone()), Err(expected), "{properties}");
        }
        let under_defs = json!({
            "type": "object",
            "$defs": { "r": { "type": "string", "x-mcp-header": "Region" } },
            "properties": { "r": { "$ref": "#/$defs/r" } }
        });
        assert_eq!(
            HeaderParams::from_input_schema(&under_defs),
            Err(HeaderParamError::Unreachable)
        );
        let on_root = json!({ "type": "object", "x-mcp-header": "Root" });
        assert_eq!(
            HeaderParams::from_input_schema(&on_root),
            Err(HeaderParamError::UnsupportedType)
        );
    }

    #[test]
    fn a_property_named_like_the_keyword_is_just_a_property() {
        assert_eq!(
            scan(json!({ "x-mcp-header": { "type": "string" } })),
            Ok(None)
        );
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    fn decode(value: &str) -> String {
        match value
            .strip_prefix("=?base64?")
            .and_then(|v| v.strip_suffix("?="))
        {
            Some(inner) => String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(inner)
                    .unwrap(),
            )
            .unwrap(),
            None => value.to_owned(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Every string is sent as a valid header value and read back
        /// exactly.
        #[test]
        fn any_string_round_trips_through_a_header_value(text in "\\PC{0,200}|[\\x00-\\x7f]{0,50}") {
            let encoded = encode_value(&text);
            prop_assert!(http::HeaderValue::from_str(&encoded).is_ok());
            prop_assert_eq!(decode(&encoded), text);
        }

        /// Any JSON for a schema ends in declarations or a typed refusal.
        #[test]
        fn any_schema_is_read_without_panic(schema in arbitrary_json()) {
            let _ = HeaderParams::from_input_schema(&schema);
        }
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("x-mcp-header".to_owned()),
                Just("properties".to_owned()),
                Just("string".to_owned()),
                "[ -~]{0,8}"
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("x-mcp-header".to_owned()),
                        Just("properties".to_owned()),
                        Just("type".to_owned()),
                        Just("items".to_owned()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }
}
