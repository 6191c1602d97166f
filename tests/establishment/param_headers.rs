//! Issue 14, item 2 (SEP-2243): a tool's `x-mcp-header` arguments travel in
//! `Mcp-Param-*` headers with the specification's encoding; a tool whose
//! declarations are invalid is left out of the listing and never called; a
//! call the server refuses with `HeaderMismatch` is listed-and-sent once
//! more.

use std::time::Duration;

use crate::support::{watchdog, Recorded, Script, ScriptServer};
use base64::Engine as _;
use mcp_connect::protocol::header_params::HeaderParamError;
use mcp_connect::protocol::ListTools;
use mcp_connect::{ConnectRequest, Connector, ErrorKind, Session};
use serde_json::{json, Value};

fn tools() -> Value {
    json!([
        { "name": "route", "inputSchema": { "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "note": { "type": "string", "x-mcp-header": "Note" },
            "count": { "type": "integer", "x-mcp-header": "Count" },
            "dry": { "type": ["boolean", "null"], "x-mcp-header": "Dry" },
            "query": { "type": "string" }
        }}},
        { "name": "broken", "inputSchema": { "type": "object", "properties": {
            "where": { "type": "string", "x-mcp-header": "Where Now" }
        }}},
        { "name": "plain", "inputSchema": { "type": "object" } }
    ])
}

/// A 2026-07-28 server listing [`tools`]; `strict` answers a `route` call
/// without `Mcp-Param-Region` with `HeaderMismatch`, as a checking server
/// must.
fn server(strict: bool) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request: &Recorded| match request.rpc_method() {
        "server/discover" => Script::Json(
            200,
            crate::support::result(
                request,
                json!({ "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} } }),
            ),
        ),
        "tools/list" => Script::Json(
            200,
            crate::support::result(request, json!({ "tools": tools() })),
        ),
        "tools/call" if strict && request.header("mcp-param-region").is_none() => {
            Script::Json(400, crate::support::error(request, -32020, None))
        }
        "tools/call" => Script::Json(
            200,
            crate::support::result(request, json!({ "resultType": "complete", "content": [] })),
        ),
        _ => Script::Json(200, crate::support::error(request, -32601, None)),
    }
}

async fn connect(server: &ScriptServer) -> Session {
    Connector::new()
        .connect(ConnectRequest::http(&server.url()).unwrap())
        .await
        .unwrap()
}

fn calls(server: &ScriptServer) -> Vec<Recorded> {
    server.recorded_for("tools/call")
}

fn unwrap_base64(header: &str) -> String {
    let inner = header
        .strip_prefix("=?base64?")
        .and_then(|h| h.strip_suffix("?="))
        .unwrap_or_else(|| panic!("not base64-wrapped: {header}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

#[tokio::test]
async fn declared_arguments_are_mirrored_with_their_encoding() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(false)).await;
        let session = connect(&server).await;
        let listed = session.list_tools().await.unwrap();
        let names: Vec<_> = listed.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["route", "plain"]);

        let long = format!("{}\r\n{}", "ü".repeat(2000), "x".repeat(2000));
        session
            .call_tool(
                "route",
                &json!({ "region": "Zürich 東京", "note": long, "count": 42,
                         "dry": null, "query": "not mirrored" }),
            )
            .await
            .unwrap();
        let call = &calls(&server)[0];
        assert_eq!(
            unwrap_base64(call.header("mcp-param-region").unwrap()),
            "Zürich 東京"
        );
        assert_eq!(
            unwrap_base64(call.header("mcp-param-note").unwrap()),
            long,
            "a long value survives whole"
        );
        assert_eq!(call.header("mcp-param-count"), Some("42"));
        assert_eq!(call.header("mcp-param-dry"), None, "null is omitted");
        assert_eq!(call.header("mcp-param-query"), None, "not declared");
        assert_eq!(call.header("mcp-name"), Some("route"));

        session
            .call_tool("route", &json!({ "region": "us-west1", "dry": true }))
            .await
            .unwrap();
        let call = &calls(&server)[1];
        assert_eq!(call.header("mcp-param-region"), Some("us-west1"));
        assert_eq!(call.header("mcp-param-dry"), Some("true"));
        assert_eq!(call.header("mcp-param-note"), None, "absent is omitted");

        session
            .call_tool("plain", &json!({ "a": 1 }))
            .await
            .unwrap();
        let call = &calls(&server)[2];
        assert!(
            !call
                .headers
                .keys()
                .any(|k| k.as_str().starts_with("mcp-param-")),
            "a tool without declarations sends none"
        );
    })
    .await;
}

#[tokio::test]
async fn a_tool_with_invalid_declarations_is_excluded_and_never_called() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(false)).await;
        let session = connect(&server).await;
        let listed = session.list_tools().await.unwrap();
        assert_eq!(listed.excluded.len(), 1);
        assert_eq!(listed.excluded[0].name, "broken");
        assert_eq!(listed.excluded[0].reason, HeaderParamError::NotAToken);

        let error = session
            .call_tool("broken", &json!({ "where": "x" }))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::InvalidTool(HeaderParamError::NotAToken)
            ),
            "{error}"
        );
        assert!(calls(&server).is_empty(), "nothing was sent");

        // A page sent as a request is the server's, as sent; the tool it
        // lists with invalid declarations still cannot be called.
        let page = session.send(ListTools::first()).await.unwrap();
        assert_eq!(page.items.len(), 3);
    })
    .await;
}

#[tokio::test]
async fn a_header_mismatch_lists_the_tools_and_sends_the_call_once_more() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(true)).await;
        let session = connect(&server).await;
        // Called before any listing: no declarations known yet.
        session
            .call_tool("route", &json!({ "region": "eu" }))
            .await
            .unwrap();
        let calls = calls(&server);
        assert_eq!(calls.len(), 2, "refused once, then sent with headers");
        assert_eq!(calls[0].header("mcp-param-region"), None);
        assert_eq!(calls[1].header("mcp-param-region"), Some("eu"));
        assert_ne!(calls[0].id(), calls[1].id());
        assert_eq!(server.count("tools/list"), 1);

        // A refusal that a listing cannot cure is the answer, after one try.
        let error = session
            .call_tool("route", &json!({ "note": "no region" }))
            .await
            .unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Rpc(rpc) if rpc.code() == -32020));
        assert_eq!(server.count("tools/call"), 4);
        assert_eq!(server.count("tools/list"), 2);
    })
    .await;
}
