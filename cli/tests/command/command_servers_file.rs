//! Issue 26, item 5 (in part): `mcp-connect --config FILE` establishes every
//! server of an `mcpServers` file at once, a line for each as it finishes,
//! each under its own deadline; a bad entry is reported by name and the
//! others go on; the exit status says whether all were established.

use std::time::{Duration, Instant};

use mcp_connect::testkit::assert_published_server_json;

use crate::support::cli::{json_lines, run_async};
use crate::support::{legacy, result, Recorded, Script, ScriptServer};

/// A legacy server that lists one tool.
fn one_tool(request: &Recorded) -> Script {
    match request.rpc_method() {
        "tools/list" => Script::Json(
            200,
            result(
                request,
                serde_json::json!({ "tools": [{ "name": "echo", "inputSchema": { "type": "object" } }] }),
            ),
        ),
        _ => legacy(request),
    }
}

const SECRET: &str = "hdr-secret-0451";

fn write_config(text: &str) -> tempfile_path::Path {
    tempfile_path::Path::new(text, "json")
}

/// A file under the system's temporary directory, removed on drop.
mod tempfile_path {
    pub struct Path(std::path::PathBuf);
    impl Path {
        pub fn new(text: &str, extension: &str) -> Self {
            use std::sync::atomic::{AtomicU32, Ordering};
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "mcp-connect-config-{}-{}.{extension}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::write(&path, text).unwrap();
            Path(path)
        }
        pub fn as_str(&self) -> &str {
            self.0.to_str().unwrap()
        }
    }
    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

#[tokio::test]
async fn every_server_is_established_at_once_and_reported_by_name() {
    let healthy = ScriptServer::start(one_tool).await;
    let slow = ScriptServer::start(|request| {
        Script::Delayed(Duration::from_millis(300), Box::new(legacy(request)))
    })
    .await;
    let stalled = ScriptServer::start(|_| Script::Stall).await;
    let refused = ScriptServer::start(|_| Script::Status(401)).await;
    let off = ScriptServer::start(one_tool).await;
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{
            "healthy": {{ "url": "{}", "headers": {{ "X-Key": "{SECRET}" }}, "disabled": false }},
            "off": {{ "url": "{}", "disabled": true }},
            "slow": {{ "url": "{}" }},
            "stalled": {{ "url": "{}" }},
            "refused": {{ "url": "{}" }},
            "exits": {{ "command": "false" }},
            "broken": {{ "command": "srv", "url": "http://127.0.0.1:1/" }}
        }} }}"#,
        healthy.url(),
        off.url(),
        slow.url(),
        stalled.url(),
        refused.url()
    ));
    let started = Instant::now();
    let output = run_async(&["--config", config.as_str(), "--deadline", "2s", "--json"]).await;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    let lines = json_lines(&output);
    let of = |name: &str| {
        lines
            .iter()
            .find(|line| line["name"] == name)
            .unwrap_or_else(|| panic!("no line for {name}: {text}"))
    };
    assert_eq!(of("healthy")["outcome"], "established");
    assert_eq!(of("healthy")["tools"], 1);
    assert_eq!(of("slow")["outcome"], "established");
    assert_eq!(of("broken")["outcome"], "invalid");
    assert_eq!(of("stalled")["outcome"], "failed");
    assert_eq!(of("stalled")["failure"]["kind"], "timeout");
    assert_eq!(of("refused")["failure"]["kind"], "auth");
    assert_eq!(of("refused")["failure"]["http_status"], 401);
    assert_eq!(of("exits")["outcome"], "failed");
    // A disabled server is named and never contacted.
    assert_eq!(of("off")["outcome"], "disabled");
    assert!(off.recorded().is_empty(), "{text}");
    // The healthy servers did not wait for the stalled one.
    assert!(
        of("healthy")["elapsed_ms"].as_f64().unwrap() < 1500.0,
        "{text}"
    );
    // All at once: about one deadline in all, not one per server.
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let summary = lines.last().unwrap();
    assert_eq!(summary["event"], "summary");
    assert_eq!(
        (
            summary["servers"].as_u64(),
            summary["established"].as_u64(),
            summary["failed"].as_u64()
        ),
        (Some(6), Some(2), Some(4))
    );
    // A 401 is not something a fresh session can fix: one attempt only.
    assert_eq!(refused.recorded().len(), 1, "{text}");
}

#[tokio::test]
async fn one_server_can_be_chosen_and_a_bad_file_is_a_usage_error() {
    let healthy = ScriptServer::start(legacy).await;
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{ "healthy": {{ "url": "{}" }}, "other": {{ "command": "false" }} }} }}"#,
        healthy.url()
    ));
    let output = run_async(&["--config", config.as_str(), "--server", "healthy"]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("healthy: established"), "{text}");
    assert!(!text.contains("other"), "{text}");

    let unknown = run_async(&["--config", config.as_str(), "--server", "nope"]).await;
    assert_eq!(unknown.status.code(), Some(2));
    let not_json = write_config("{ not json");
    let bad = run_async(&["--config", not_json.as_str()]).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not JSON"));
    let both = run_async(&["--config", config.as_str(), "http://127.0.0.1:1/mcp"]).await;
    assert_eq!(both.status.code(), Some(2));
}

