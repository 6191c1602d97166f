//! The command refuses what it can know is wrong before connecting (exit 2,
//! one line on stderr, nothing sent), and its lines say what happened.

use crate::support::cli::{json_lines, run};

/// A refusing port, reserved for the rest of the test binary's life.
fn closed_port_url() -> String {
    static PORT: std::sync::LazyLock<crate::support::ClosedPort> =
        std::sync::LazyLock::new(crate::support::ClosedPort::new);
    PORT.url("/mcp")
}

fn assert_usage_error(args: &[&str]) {
    let output = run(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "{args:?} printed a timeline");
    assert!(
        stderr.trim().lines().count() <= 4,
        "{args:?}: a short message: {stderr}"
    );
}

/// Issue 10, item 2: a port outside 1..=65535 is refused, not read as 80.
#[test]
fn ports_out_of_range_are_usage_errors() {
    for url in [
        "http://127.0.0.1:99999/mcp",
        "http://127.0.0.1:65536/mcp",
        "http://127.0.0.1:4294967376/mcp",
        "http://127.0.0.1:0/mcp",
    ] {
        assert_usage_error(&[url]);
    }
}

/// Issue 10, item 5: `--ceiling` is parsed like `--pin`.
#[test]
fn bad_pins_and_ceilings_are_usage_errors() {
    for args in [
        &["--ceiling", "garbage"][..],
        &["--ceiling", "2026"][..],
        &["--ceiling", "2024-01-01"][..],
        &["--pin", "2099-01-01"][..],
        &["--pin", "latest"][..],
    ] {
        assert_usage_error(args);
    }
    // A well-formed ceiling between known revisions only caps.
    let output = run(&["--json", "--ceiling", "2025-12-01"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let summary = json_lines(&output).pop().unwrap();
    assert_eq!(summary["protocol_version"], "2025-11-25");
}

/// Issue 10, item 6: `--` with nothing after it is not "no target".
#[test]
fn a_bare_double_dash_is_a_usage_error() {
    assert_usage_error(&["--"]);
    assert_usage_error(&["--json", "--"]);
}

/// Issue 10, item 7: mistakes known before connecting exit 2, not 1.
#[test]
fn configuration_mistakes_exit_2_before_connecting() {
    let url = closed_port_url();
    for args in [
        &["--transport", "stdio", url.as_str()][..],
        &["--transport", "sse", "--", "cat"][..],
        &["--transport", "streamable-http", "--", "cat"][..],
        &["--deadline", "0", url.as_str()][..],
        &["--probe-timeout", "0ms", url.as_str()][..],
        &["--handshake-timeout", "0s", url.as_str()][..],
        &["--header", "Content-Length: 3", url.as_str()][..],
        &["--header", "Host: example.com", url.as_str()][..],
        &["--header", "Transfer-Encoding: chunked", url.as_str()][..],
        &["--header", "Mcp-Session-Id: stolen", url.as_str()][..],
    ] {
        assert_usage_error(args);
    }
}

/// Issue 10, item 9: no `connect ok` for a connection that never existed;
/// the refused connection is the probe's failure.
#[test]
fn an_http_run_never_claims_a_connection_it_did_not_make() {
    let output = run(&[&closed_port_url()]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("connect      ok"), "{text}");
    assert!(text.contains("probe        failed: connect"), "{text}");
}

/// Issue 10, item 9: with recovery off the failure does not talk about an
/// attempt cap.
#[test]
fn with_recovery_off_the_failure_says_so() {
    let output = run(&[&closed_port_url()]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("failed: gave up after 1 attempt: recovery is off"),
        "{text}"
    );
    assert!(!text.contains("max_attempts"), "{text}");
    assert!(!text.contains("attempt(s)"), "{text}");
}

/// Issue 10, item 9: a failed call names the JSON-RPC code and its category,
/// never the server's message.
#[test]
fn a_failed_call_names_the_code_and_category_not_the_message() {
    for json in [false, true] {
        let mut args = vec!["--pin", "2025-11-25", "--call-tool", "nope"];
        if json {
            args.insert(0, "--json");
        }
        let output = run(&args);
        assert_eq!(output.status.code(), Some(1));
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            !text.contains("Unknown tool"),
            "the server's message: {text}"
        );
        if json {
            let call = json_lines(&output)
                .into_iter()
                .find(|l| l["event"] == "call")
                .unwrap();
            assert_eq!(call["failure"]["jsonrpc_code"], -32602);
            assert_eq!(call["failure"]["kind"], "rpc");
        } else {
            assert!(
                text.contains("JSON-RPC error -32602 (invalid params)"),
                "{text}"
            );
        }
    }
}

/// Issue 24, item 3.10: options a stdio server cannot use are usage
/// errors (they used to be ignored, exit 0), and nothing is spawned.
#[test]
fn options_that_do_not_fit_a_stdio_target_are_usage_errors() {
    let marker = std::env::temp_dir().join(format!("mcp-connect-spawned-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let script = format!("touch {}", marker.display());
    let stdio = ["--", "sh", "-c", script.as_str()];
    let cases: [&[&str]; 7] = [
        &["--header", "X-Api-Key: k"],
        &["--auth"],
        &[
            "--client-credentials",
            "--client-id",
            "a",
            "--client-secret-env",
            "HOME",
        ],
        &["--auth", "--scope", "read"],
        &["--auth", "--token-store", "/tmp/x.json"],
        &["--auth", "--client-id", "a"],
        &["--auth", "--client-secret-env", "HOME"],
    ];
    for options in cases {
        let args: Vec<&str> = options.iter().chain(stdio.iter()).copied().collect();
        assert_usage_error(&args);
    }
    assert!(!marker.exists(), "a stdio server was spawned");
}

/// Item 3.10: OAuth options without `--auth` or `--client-credentials`
/// would do nothing: usage errors.
#[test]
fn oauth_options_without_a_grant_are_usage_errors() {
    let url = closed_port_url();
    for option in [
        &["--scope", "read"][..],
        &["--token-store", "/tmp/t.json"][..],
        &["--client-id", "a"][..],
        &["--client-secret-env", "HOME"][..],
    ] {
        let args: Vec<&str> = option.iter().copied().chain([url.as_str()]).collect();
        assert_usage_error(&args);
    }
}

/// Item 3.13: a token store the command could not write is a usage error
/// before connecting (it used to authorize, exit 0 and keep nothing).
#[test]
fn an_unwritable_token_store_is_a_usage_error_before_connecting() {
    let url = closed_port_url();
    let dir = std::env::temp_dir().join(format!("mcp-connect-store-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("no-such-dir").join("tokens.json");
    for store in [missing.to_str().unwrap(), dir.to_str().unwrap()] {
        assert_usage_error(&["--auth", "--token-store", store, url.as_str()]);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 40, item 4: a `redis://` URL that cannot be parsed (port out of
/// range) is a usage error, never a file store in the working directory
/// named after the URL (with the password in its name and the tokens in
/// clear although sealing was asked for); the password is never printed.
#[test]
fn an_unparsable_redis_url_is_a_usage_error_and_never_a_file() {
    let url = closed_port_url();
    let dir = std::env::temp_dir().join(format!("mcp-connect-redis-url-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = "0".repeat(64);
    for (option, place) in [
        ("--token-store", "redis://:Sekrit-PW-1@127.0.0.1:99999"),
        ("--token-store", "REDISS://:Sekrit-PW-1@[::1"),
        ("--era-cache", "redis://:Sekrit-PW-1@127.0.0.1:99999"),
    ] {
        let mut command = crate::support::cli::command(&[
            "--auth",
            option,
            place,
            "--store-key-env",
            "MCP_TEST_KEY",
            url.as_str(),
        ]);
        command.current_dir(&dir).env("MCP_TEST_KEY", &key);
        let output = crate::support::cli::run_command(command);
        assert_eq!(output.status.code(), Some(2), "{option} {place}");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(printed.contains("not a usable Redis URL"), "{printed}");
        assert!(!printed.contains("Sekrit-PW-1"), "{printed}");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(left.is_empty(), "a file store was made: {left:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Item 3.12: `--request-timeout` bounds a stuck call (the fixed 60 s limit
/// had no option) and `--help` shows its default.
#[tokio::test(flavor = "multi_thread")]
async fn request_timeout_bounds_a_stuck_call() {
    let help = crate::support::cli::run_async(&["--help"]).await;
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--request-timeout"), "{help}");
    assert!(help.contains("[default: 60s]"), "{help}");
    let server = crate::support::ScriptServer::start(|r| match r.rpc_method() {
        "tools/call" => crate::support::Script::Stall,
        _ => crate::support::legacy(r),
    })
    .await;
    let url = server.url();
    let started = std::time::Instant::now();
    let output = crate::support::cli::run_async(&[
        "--json",
        "--pin",
        "2025-11-25",
        "--request-timeout",
        "300ms",
        "--call-tool",
        "x",
        &url,
    ])
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    let call = lines
        .iter()
        .find(|l| l["event"] == "error" || l["event"] == "call")
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(call["failure"]["kind"], "timeout", "{call}");
}
