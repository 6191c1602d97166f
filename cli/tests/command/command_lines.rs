//! Issue 64: what the command's lines say (items 11, 13, 15): the target
//! line names a registry server and a Unix socket, a 421 over a socket
//! gets a hint, a group's call lines name their server and session in one
//! form for every outcome, and a multi-line result prints as lines.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::cli::{json_lines, run_async};
use crate::support::{legacy, result, Recorded, Script, ScriptServer};

/// A legacy server whose tool `two` answers two lines, and whose tool
/// `bad` answers a tool error.
fn lines_server(request: &Recorded) -> Script {
    match request.rpc_method() {
        "tools/list" => Script::Json(
            200,
            result(
                request,
                serde_json::json!({ "tools": [
                    { "name": "two", "inputSchema": { "type": "object" } },
                    { "name": "bad", "inputSchema": { "type": "object" } } ] }),
            ),
        ),
        "tools/call" => {
            let (text, error) = match request.body["params"]["name"].as_str() {
                Some("bad") => ("no such file", true),
                _ => ("first line\nsecond line", false),
            };
            let answer = serde_json::json!({ "content": [{ "type": "text", "text": text }],
                                             "isError": error });
            Script::Json(200, result(request, answer))
        }
        _ => legacy(request),
    }
}

fn config(text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "mcp-lines-{}-{}.json",
        std::process::id(),
        text.len()
    ));
    std::fs::write(&path, text).unwrap();
    path
}

/// Items 13 and 15: a routed call's line names its server and session in
/// text and JSON, a tool error, a routing error and a result have one form
/// (`call N NAME: ...`), and a result's lines stay lines.
#[tokio::test]
async fn group_call_lines_name_their_server_in_one_form() {
    let server = ScriptServer::start(lines_server).await;
    let path = config(&format!(
        r#"{{ "mcpServers": {{ "fs": {{ "url": "{}" }} }} }}"#,
        server.url()
    ));
    let path = path.to_str().unwrap().to_owned();
    for (tool, expected) in [
        (
            "two",
            "call 1 two: first line\n  second line (fs, session 1)",
        ),
        (
            "bad",
            "call 1 bad: tool error: no such file (fs, session 1)",
        ),
        ("none", "call 1 none: failed: "),
    ] {
        let output = run_async(&["--config", &path, "--call-tool", tool]).await;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(text.contains(expected), "{tool}: {text}");
        assert!(!text.contains("\\n"), "{text}");
        let output = run_async(&["--config", &path, "--call-tool", tool, "--json"]).await;
        let lines = json_lines(&output);
        let call = lines.iter().find(|l| l["event"] == "call").unwrap();
        if tool != "none" {
            assert_eq!(call["server"], "fs", "{call}");
            assert_eq!(call["generation"], 1, "{call}");
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// Item 15: a registry server's target line names it, not `uvx` or `npx`.
#[tokio::test]
async fn the_target_line_names_a_registry_server() {
    let server = ScriptServer::start(lines_server).await;
    let document = serde_json::json!({ "name": "io.github.acme/lines", "version": "1.0.0",
        "remotes": [ { "type": "streamable-http", "url": server.url() } ] });
    let path = config(&document.to_string());
    let output = run_async(&["--server-json", path.to_str().unwrap()]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("connecting to io.github.acme/lines ("),
        "{text}"
    );
    let _ = std::fs::remove_file(&path);
}

/// Item 11: over a Unix socket, the target line says so, and a 421 (the
/// server checks the URL's host) gets a hint saying what to change.
#[tokio::test(flavor = "multi_thread")]
async fn a_421_over_a_unix_socket_says_the_url_gives_the_host() {
    let socket = std::env::temp_dir().join(format!("mcp-421-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 16384];
                let _ =
                    tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buffer)).await;
                let answer = "HTTP/1.1 421 Misdirected Request\r\ncontent-length: 0\r\n\r\n";
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    let socket_arg = socket.to_str().unwrap().to_owned();
    let output = run_async(&["--unix-socket", &socket_arg, "http://mcp.internal/mcp"]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{text}");
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.contains(&format!("over the Unix socket {socket_arg}")),
        "{text}"
    );
    assert!(
        text.contains("hint: the server refused the URL's host"),
        "{text}"
    );
    let _ = std::fs::remove_file(&socket);
}