#[tokio::test]
async fn a_program_not_on_the_path_is_named_with_the_path_searched() {
    let config = write_config(
        r#"{ "mcpServers": { "gone": { "command": "no-such-mcp-server",
            "env": { "PATH": "/opt/nowhere:/usr/nothing", "TOKEN": "s3cret-canary" } } } }"#,
    );
    let output = run_async(&["--config", config.as_str()]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "gone: failed: no session could be established: gave up after 1 attempt: \
             recovery is off: connect failed: transport failed: the server's program was not \
             found: no executable `no-such-mcp-server` on the PATH the server runs with \
             (/opt/nowhere:/usr/nothing)"
        ),
        "{text}"
    );
    assert!(!text.contains("os error"), "{text}");
    assert!(!text.contains("s3cret-canary"), "{text}");
    let json = run_async(&["--config", config.as_str(), "--json"]).await;
    let lines = json_lines(&json);
    assert_eq!(lines[0]["failure"]["kind"], "configuration");
}

#[tokio::test]
async fn a_codex_config_toml_is_read_and_its_syntax_errors_located() {
    let healthy = ScriptServer::start(one_tool).await;
    let config = tempfile_path::Path::new(
        &format!(
            "model = \"x\"\n[mcp_servers.api]\nurl = \"{}\"\nbearer_token_env_var = \"MCP_TEST_TOKEN\"\n\
             [mcp_servers.off]\ncommand = \"false\"\n",
            healthy.url()
        ),
        "toml",
    );
    let mut command = crate::support::cli::command(&["--config", config.as_str(), "--json"]);
    command.env("MCP_TEST_TOKEN", SECRET);
    let output = tokio::task::spawn_blocking(move || crate::support::cli::run_command(command))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!text.contains(SECRET), "{text}");
    let lines = json_lines(&output);
    let of = |name: &str| lines.iter().find(|line| line["name"] == name).unwrap();
    assert_eq!(of("api")["outcome"], "established", "{text}");
    assert_eq!(of("off")["outcome"], "failed", "{text}");
    let sent = healthy.recorded();
    assert_eq!(
        sent[0].headers["authorization"],
        format!("Bearer {SECRET}"),
        "the token went as Codex says"
    );

    let broken = tempfile_path::Path::new("[mcp_servers.a]\ncommand = = 1\n", "toml");
    let output = run_async(&["--config", broken.as_str()]).await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not TOML (line 2, column 11)"), "{stderr}");
}

/// A legacy server that lists `echo` and one tool of its own.
fn two_tools(own: &'static str) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request| match request.rpc_method() {
        "tools/list" => Script::Json(
            200,
            result(
                request,
                serde_json::json!({ "tools": [
                    { "name": "echo", "inputSchema": { "type": "object" } },
                    { "name": own, "inputSchema": { "type": "object" } },
                ] }),
            ),
        ),
        _ => legacy(request),
    }
}

/// Item 5: `--list-tools` prints the merged catalogue with the names a
/// caller would use: a name two servers share prefixed on both, a name
/// that breaks the tool-name rules made to fit.
#[tokio::test]
async fn list_tools_prints_the_merged_catalogue_by_catalogue_name() {
    let files = ScriptServer::start(two_tools("read/file")).await;
    let git = ScriptServer::start(two_tools("log")).await;
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{ "files": {{ "url": "{}" }}, "git": {{ "url": "{}" }} }} }}"#,
        files.url(),
        git.url()
    ));
    let output = run_async(&["--config", config.as_str(), "--list-tools", "--json"]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{text}");
    let tools: Vec<(String, String, String)> = json_lines(&output)
        .iter()
        .filter(|line| line["event"] == "tool")
        .map(|line| {
            (
                line["name"].as_str().unwrap().to_owned(),
                line["server"].as_str().unwrap().to_owned(),
                line["server_name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("files__echo", "files", "echo"),
        ("git__echo", "git", "echo"),
        ("log", "git", "log"),
        ("read_file", "files", "read/file"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(tools, expected, "{text}");

    let human = run_async(&["--config", config.as_str(), "--list-tools"]).await;
    let human = String::from_utf8_lossy(&human.stdout).into_owned();
    assert!(human.contains("tool files__echo (files: echo)"), "{human}");
    assert!(human.contains("tool log (git)"), "{human}");
}

/// Issue 67, items 1 and 6: `--prefix` (or the file's top-level
/// `"prefix"`) picks how names are prefixed, an entry's `"prefix"` its
/// own prefix; under `never` the shared name is refused naming both
/// servers; `--search-tools` prints the best matches, best first.
#[tokio::test]
async fn prefix_modes_and_search_tools_from_the_command() {
    let files = ScriptServer::start(two_tools("read_file")).await;
    let git = ScriptServer::start(two_tools("log")).await;
    let config = write_config(&format!(
        r#"{{ "prefix": "always", "mcpServers": {{ "files": {{ "url": "{}", "prefix": "fs" }},
            "git": {{ "url": "{}", "tools": {{ "exclude": ["lo*"] }} }} }} }}"#,
        files.url(),
        git.url()
    ));
    async fn names(config: &str, extra: &[&str]) -> (Vec<String>, Vec<serde_json::Value>) {
        let mut args = vec!["--config", config, "--list-tools", "--json"];
        args.extend_from_slice(extra);
        let output = run_async(&args).await;
        let lines = json_lines(&output);
        let tools: Vec<String> = (lines.iter())
            .filter(|line| line["event"] == "tool")
            .map(|line| line["name"].as_str().unwrap().to_owned())
            .collect();
        let left_out: Vec<serde_json::Value> = (lines.iter())
            .filter(|line| line["event"] == "left_out")
            .cloned()
            .collect();
        (tools, left_out)
    }
    let (always, _) = names(config.as_str(), &[]).await;
    // A pattern that matches nothing is a warning line, not a failure.
    let typo = write_config(&format!(
        r#"{{ "mcpServers": {{ "files": {{ "url": "{}", "tools": {{ "include": ["raed_*", "echo"] }} }} }} }}"#,
        files.url()
    ));
    let output = run_async(&["--config", typo.as_str(), "--json"]).await;
    assert_eq!(output.status.code(), Some(0));
    let warned: Vec<serde_json::Value> = (json_lines(&output).into_iter())
        .filter(|line| line["event"] == "unmatched_pattern")
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0]["pattern"], "raed_*");
    assert_eq!(warned[0]["name"], "files");
    assert_eq!(always, ["fs__echo", "fs__read_file", "git__echo"]);
    let (conditional, _) = names(config.as_str(), &["--prefix", "conditional"]).await;
    assert_eq!(conditional, ["fs__echo", "git__echo", "read_file"]);
    let (never, left_out) = names(config.as_str(), &["--prefix", "never"]).await;
    assert_eq!(never, ["read_file"]);
    assert_eq!(left_out.len(), 2, "{left_out:?}");
    assert!(
        left_out.iter().all(|l| l["reason"] == "collision"),
        "{left_out:?}"
    );
    let with: Vec<&str> = left_out
        .iter()
        .map(|l| l["with"][0].as_str().unwrap())
        .collect();
    assert_eq!(with, ["git", "files"]);

    let output = run_async(&[
        "--config",
        config.as_str(),
        "--search-tools",
        "read a file",
        "--limit",
        "1",
        "--json",
    ])
    .await;
    let hits: Vec<serde_json::Value> = (json_lines(&output).into_iter())
        .filter(|line| line["event"] == "search")
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["name"], "fs__read_file");
    assert_eq!(hits[0]["server"], "files");
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    let human = run_async(&["--config", config.as_str(), "--search-tools", "echo"]).await;
    let human = String::from_utf8_lossy(&human.stdout).into_owned();
    assert!(human.contains("tool fs__echo (files) "), "{human}");
}

