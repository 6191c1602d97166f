//! `RUST_LOG` shows the library's lifecycle events on stderr, and even at
//! `trace` no secret or payload given to or received by the command is
//! printed (issue 10, item 8; G14 through the command).

use crate::support::cli::{command, run_command};
use crate::support::{legacy, Script, ScriptServer};

#[test]
fn without_rust_log_nothing_is_logged() {
    let mut command = command(&[]);
    command.env_remove("RUST_LOG");
    let output = run_command(command);
    assert!(output.status.success());
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_log_trace_shows_events_but_no_canary() {
    let server = ScriptServer::start(|request| match request.rpc_method() {
        "tools/call" => Script::Json(
            200,
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": request.id(),
                "error": { "code": -32603, "message": "server-message-canary",
                           "data": "server-data-canary" }
            }),
        ),
        _ => legacy(request),
    })
    .await;
    let url = server
        .url()
        .replace("http://", "http://user:userinfo-canary@")
        + "?token=query-canary";
    let output = tokio::task::spawn_blocking(move || {
        let mut command = command(&[
            "--pin",
            "2025-11-25",
            "--header",
            "Authorization: Bearer header-canary",
            "--call-tool",
            "x",
            "--args",
            r#"{"secret":"argument-canary"}"#,
            &url,
        ]);
        command.env("RUST_LOG", "trace");
        run_command(command)
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let all = format!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
    assert!(
        stderr.contains("mcp_connect"),
        "RUST_LOG=trace shows the library's events: {stderr}"
    );
    for canary in [
        "header-canary",
        "query-canary",
        "userinfo-canary",
        "session-canary",
        "argument-canary",
        "server-message-canary",
        "server-data-canary",
    ] {
        assert!(!all.contains(canary), "{canary} printed");
    }
    // The server saw what the command was given: the canaries were real.
    let recorded = server.recorded();
    assert!(recorded.iter().any(|r| r.header("authorization").is_some()));
}
