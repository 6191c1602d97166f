//! The command refuses what it can know is wrong before connecting (exit 2,
//! one line on stderr, nothing sent), and its lines say what happened.

mod support;

use support::cli::{json_lines, run};

fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/mcp", listener.local_addr().unwrap())
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