/// Issue 45, item 1: each host's tool lists (Gemini CLI's `excludeTools`,
/// TBXark's `toolFilter`) narrow the catalogue, and Codex's
/// `tool_timeout_sec` bounds a call on that server alone.
#[tokio::test]
async fn an_entrys_tool_lists_and_tool_timeout_apply_to_its_server() {
    let files = ScriptServer::start(two_tools("read/file")).await;
    let git = ScriptServer::start(|request: &Recorded| match request.rpc_method() {
        "tools/call" => Script::Stall,
        _ => two_tools("log")(request),
    })
    .await;
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{
            "files": {{ "url": "{}", "excludeTools": ["echo"] }},
            "git": {{ "url": "{}", "toolFilter": {{ "mode": "allow", "list": ["l?g"] }},
                      "tool_timeout_sec": 0.5 }} }} }}"#,
        files.url(),
        git.url()
    ));
    let output = run_async(&["--config", config.as_str(), "--list-tools", "--json"]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{text}");
    let mut tools: Vec<String> = json_lines(&output)
        .iter()
        .filter(|line| line["event"] == "tool")
        .map(|line| line["name"].as_str().unwrap().to_owned())
        .collect();
    tools.sort();
    assert_eq!(tools, ["log", "read_file"], "{text}");

    // The command's own request limit is 30 s; the entry's 0.5 s ends it.
    let started = Instant::now();
    let output = run_async(&[
        "--config",
        config.as_str(),
        "--json",
        "--request-timeout",
        "30s",
        "--call-tool",
        "log",
    ])
    .await;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{text}");
    let call = json_lines(&output)
        .into_iter()
        .find(|l| l["event"] == "call")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(call["ok"], false, "{call}");
    assert_eq!(call["failure"]["kind"], "timeout", "{call}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// Issue 45, item 1: `"required": true` on a server that cannot start
/// fails the run's start: it is named, and no call is made anywhere.
#[tokio::test]
async fn a_required_server_that_cannot_start_stops_the_run() {
    let up = ScriptServer::start(two_tools("log")).await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", listener.local_addr().unwrap())
    };
    for required in [true, false] {
        let config = write_config(&format!(
            r#"{{ "mcpServers": {{ "up": {{ "url": "{}" }},
                "gone": {{ "url": "{closed}", "required": {required} }} }} }}"#,
            up.url()
        ));
        let args = ["--config", config.as_str(), "--json", "--call-tool", "log"];
        let output = run_async(&args).await;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert_eq!(output.status.code(), Some(1), "{text}");
        let named = json_lines(&output)
            .into_iter()
            .find(|l| l["event"] == "required");
        if required {
            assert_eq!(named.unwrap()["name"], "gone", "{text}");
            assert_eq!(up.count("tools/call"), 0, "{text}");
        } else {
            assert!(named.is_none(), "{text}");
            assert_eq!(up.count("tools/call"), 1, "{text}");
        }
    }
}

