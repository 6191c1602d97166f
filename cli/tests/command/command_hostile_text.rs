//! Issue 24, item 3.3: server-chosen text (server name and version, tool
//! names, tool text) reaches the human output with every control character
//! escaped, so it cannot forge lines or drive the terminal.

use crate::support::cli::run_async;
use crate::support::{result, Recorded, Script, ScriptServer};
use serde_json::json;

const EVIL: &str = "x\u{1b}[2K\r\nestablished: FAKE LINE\u{7}\u{9b}31m\u{202e}";

fn hostile(request: &Recorded) -> Script {
    match request.rpc_method() {
        "initialize" => Script::JsonWith(
            200,
            result(
                request,
                json!({
                    "protocolVersion": request.body["params"]["protocolVersion"],
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": EVIL, "version": EVIL }
                }),
            ),
            vec![("mcp-session-id", "s1".to_owned())],
        ),
        "notifications/initialized" => Script::Status(202),
        "tools/list" => Script::Json(
            200,
            result(
                request,
                json!({ "tools": [{ "name": EVIL, "inputSchema": { "type": "object" } }] }),
            ),
        ),
        "tools/call" => Script::Json(
            200,
            result(
                request,
                json!({ "content": [{ "type": "text", "text": EVIL }] }),
            ),
        ),
        _ => Script::Status(200),
    }
}

#[tokio::test]
async fn server_text_cannot_forge_lines_or_drive_the_terminal() {
    let server = ScriptServer::start(hostile).await;
    let url = server.url();
    let output = run_async(&[
        &url,
        "--pin",
        "2025-11-25",
        "--list-tools",
        "--call-tool",
        "t",
        "--args",
        "{}",
    ])
    .await;
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}");
    for bad in ['\u{1b}', '\r', '\u{7}', '\u{9b}', '\u{202e}'] {
        assert!(
            !stdout.contains(bad),
            "{bad:?} reached the terminal: {stdout:?}"
        );
    }
    assert!(
        !stdout.lines().any(|l| l.starts_with("established: FAKE")),
        "{stdout}"
    );
    assert_eq!(stdout.matches("\\x1b[2K").count(), 4, "{stdout}");
    // The JSON output keeps the text whole, escaped by JSON itself.
    let json = run_async(&[&url, "--pin", "2025-11-25", "--json", "--list-tools"]).await;
    let stdout = String::from_utf8(json.stdout).unwrap();
    assert!(!stdout.contains('\u{1b}'));
    let tools: serde_json::Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["event"] == "tools")
        .unwrap();
    assert_eq!(tools["tools"][0], EVIL);
}
