use serde_json::json;

use super::*;

#[test]
fn every_kind_is_read_back_from_its_method() {
    for kind in KNOWN {
        let method = kind.method().expect("a known kind has a method");
        assert_eq!(RequestKind::of(method), kind, "{method}");
    }
    assert_eq!(RequestKind::of("vendor/thing"), RequestKind::Other);
    assert_eq!(RequestKind::Other.method(), None);
}

#[test]
fn a_call_is_encoded_once_with_its_target() {
    let arguments = json!({ "text": "é\"x" });
    let call = CallTool::new("echo", &arguments).encode();
    assert_eq!(call.method(), methods::TOOLS_CALL);
    assert_eq!(call.target(), Some("echo"));
    let params: Value = serde_json::from_str(call.params().expect("params")).expect("JSON");
    assert_eq!(
        params,
        json!({ "name": "echo", "arguments": { "text": "é\"x" } })
    );
    // Clones share the text.
    let again = call.clone();
    assert!(std::ptr::eq(
        call.params().expect("params"),
        again.params().expect("params")
    ));
}

#[test]
fn a_raw_request_knows_what_it_is() {
    let raw = RawRequest::new(
        "tools/call",
        Some(json!({ "name": "add", "arguments": {} })),
    );
    let encoded = raw.encode();
    assert_eq!(encoded.kind(), RequestKind::CallTool);
    assert_eq!(encoded.target(), Some("add"));
    assert!(!encoded.is_idempotent_read());
    let read = RawRequest::new("resources/read", Some(json!({ "uri": "file:///a" })));
    assert!(read.encode().is_idempotent_read());
    assert_eq!(read.target(), Some("file:///a"));
    let other = RawRequest::new("vendor/thing", Some(json!({ "name": "x" })));
    assert_eq!(other.encode().kind(), RequestKind::Other);
    assert_eq!(other.target(), None);
    let with_meta = EncodedRequest::raw("tools/list", Some(&json!({ "_meta": {} })));
    assert!(with_meta.has_own_meta());
}

#[test]
fn retargeting_renames_what_is_sent() {
    let arguments = json!({});
    let mut call = CallTool::new("files__add", &arguments);
    call.retarget("add");
    let encoded = call.encode();
    assert_eq!(encoded.target(), Some("add"));
    assert!(encoded
        .params()
        .expect("params")
        .contains(r#""name":"add""#));

    let mut raw = RawRequest::new("prompts/get", Some(json!({ "name": "a__greet" })));
    raw.retarget("greet");
    assert_eq!(raw.encode().target(), Some("greet"));

    let mut encoded = EncodedRequest::raw("resources/read", Some(&json!({ "uri": "x://1" })));
    encoded.retarget("file:///1");
    assert_eq!(encoded.target(), Some("file:///1"));
    assert_eq!(encoded.params(), Some(r#"{"uri":"file:///1"}"#));
}

#[test]
fn a_listing_of_every_page_asks_for_the_next() {
    let all = ListTools::all();
    assert_eq!(all.encode().params(), None);
    let raw = RawValue::from_string(r#"{"tools":[{"name":"a"}],"nextCursor":"c2"}"#.into())
        .expect("JSON");
    let mut page = ListTools::read(raw).expect("a page");
    let (cursor, next) = all.next_page(&mut page).expect("a next page");
    assert_eq!(cursor, "c2");
    assert_eq!(page.next_cursor, None, "taken");
    assert_eq!(next.encode().params(), Some(r#"{"cursor":"c2"}"#));
    let raw =
        RawValue::from_string(r#"{"tools":[{"name":"b"}],"nextCursor":""}"#.into()).expect("JSON");
    let last = ListTools::read(raw).expect("a page");
    ListTools::join(&mut page, last);
    let names: Vec<_> = page.items.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(page.next_cursor, None, "an empty cursor ends the listing");

    let mut first = ListTools::read(
        RawValue::from_string(r#"{"tools":[],"nextCursor":"c2"}"#.into()).expect("JSON"),
    )
    .expect("a page");
    assert!(ListTools::first().next_page(&mut first).is_none());
    assert_eq!(
        first.next_cursor.as_deref(),
        Some("c2"),
        "one page keeps its cursor"
    );
}

#[test]
fn debug_never_shows_params_or_target() {
    let arguments = json!({ "secret": "s3cr3t" });
    let shown = format!("{:?}", CallTool::new("private-tool", &arguments).encode());
    assert!(
        !shown.contains("s3cr3t") && !shown.contains("private-tool"),
        "{shown}"
    );
}