/// Issue 45, item 2: `--check` reads, validates and expands the file,
/// starts and connects nothing, shows each launch with no secret in it and
/// each refused entry with its line and column; exit 1 when any is refused
/// (issue 63, item 24: distinct from a usage error's 2).
#[tokio::test]
async fn check_shows_each_launch_masked_and_each_mistake_located() {
    let dir = tempfile_path::Path::new("", "d");
    let touched = format!("{}.touched", dir.as_str());
    let text = format!(
        r#"{{
  "mcpServers": {{
    "files": {{ "command": "touch", "args": ["{touched}"], "env": {{ "KEY": "{SECRET}" }} }},
    "api": {{ "url": "http://127.0.0.1:1/mcp?key={SECRET}", "headers": {{ "X-Key": "{SECRET}" }} }},
    "broken": {{ "command": "srv", "args": ["${{env:MCP_CONNECT_NO_SUCH_VAR}}"] }}
  }}
}}"#
    );
    let config = write_config(&text);
    let output = run_async(&["--config", config.as_str(), "--check", "--json"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    assert!(
        !std::path::Path::new(&touched).exists(),
        "nothing is started"
    );
    let lines = json_lines(&output);
    let of = |name: &str| lines.iter().find(|l| l["name"] == name).unwrap().clone();
    assert_eq!(
        of("files")["launch"],
        format!("stdio: touch {touched}; env KEY")
    );
    assert_eq!(
        of("api")["launch"],
        "http: http://127.0.0.1:1/mcp?key=***; headers x-key"
    );
    let broken = of("broken");
    assert_eq!(broken["outcome"], "invalid");
    assert_eq!(
        (broken["line"].as_u64(), broken["column"].as_u64()),
        (Some(5), Some(5))
    );
    assert!(broken["error"]
        .as_str()
        .unwrap()
        .contains("MCP_CONNECT_NO_SUCH_VAR"));

    // Without the broken entry: exit 0, and still nothing started.
    let good = write_config(&text.replace(
        r#",
    "broken": { "command": "srv", "args": ["${env:MCP_CONNECT_NO_SUCH_VAR}"] }"#,
        "",
    ));
    let output = run_async(&["--config", good.as_str(), "--check"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("2 servers checked, 0 not usable"),
        "{stdout}"
    );
    assert!(
        !std::path::Path::new(&touched).exists(),
        "nothing is started"
    );
}

/// Issue 45, item 1: on a terminal the command asks for each
/// `${input:ID}` the file declares (its description as the prompt), a
/// `password` input without echo, and reads the file with the answers.
/// Issue 63, item 9: every input an entry needs is asked at once (the
/// entry was refused for its first missing one, and the second was never
/// asked). Runs the command under a pseudo-terminal made by Python's `pty`.
#[test]
fn inputs_are_asked_on_a_terminal_and_passwords_not_echoed() {
    let config = write_config(
        r#"{
  "inputs": [ { "type": "promptString", "id": "key", "description": "API key", "password": true },
              { "type": "promptString", "id": "region", "description": "Region" } ],
  "servers": {
    "b": { "url": "http://127.0.0.1:1/${input:region}/mcp", "headers": { "X-Key": "${input:key}" } }
  }
}"#,
    );
    let script = r#"
import os, pty, sys
binary, path = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(binary, [binary, "--config", path, "--check"])
out = b""
def read_until(marker):
    global out
    while marker not in out:
        chunk = os.read(fd, 1024)
        if not chunk:
            raise SystemExit("ended before " + marker.decode() + ": " + out.decode())
        out += chunk
read_until(b"Region: ")
os.write(fd, b"eu\n")
read_until(b"API key: ")
os.write(fd, b"pw-canary\n")
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let output = std::process::Command::new("python3")
        .args([
            "-c",
            script,
            env!("CARGO_BIN_EXE_mcp-connect"),
            config.as_str(),
        ])
        .output()
        .expect("python3 runs (CI installs it)");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{text}{stderr}");
    assert!(
        !text.contains("pw-canary"),
        "a password echoed or shown: {text}"
    );
    assert!(
        text.contains("b: http: http://127.0.0.1:1/${input:region}/mcp; headers x-key"),
        "{text}"
    );
    assert!(text.contains("1 servers checked, 0 not usable"), "{text}");
}

/// Issue 45, item 3: `--server-json FILE` connects to what a registry
/// `server.json` describes: here its package's runtime is not on the PATH,
/// so its remote, with the remote's own transport and headers.
#[tokio::test]
async fn a_server_json_with_no_runtime_here_is_reached_by_its_remote() {
    let server = ScriptServer::start(two_tools("log")).await;
    let described = serde_json::json!({ "name": "io.github.acme/files", "version": "1.0.0",
        "description": "Files",
        "packages": [ { "registryType": "nuget", "identifier": "Acme.Files",
            "version": "1.0.0", "transport": { "type": "stdio" } } ],
        "remotes": [ { "type": "streamable-http", "url": server.url(),
            "headers": [ { "name": "X-Tenant", "value": "acme" } ] } ] });
    assert_published_server_json(&described);
    let described = tempfile_path::Path::new(&described.to_string(), "json");
    let output = run_async(&["--server-json", described.as_str(), "--json"]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{text}");
    let initialize = server
        .recorded()
        .into_iter()
        .find(|request| request.rpc_method() == "initialize")
        .unwrap_or_else(|| panic!("no initialize: {text}"));
    assert_eq!(initialize.header("x-tenant"), Some("acme"));

    // Nothing usable: a usage error naming the runtimes looked for.
    let nothing = serde_json::json!({ "name": "io.github.acme/files", "version": "1.0.0",
        "description": "Files", "packages": [ { "registryType": "nuget", "identifier": "X",
            "version": "1.0.0", "transport": { "type": "stdio" } } ] });
    assert_published_server_json(&nothing);
    let nothing = tempfile_path::Path::new(&nothing.to_string(), "json");
    let output = run_async(&["--server-json", nothing.as_str()]).await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("runtimes looked for: dnx"), "{stderr}");
}

/// Issue 45, item 3: `--registry-server NAME@VERSION` fetches the
/// server.json from the registry's API (`--registry`, here a loopback one
/// that is also the server) and connects to what it describes; a name the
/// registry does not have is a usage error with its status.
#[tokio::test]
async fn a_registry_server_is_fetched_and_reached() {
    let own = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let url = own.clone();
    let server = ScriptServer::start(move |request: &Recorded| {
        if request.method != http::Method::GET || !request.path.starts_with("/v0.1/") {
            return two_tools("log")(request);
        }
        if request.path != "/v0.1/servers/io.github.acme%2Ffiles/versions/1.0.0" {
            return Script::Status(404);
        }
        let remote = serde_json::json!({ "type": "streamable-http", "url": url.get().unwrap() });
        let answer = serde_json::json!({ "server": { "name": "io.github.acme/files",
            "version": "1.0.0", "description": "Files", "remotes": [remote] }, "_meta": {} });
        assert_published_server_json(&answer);
        Script::Json(200, answer)
    })
    .await;
    own.set(server.url()).unwrap();
    let base = server.url().trim_end_matches("/mcp").to_owned();
    let output = run_async(&[
        "--registry-server",
        "io.github.acme/files@1.0.0",
        "--registry",
        &base,
        "--json",
    ])
    .await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{text}{stderr}");
    assert_eq!(server.count("initialize"), 1, "{text}");

    let output = run_async(&[
        "--registry-server",
        "io.github.acme/other@1",
        "--registry",
        &base,
    ])
    .await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("HTTP 404"), "{stderr}");

    // No version: refused before asking, unless the latest is allowed.
    let asked = server.recorded().len();
    let output = run_async(&[
        "--registry-server",
        "io.github.acme/files",
        "--registry",
        &base,
    ])
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("NAME@VERSION"));
    assert_eq!(server.recorded().len(), asked, "nothing asked");
    let output = run_async(&[
        "--registry-server",
        "io.github.acme/files",
        "--allow-unpinned",
        "--registry",
        &base,
    ])
    .await;
    assert_eq!(output.status.code(), Some(2), "latest is not in this stub");
    assert!(server
        .recorded()
        .iter()
        .any(|r| r.path == "/v0.1/servers/io.github.acme%2Ffiles/versions/latest"));
}

