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

#[test]
fn a_server_finds_headers_and_body_agree_or_not() {
    let schema = json!({ "type": "object", "properties": {
        "region": { "type": "string", "x-mcp-header": "Region" },
        "count": { "type": "integer", "x-mcp-header": "Count" },
        "debug": { "type": "boolean", "x-mcp-header": "Debug" },
    }});
    let params = HeaderParams::from_input_schema(&schema).unwrap().unwrap();
    let arguments = json!({ "region": "Hello", "count": 42, "debug": true });
    let sent = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            (pairs.iter())
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| *v)
        }
    };
    const ALL: &[(&str, &str)] = &[
        ("mcp-param-region", "Hello"),
        ("mcp-param-count", "42"),
        ("mcp-param-debug", "true"),
    ];
    assert!(params.agree(
        &arguments,
        sent(&[
            ("mcp-param-region", "Hello"),
            ("mcp-param-count", " 42 "),
            ("mcp-param-debug", "true")
        ])
    ));
    assert!(params.agree(
        &arguments,
        sent(&[
            ("mcp-param-region", "=?base64?SGVsbG8=?="),
            ("mcp-param-count", "42.0"),
            ("mcp-param-debug", "true")
        ])
    ));
    // A wrapper that does not decode, a value that differs, a header left out.
    assert!(!params.agree(
        &arguments,
        sent(&[
            ("mcp-param-region", "=?base64?SGVsbG8?="),
            ("mcp-param-count", "42"),
            ("mcp-param-debug", "true")
        ])
    ));
    assert!(!params.agree(
        &arguments,
        sent(&[
            ("mcp-param-region", "World"),
            ("mcp-param-count", "42"),
            ("mcp-param-debug", "true")
        ])
    ));
    assert!(!params.agree(
        &arguments,
        sent(&[("mcp-param-count", "42"), ("mcp-param-debug", "true")])
    ));
    // A header for an argument the body does not have.
    assert!(!params.agree(&json!({ "count": 42, "debug": true }), sent(ALL)));
    assert!(params.agree(&json!({ "region": null }), sent(&[])));
}
