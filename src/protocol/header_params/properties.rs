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