/// Issue 45, item 3: a config entry naming a registry server is fetched
/// pinned from `--registry` and checked as its package's launch; a secret
/// variable it needs comes from the environment and is never printed; one
/// the environment lacks refuses the entry naming it (no terminal to ask
/// on); an unpinned entry is refused without asking the registry.
#[tokio::test]
async fn check_shows_a_registry_entrys_launch_with_its_secret_masked() {
    let registry = ScriptServer::start(|request: &Recorded| {
        if request.path != "/v0.1/servers/io.github.acme%2Ffiles/versions/1.2.0" {
            return Script::Status(404);
        }
        let server = serde_json::json!({ "name": "io.github.acme/files", "version": "1.2.0",
            "description": "Files",
            "packages": [ { "registryType": "npm", "identifier": "@acme/files", "version": "1.2.0",
                "transport": { "type": "stdio" },
                "environmentVariables": [ { "name": "FILES_TOKEN", "isRequired": true,
                                            "isSecret": true } ] } ] });
        let answer = serde_json::json!({ "server": server, "_meta": {} });
        assert_published_server_json(&answer);
        Script::Json(200, answer)
    })
    .await;
    let base = registry.url().trim_end_matches("/mcp").to_owned();
    let config = write_config(
        r#"{ "mcpServers": {
  "files": { "registry": "io.github.acme/files", "version": "1.2.0",
             "env": { "FILES_TOKEN": "${env:FILES_TOKEN}" } },
  "loose": { "registry": "io.github.acme/files" } } }"#,
    );
    let path = config.as_str().to_owned();
    let check = move |token: Option<&str>| {
        let mut command = crate::support::cli::command(&[
            "--config",
            &path,
            "--check",
            "--json",
            "--registry",
            &base,
        ]);
        match token {
            Some(token) => command.env("FILES_TOKEN", token),
            None => command.env_remove("FILES_TOKEN"),
        };
        crate::support::cli::run_command(command)
    };
    let first = check.clone();
    let output = tokio::task::spawn_blocking(move || first(Some(SECRET)))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(1),
        "the unpinned entry: {stdout}"
    );
    assert!(!stdout.contains(SECRET), "{stdout}");
    let lines = json_lines(&output);
    let of = |name: &str| lines.iter().find(|l| l["name"] == name).unwrap().clone();
    assert_eq!(
        of("files")["launch"],
        "stdio: npx -y -- @acme/files@1.2.0; env FILES_TOKEN"
    );
    assert!(
        of("loose")["error"]
            .as_str()
            .unwrap()
            .contains("not pinned"),
        "{stdout}"
    );
    let asked: Vec<_> = registry.recorded().into_iter().map(|r| r.path).collect();
    assert_eq!(
        asked,
        ["/v0.1/servers/io.github.acme%2Ffiles/versions/1.2.0"]
    );

    let output = tokio::task::spawn_blocking(move || check(None))
        .await
        .unwrap();
    let lines = json_lines(&output);
    let files = lines.iter().find(|l| l["name"] == "files").unwrap();
    assert!(
        files["error"].as_str().unwrap().contains("FILES_TOKEN"),
        "{files}"
    );
}

/// `--config FILE --json` at the 2025-11-25 pin within `deadline`.
async fn run_config(config: &str, deadline: &str) -> std::process::Output {
    run_async(&[
        "--config",
        config,
        "--deadline",
        deadline,
        "--pin",
        "2025-11-25",
        "--json",
    ])
    .await
}

/// A legacy server whose `tools/list` never answers, or whose pages never
/// end (a new cursor each page, a little slowly).
fn listing_never_ends(stall: bool) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request: &Recorded| match request.rpc_method() {
        "tools/list" if stall => Script::Stall,
        "tools/list" => {
            let cursor = request.body["params"]["cursor"].as_str().unwrap_or("0");
            let next = cursor.parse::<u64>().unwrap_or(0) + 1;
            Script::Delayed(
                Duration::from_millis(20),
                Box::new(Script::Json(
                    200,
                    result(
                        request,
                        serde_json::json!({ "tools": [], "nextCursor": next.to_string() }),
                    ),
                )),
            )
        }
        _ => legacy(request),
    }
}

