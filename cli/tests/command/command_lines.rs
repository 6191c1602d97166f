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

/// A legacy server whose `tools/call` reports progress twice (of 2), then
/// answers; the GET stream is refused.
fn progressing(request: &Recorded) -> Script {
    if request.method == http::Method::GET {
        return Script::Status(405);
    }
    match request.rpc_method() {
        "tools/call" => {
            let token = request.body["params"]["_meta"]["progressToken"].clone();
            let event = |message: serde_json::Value| format!("event: message\ndata: {message}\n\n");
            let step = Duration::from_millis(20);
            let mut events: Vec<(Duration, String)> = (1..=2)
                .map(|i| {
                    let report = serde_json::json!({ "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": { "progressToken": token, "progress": i, "total": 2 } });
                    (step, event(report))
                })
                .collect();
            let answer = serde_json::json!({ "content": [{ "type": "text", "text": "done" }] });
            events.push((step, event(result(request, answer))));
            Script::SsePaced(events)
        }
        _ => lines_server(request),
    }
}

/// Items 5 and 6: a `--config` call goes as soon as its own server is
/// ready, saying what it waits for, while another server is stuck (it
/// waited, silently, for every server to settle: here the 20 s deadline),
/// and its progress prints as in single-server mode (it printed none).
#[tokio::test]
async fn a_config_call_goes_when_its_server_is_ready_with_its_progress() {
    let ready = ScriptServer::start(progressing).await;
    let stuck = ScriptServer::start(|_: &Recorded| Script::Stall).await;
    let path = config(&format!(
        r#"{{ "mcpServers": {{ "fs": {{ "url": "{}" }}, "stuck": {{ "url": "{}" }} }} }}"#,
        ready.url(),
        stuck.url()
    ));
    let path = path.to_str().unwrap().to_owned();
    let started = std::time::Instant::now();
    let output = run_async(&[
        "--config",
        &path,
        "--call-tool",
        "two",
        "--deadline",
        "20s",
        "--json",
    ])
    .await;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(took < Duration::from_secs(8), "took {took:?}: {text}");
    let lines = json_lines(&output);
    let events: Vec<&str> = lines.iter().filter_map(|l| l["event"].as_str()).collect();
    let at = |event: &str| events.iter().position(|e| *e == event);
    let (waiting, call) = (at("waiting"), at("call"));
    assert!(waiting.is_some() && waiting < call, "{events:?}");
    let progress: Vec<_> = lines.iter().filter(|l| l["event"] == "progress").collect();
    assert_eq!(progress.len(), 2, "{text}");
    assert_eq!(progress[1]["total"], 2.0, "{text}");
    let call = lines.iter().find(|l| l["event"] == "call").unwrap();
    assert_eq!(call["ok"], true, "{text}");
    let stuck_line = lines
        .iter()
        .find(|l| l["name"] == "stuck")
        .expect("a line for stuck");
    assert_eq!(stuck_line["outcome"], "starting", "{text}");
    let _ = std::fs::remove_file(&path);
}

/// Item 8: a server a reload adds is in the summary (it counted only the
/// servers the file had at the start).
#[tokio::test(flavor = "multi_thread")]
async fn the_summary_counts_a_server_a_reload_added() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let a = ScriptServer::start(lines_server).await;
    let b = ScriptServer::start(lines_server).await;
    let entry = |server: &ScriptServer| format!(r#"{{ "url": "{}" }}"#, server.url());
    let path = config(&format!(r#"{{ "mcpServers": {{ "a": {} }} }}"#, entry(&a)));
    let path_arg = path.to_str().unwrap().to_owned();
    let child = crate::support::cli::command(&[
        "--json",
        "--config",
        &path_arg,
        "--call-tool",
        "two",
        "--repeat",
        "200",
        "--interval",
        "50ms",
    ])
    .spawn()
    .unwrap();
    let until = |done: &dyn Fn() -> bool| {
        let started = std::time::Instant::now();
        while !done() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never happened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    tokio::task::block_in_place(|| until(&|| a.count("tools/call") >= 1));
    let both = format!(
        r#"{{ "mcpServers": {{ "a": {}, "b": {} }} }}"#,
        entry(&a),
        entry(&b)
    );
    std::fs::write(&path, both).unwrap();
    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGHUP).unwrap();
    tokio::task::block_in_place(|| until(&|| b.count("tools/list") >= 1));
    kill(pid, Signal::SIGINT).unwrap();
    let output = tokio::task::block_in_place(|| {
        crate::support::cli::finish(child, crate::support::cli::COMMAND_LIMIT)
    });
    let lines = json_lines(&output);
    let summary = lines.last().unwrap();
    assert_eq!(summary["event"], "summary", "{lines:?}");
    assert_eq!(summary["servers"], 2, "{summary}");
    assert_eq!(summary["established"], 2, "{summary}");
    let _ = std::fs::remove_file(&path);
}
