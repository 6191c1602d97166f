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

impl HeaderParams {
    /// The server's side (a gateway's, a server's): whether the
    /// `Mcp-Param-*` headers a request came with agree with its
    /// `arguments`. `header` gives a header's value by its whole name
    /// (case-insensitive, as HTTP has it). Every declared argument present
    /// (and not `null`) needs its header, whose value decoded (a
    /// `=?base64?...?=` wrapper undone, strictly; anything else taken as it
    /// is, spaces around it trimmed) is the argument's text: the string
    /// itself, or the JSON text of a number or boolean (numbers compared as
    /// numbers). A header for an argument that is absent is a mismatch too.
    pub fn agree<'h>(&self, arguments: &Value, header: impl Fn(&str) -> Option<&'h str>) -> bool {
        self.params.iter().all(|param| {
            let value = (param.path.iter()).try_fold(arguments, |value, key| value.get(key));
            let sent = header(&param.header).map(str::trim);
            match (value, sent) {
                (None | Some(Value::Null), None) => true,
                (Some(value), Some(sent)) => match decode_value(sent) {
                    Some(text) => same(value, &text),
                    None => false,
                },
                _ => false,
            }
        })
    }
}

/// A header value as the text it carries: the wrapper's base64 (standard
/// alphabet, padded) decoded to UTF-8, or the value itself; `None` when a
/// wrapper does not decode.
pub fn decode_value(sent: &str) -> Option<Cow<'_, str>> {
    let Some(inner) = (sent.strip_prefix("=?base64?")).and_then(|s| s.strip_suffix("?=")) else {
        return Some(Cow::Borrowed(sent));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

/// Whether a header's text is an argument's value.
fn same(value: &Value, text: &str) -> bool {
    match value {
        Value::String(expected) => expected == text,
        Value::Bool(flag) => text == if *flag { "true" } else { "false" },
        Value::Number(number) => match (number.as_f64(), text.parse::<f64>()) {
            (Some(expected), Ok(sent)) => expected == sent,
            _ => false,
        },
        _ => false,
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
mod tests;

#[cfg(test)]
mod properties;