/// Issue 40, item 6: a member's listing is bounded by the run's deadline
/// (a stalled page used to hold the run for its 60 s request timeout, and
/// an endless pagination for 1,000 pages), and a listing that did not
/// complete is that member's failure, never "established, 0 tools".
#[tokio::test]
async fn a_listing_that_never_ends_is_bounded_by_the_deadline_and_fails() {
    let healthy = ScriptServer::start(one_tool).await;
    let stalled = ScriptServer::start(listing_never_ends(true)).await;
    let endless = ScriptServer::start(listing_never_ends(false)).await;
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{
            "healthy": {{ "url": "{}" }},
            "stalled": {{ "url": "{}" }},
            "endless": {{ "url": "{}" }}
        }} }}"#,
        healthy.url(),
        stalled.url(),
        endless.url()
    ));
    let started = Instant::now();
    let output = run_config(config.as_str(), "1500ms").await;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(took < Duration::from_secs(6), "took {took:?}: {text}");
    assert_eq!(output.status.code(), Some(1), "{text}");
    let lines = json_lines(&output);
    let of = |name: &str| {
        lines
            .iter()
            .find(|line| line["name"] == name)
            .unwrap_or_else(|| panic!("no line for {name}: {text}"))
    };
    assert_eq!(of("healthy")["outcome"], "established", "{text}");
    for name in ["stalled", "endless"] {
        assert_eq!(of(name)["outcome"], "failed", "{name}: {text}");
        assert_eq!(of(name)["failure"]["kind"], "timeout", "{name}: {text}");
    }
    let summary = lines.last().unwrap();
    assert_eq!(summary["established"], 1, "{text}");
    assert!(summary["signal"].is_null());
}

/// Issue 40, item 6: the first SIGINT or SIGTERM ends a `--config` run
/// at once (it used to be ignored while a listing stalled), with the
/// signal in the summary and exit 130 / 143 as for a single target.
#[tokio::test(flavor = "multi_thread")]
async fn the_first_signal_ends_a_config_run() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let stalled = ScriptServer::start(listing_never_ends(true)).await;
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{ "stalled": {{ "url": "{}" }} }} }}"#,
        stalled.url()
    ));
    for (signal, code, name) in [
        (Signal::SIGINT, 130, "SIGINT"),
        (Signal::SIGTERM, 143, "SIGTERM"),
    ] {
        let listed = stalled.count("tools/list");
        let child = crate::support::cli::command(&[
            "--config",
            config.as_str(),
            "--deadline",
            "60s",
            "--pin",
            "2025-11-25",
            "--json",
        ])
        .spawn()
        .unwrap();
        crate::support::watchdog(Duration::from_secs(20), async {
            while stalled.count("tools/list") == listed {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        let signalled = Instant::now();
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let output = tokio::task::spawn_blocking(move || {
            crate::support::cli::finish(child, Duration::from_secs(30))
        })
        .await
        .unwrap();
        assert!(signalled.elapsed() < Duration::from_secs(5));
        assert_eq!(output.status.code(), Some(code), "{output:?}");
        let lines = json_lines(&output);
        let summary = lines.last().unwrap();
        assert_eq!(summary["signal"], name, "{lines:?}");
        let member = lines.iter().find(|l| l["name"] == "stalled").unwrap();
        assert_eq!(member["failure"]["kind"], "cancelled", "{lines:?}");
    }
}

/// Issue 40, item 10: `--config` with thousands of servers costs one look
/// per health change, not a rescan of every server per change (10,000
/// servers took 180 s, where the library settles them in under a second).
/// Measured alone (CI runs it by itself): 3,000 servers took 11.9 s on the
/// old loop and 6.1 s on this one on a two-core machine.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a timing at scale: CI runs it on its own"]
async fn thousands_of_servers_settle_in_seconds() {
    const SERVERS: usize = 3_000;
    let server = ScriptServer::start(one_tool).await;
    let entries: Vec<String> = (0..SERVERS)
        .map(|i| format!(r#""s{i:05}": {{ "url": "{}?i={i}" }}"#, server.url()))
        .collect();
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{ {} }} }}"#,
        entries.join(",")
    ));
    let started = Instant::now();
    let output = run_config(config.as_str(), "50s").await;
    let took = started.elapsed();
    let lines = json_lines(&output);
    let summary = lines.last().unwrap();
    assert_eq!(summary["established"], SERVERS, "{summary}");
    eprintln!("{SERVERS} servers in {took:?}");
    assert!(
        took < Duration::from_secs(10),
        "{SERVERS} servers took {took:?}"
    );
}

/// Issue 41, item 8: `--config FILE --call-tool NAME` routes by catalogue
/// name (the names `--list-tools` prints), and `--server S --call-tool T`
/// by that server's own tool name; the server that answered is the one
/// meant.
#[tokio::test]
async fn call_tool_routes_by_catalogue_name_or_by_server_and_tool() {
    let files = ScriptServer::start(two_tools("read/file")).await;
    let git = ScriptServer::start(two_tools("log")).await;
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{ "files": {{ "url": "{}" }}, "git": {{ "url": "{}" }} }} }}"#,
        files.url(),
        git.url()
    ));
    let call = |args: &[&str]| {
        let mut all = vec!["--config", config.as_str(), "--json"];
        all.extend_from_slice(args);
        let all: Vec<String> = all.iter().map(|s| (*s).to_owned()).collect();
        async move {
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            run_async(&all).await
        }
    };
    let output = call(&["--call-tool", "git__echo"]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{text}");
    let line = json_lines(&output)
        .into_iter()
        .find(|l| l["event"] == "call")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(line["ok"], true, "{line}");
    assert_eq!((files.count("tools/call"), git.count("tools/call")), (0, 1));

    let output = call(&["--server", "files", "--call-tool", "read/file"]).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!((files.count("tools/call"), git.count("tools/call")), (1, 1));

    // A name the catalogue does not have: the call fails, exit 1. (Not
    // `echo`: that bare name is in the catalogue until the second server
    // lists its own `echo`, and a call goes as soon as its server is
    // ready.)
    let output = call(&["--call-tool", "missing"]).await;
    assert_eq!(output.status.code(), Some(1));
    let line = json_lines(&output)
        .into_iter()
        .find(|l| l["event"] == "call")
        .unwrap();
    assert_eq!(line["ok"], false, "{line}");
}

