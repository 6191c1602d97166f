use super::*;
use crate::protocol::methods;

#[test]
fn parses_each_message_shape() {
    let m = Incoming::parse(br#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#).unwrap();
    assert!(
        matches!(m, Incoming::Response { id: RequestId::Number(1), ref result } if result.get() == r#"{"a":1}"#)
    );
    let m =
        Incoming::parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
            .unwrap();
    assert!(
        matches!(m, Incoming::Error { id: None, ref error } if error.code() == -32700 && error.id_is_null())
    );
    // No `id` member at all (server-everything's unknown-session answer).
    let m = Incoming::parse(br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"x"}}"#).unwrap();
    assert!(matches!(m, Incoming::Error { id: None, ref error } if error.id_is_null()));
    let m =
        Incoming::parse(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}"#).unwrap();
    assert!(matches!(m, Incoming::Error { id: Some(_), ref error } if !error.id_is_null()));
    let m = Incoming::parse(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).unwrap();
    assert!(matches!(
        m,
        Incoming::Request {
            id: RequestId::String(_),
            ..
        }
    ));
    let m = Incoming::parse(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#)
        .unwrap();
    assert!(matches!(m, Incoming::Notification { .. }));
}

#[test]
fn rejects_what_is_not_json_rpc() {
    assert!(matches!(
        Incoming::parse(b"<html>"),
        Err(MessageError::Json(_))
    ));
    assert!(matches!(
        Incoming::parse(br#"{"error":"bad"}"#),
        Err(MessageError::NotJsonRpc)
    ));
    assert!(matches!(
        Incoming::parse(br#"{"jsonrpc":"2.0","id":1}"#),
        Err(MessageError::NotJsonRpc)
    ));
    assert!(matches!(
        Incoming::parse(b"[1,2]"),
        Err(MessageError::NotJsonRpc)
    ));
}

#[test]
fn rpc_error_never_prints_the_server_message() {
    let e = RpcError::new(-32000, "secret-canary", Some(Value::from("data-canary")))
        .with_http_status(400);
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains("canary"), "{shown}");
    assert!(shown.contains("-32000") && shown.contains("400"));
}

#[test]
fn serializes_requests_and_notifications() {
    let r = Request::new(RequestId::Number(7), methods::PING, None);
    assert_eq!(r.to_bytes(), br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    let n = Notification {
        method: methods::INITIALIZED.into(),
        params: None,
    };
    assert_eq!(
        n.to_bytes(),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
    );
}

/// Fields added to `_meta` join an encoded envelope without decoding it,
/// and go into the params' own `_meta` otherwise, never over a key there.
#[test]
fn meta_fields_join_the_envelope_or_the_params() {
    let mut fields = Map::new();
    fields.insert("progressToken".into(), "t".into());
    let sent = |request: &Request| -> Value {
        serde_json::from_slice::<Value>(&request.to_bytes()).unwrap()["params"]["_meta"].clone()
    };
    let envelope =
        RawValue::from_string(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#.into())
            .unwrap();
    let mut request = Request::new(RequestId::Number(1), methods::TOOLS_LIST, None)
        .with_meta(Arc::from(envelope));
    request.add_meta(fields.clone());
    assert_eq!(
        sent(&request),
        serde_json::json!({
            "progressToken": "t",
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        })
    );
    let empty = RawValue::from_string("{}".into()).unwrap();
    let mut request =
        Request::new(RequestId::Number(1), methods::TOOLS_LIST, None).with_meta(Arc::from(empty));
    request.add_meta(fields.clone());
    assert_eq!(sent(&request), serde_json::json!({ "progressToken": "t" }));
    let own = serde_json::json!({ "_meta": { "progressToken": "mine", "k": 1 } });
    let mut request = Request::new(RequestId::Number(1), methods::TOOLS_LIST, Some(own));
    request.add_meta(fields);
    assert_eq!(
        sent(&request),
        serde_json::json!({ "progressToken": "mine", "k": 1 })
    );
}

#[test]
fn only_version_2_0_is_json_rpc_however_it_is_written() {
    let escaped = Incoming::parse(br#"{"jsonrpc":"2\u002e0","id":1,"result":{}}"#);
    assert!(escaped.is_ok(), "{escaped:?}");
    for bytes in [
        &br#"{"jsonrpc":"1.0","id":1,"result":{}}"#[..],
        br#"{"id":1,"result":{}}"#,
        br#"{"jsonrpc":2,"id":1,"result":{}}"#,
        br#"{"jsonrpc":null,"id":1,"result":{}}"#,
    ] {
        assert!(
            matches!(Incoming::parse(bytes), Err(MessageError::NotJsonRpc)),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}
