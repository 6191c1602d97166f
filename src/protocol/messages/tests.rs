use super::*;
use serde_json::json;

#[cfg(feature = "schema")]
fn tool(output_schema: Option<Value>) -> Tool {
    serde_json::from_value(json!({ "name": "t", "inputSchema": { "type": "object" },
                                   "outputSchema": output_schema }))
    .unwrap()
}

#[cfg(feature = "schema")]
fn result(structured: Option<Value>) -> CallToolResult {
    serde_json::from_value(json!({ "content": [], "structuredContent": structured })).unwrap()
}

#[test]
fn content_blocks_are_typed_and_unknown_ones_kept() {
    let result: CallToolResult = serde_json::from_value(json!({ "content": [
        { "type": "text", "text": "hi" },
        { "type": "image", "data": "AA==", "mimeType": "image/png" },
        { "type": "resource_link", "uri": "file:///a", "name": "a" },
        { "type": "resource", "resource": { "uri": "file:///b", "text": "b" } },
        { "type": "hologram", "depth": 3 },
        { "type": "audio" }
    ], "vendorField": 1 }))
    .unwrap();
    let blocks = result.blocks();
    assert_eq!(blocks[0], ContentBlock::Text("hi".into()));
    assert!(
        matches!(&blocks[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png")
    );
    assert!(matches!(&blocks[2], ContentBlock::ResourceLink { uri, .. } if uri == "file:///a"));
    assert!(matches!(&blocks[3], ContentBlock::Resource(_)));
    assert!(matches!(&blocks[4], ContentBlock::Other(_)));
    assert!(
        matches!(&blocks[5], ContentBlock::Other(_)),
        "an audio block without data"
    );
    assert_eq!(result.extra["vendorField"], 1, "unknown fields kept");
}

#[cfg(feature = "schema")]
#[test]
fn structured_content_is_checked_against_the_output_schema() {
    let schema = json!({ "type": "object", "properties": { "n": { "$ref": "#/$defs/n" } },
                         "required": ["n"], "$defs": { "n": { "type": "integer" } } });
    let declared = tool(Some(schema));
    assert_eq!(
        result(Some(json!({ "n": 3 }))).check_structured(&declared),
        Ok(())
    );
    assert_eq!(
        result(Some(json!({ "n": "three" }))).check_structured(&declared),
        Err(StructuredContentError::Mismatch { errors: 1 })
    );
    assert_eq!(
        result(None).check_structured(&declared),
        Err(StructuredContentError::Missing)
    );
    assert_eq!(result(None).check_structured(&tool(None)), Ok(()));
    let remote = tool(Some(
        json!({ "$ref": "https://example.invalid/schema.json" }),
    ));
    assert_eq!(
        result(Some(json!({}))).check_structured(&remote),
        Err(StructuredContentError::InvalidSchema),
        "a remote schema is never fetched"
    );
}