/// Issue 41, item 8: one of the command's own options written after `--`
/// goes to the server's command; the command says so on stderr.
#[tokio::test]
async fn own_options_after_dash_dash_are_warned_about() {
    // The server's command here is `true`: what matters is what the
    // command says about the arguments it hands on.
    let output = run_async(&["--json", "--", "true", "--call-tool", "add"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        stderr.contains("warning: --call-tool after -- goes to the server's command"),
        "{stderr}"
    );
    // An option that is not the command's is no warning.
    let output = run_async(&["--json", "--", "true", "--spawn-log", "/dev/null"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// A legacy server listing one tool of its own name.
fn tool_named(tool: &'static str) -> impl Fn(&Recorded) -> Script {
    move |request: &Recorded| match request.rpc_method() {
        "tools/list" => Script::Json(
            200,
            result(
                request,
                serde_json::json!({ "tools": [{ "name": tool, "inputSchema": { "type": "object" } }] }),
            ),
        ),
        _ => legacy(request),
    }
}

/// Issue 44, item 5: watch mode with `--config` reloads the file on SIGHUP
/// as a difference: one server added, one removed, one restarted because
/// its entry changed, and the one being called left on its session. The
/// line names servers only (the changed entry's header value never shows).
#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_file_and_touches_only_what_changed() {
    reload_touches_only_what_changed(false).await;
}

/// `--watch-config`: the same reload when the file is replaced (written
/// beside it and renamed over it, as editors do), with no signal.
#[tokio::test(flavor = "multi_thread")]
async fn a_changed_file_is_reloaded_with_watch_config() {
    reload_touches_only_what_changed(true).await;
}

async fn reload_touches_only_what_changed(watch_config: bool) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;

    let (a, b, c, d) = (
        ScriptServer::start(tool_named("ta")).await,
        ScriptServer::start(tool_named("tb")).await,
        ScriptServer::start(tool_named("tc")).await,
        ScriptServer::start(tool_named("td")).await,
    );
    let entry = |server: &ScriptServer, key: &str| {
        format!(
            r#"{{ "url": "{}", "headers": {{ "X-Key": "{key}" }} }}"#,
            server.url()
        )
    };
    let config = write_config(&format!(
        r#"{{ "mcpServers": {{ "a": {}, "b": {}, "c": {} }} }}"#,
        entry(&a, "k"),
        entry(&b, "k"),
        entry(&c, "k")
    ));
    let mut args = vec![
        "--json",
        "--config",
        config.as_str(),
        "--call-tool",
        "ta",
        "--repeat",
        "200",
        "--interval",
        "50ms",
    ];
    if watch_config {
        args.push("--watch-config");
    }
    let child = crate::support::cli::command(&args).spawn().unwrap();
    let until = |done: &dyn Fn() -> bool| {
        let started = Instant::now();
        while !done() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never happened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    tokio::task::block_in_place(|| until(&|| a.count("tools/call") >= 1));
    // `d` joins as a registry entry (a local server.json): a reload reads
    // what the file names, the registry's documents too.
    let d_json = serde_json::json!({ "name": "io.github.acme/d", "version": "1.0.0",
        "description": "D", "remotes": [ { "type": "streamable-http", "url": d.url() } ] });
    assert_published_server_json(&d_json);
    let d_file = tempfile_path::Path::new(&d_json.to_string(), "json");
    let replacement = format!("{}.new", config.as_str());
    std::fs::write(
        &replacement,
        format!(
            r#"{{ "mcpServers": {{ "a": {}, "c": {}, "d": {{ "registry": "{}" }} }} }}"#,
            entry(&a, "k"),
            entry(&c, SECRET),
            d_file.as_str()
        ),
    )
    .unwrap();
    std::fs::rename(&replacement, config.as_str()).unwrap();
    let pid = Pid::from_raw(child.id() as i32);
    if !watch_config {
        kill(pid, Signal::SIGHUP).unwrap();
    }
    tokio::task::block_in_place(|| {
        until(&|| d.count("tools/list") >= 1 && c.count("tools/list") >= 2)
    });
    let calls_before = a.count("tools/call");
    tokio::task::block_in_place(|| until(&|| a.count("tools/call") >= calls_before + 2));
    kill(pid, Signal::SIGINT).unwrap();
    let output = tokio::task::block_in_place(|| {
        crate::support::cli::finish(child, crate::support::cli::COMMAND_LIMIT)
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains(SECRET), "{stdout}");
    let lines = json_lines(&output);
    // Issue 63, item 22: each call line numbers its call (all said 1).
    let numbers: Vec<u64> = (lines.iter())
        .filter(|l| l["event"] == "call")
        .map(|l| l["n"].as_u64().unwrap())
        .collect();
    assert!(numbers.len() >= 3, "{stdout}");
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>());
    let reload = lines
        .iter()
        .find(|l| l["event"] == "reload")
        .unwrap_or_else(|| panic!("a reload line: {stdout}"));
    assert_eq!(reload["outcome"], "applied");
    assert_eq!(reload["added"], serde_json::json!(["d"]));
    assert_eq!(reload["removed"], serde_json::json!(["b"]));
    assert_eq!(reload["restarted"], serde_json::json!(["c"]));
    assert_eq!(reload["unchanged"], 1);
    assert_eq!(a.count("initialize"), 1, "a kept its session");
    assert_eq!(c.count("initialize"), 2, "c was restarted");
}

/// Issue 44, item 1: `--catalogue-cache FILE` remembers each server's
/// listing; a server whose entry says `"lazy": true` then starts from it:
/// its tools listed, no connection made until a call is routed to it.
#[tokio::test(flavor = "multi_thread")]
async fn a_lazy_server_starts_from_the_catalogue_cache() {
    let a = ScriptServer::start(tool_named("ta")).await;
    let cache = std::env::temp_dir().join(format!("mcp-catalogue-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&cache);
    let cache_arg = cache.to_str().unwrap().to_owned();
    let config = |lazy: bool| {
        write_config(&format!(
            r#"{{ "mcpServers": {{ "a": {{ "url": "{}", "lazy": {lazy} }} }} }}"#,
            a.url()
        ))
    };
    let eager = config(false);
    let output = run_async(&[
        "--json",
        "--config",
        eager.as_str(),
        "--catalogue-cache",
        &cache_arg,
        "--list-tools",
    ])
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(a.count("initialize"), 1);

    let lazy = config(true);
    let output = run_async(&[
        "--json",
        "--config",
        lazy.as_str(),
        "--catalogue-cache",
        &cache_arg,
        "--list-tools",
    ])
    .await;
    assert!(output.status.success(), "{output:?}");
    let lines = json_lines(&output);
    let server = lines.iter().find(|l| l["event"] == "server").unwrap();
    assert_eq!(server["outcome"], "idle", "{server}");
    assert_eq!(server["tools"], 1);
    assert!(lines
        .iter()
        .any(|l| l["event"] == "tool" && l["name"] == "ta"));
    assert_eq!(a.count("initialize"), 1, "no connection made");

    let output = run_async(&[
        "--json",
        "--config",
        lazy.as_str(),
        "--catalogue-cache",
        &cache_arg,
        "--call-tool",
        "ta",
    ])
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(a.count("initialize"), 2, "connected by the call");
    assert_eq!(a.count("tools/call"), 1);
    let _ = std::fs::remove_file(&cache);
}

/// Issue 63, item 21: a one-shot call that connects a lazy server leaves
/// the listing that server gives now in the catalogue cache (the command
/// exited before it reached the file).
#[tokio::test(flavor = "multi_thread")]
async fn a_one_shot_call_to_a_lazy_server_saves_its_new_listing() {
    let tools = std::sync::Arc::new(std::sync::Mutex::new(vec!["ta"]));
    let listed = std::sync::Arc::clone(&tools);
    let a = ScriptServer::start(move |request: &Recorded| match request.rpc_method() {
        "tools/list" => {
            let tools: Vec<_> = (listed.lock().unwrap().iter())
                .map(
                    |name| serde_json::json!({ "name": name, "inputSchema": { "type": "object" } }),
                )
                .collect();
            Script::Json(200, result(request, serde_json::json!({ "tools": tools })))
        }
        _ => legacy(request),
    })
    .await;
    let cache =
        std::env::temp_dir().join(format!("mcp-catalogue-shot-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&cache);
    let cache_arg = cache.to_str().unwrap().to_owned();
    let config = |lazy: bool| {
        write_config(&format!(
            r#"{{ "mcpServers": {{ "a": {{ "url": "{}", "lazy": {lazy} }} }} }}"#,
            a.url()
        ))
    };
    let eager = config(false);
    let output = run_async(&["--config", eager.as_str(), "--catalogue-cache", &cache_arg]).await;
    assert!(output.status.success(), "{output:?}");
    assert!(!std::fs::read_to_string(&cache).unwrap().contains("tb"));
    tools.lock().unwrap().push("tb");
    let lazy = config(true);
    let args = [
        "--config",
        lazy.as_str(),
        "--catalogue-cache",
        &cache_arg,
        "--call-tool",
        "ta",
    ];
    let output = run_async(&args).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(a.count("tools/call"), 1);
    let saved = std::fs::read_to_string(&cache).unwrap();
    assert!(saved.contains("tb"), "the new listing: {saved}");
    let _ = std::fs::remove_file(&cache);
}

/// `--standard` reads the file as the draft standard mcp.json: an entry
/// without `type` is refused with its line and column (exit 2), and the
/// same file read as a host writes it passes (exit 0).
#[tokio::test]
async fn check_standard_refuses_an_entry_without_type() {
    let text = r#"{
  "mcpServers": {
    "typed": { "type": "stdio", "command": "srv" },
    "untyped": { "command": "srv" }
  }
}"#;
    let config = write_config(text);
    let output = run_async(&[
        "--config",
        config.as_str(),
        "--check",
        "--standard",
        "--json",
    ])
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let lines = json_lines(&output);
    let untyped = lines.iter().find(|l| l["name"] == "untyped").unwrap();
    assert_eq!(untyped["outcome"], "invalid");
    assert_eq!(
        (untyped["line"].as_u64(), untyped["column"].as_u64()),
        (Some(4), Some(5))
    );
    assert!(untyped["error"]
        .as_str()
        .unwrap()
        .contains("`type` is missing"));
    let output = run_async(&["--config", config.as_str(), "--check"]).await;
    assert_eq!(output.status.code(), Some(0));
}
