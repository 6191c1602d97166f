//! The `mcp-connect` command: timeline, JSON summary, exit codes, and that
//! secrets given to it never appear in its output.

use crate::support::cli::{json_lines, run};
use serde_json::Value;

/// A refusing port, reserved for the rest of the test binary's life.
fn closed_port_url(suffix: &str) -> String {
    static PORT: std::sync::LazyLock<crate::support::ClosedPort> =
        std::sync::LazyLock::new(crate::support::ClosedPort::new);
    PORT.url(suffix)
}

#[test]
fn with_no_target_it_establishes_with_the_built_in_demo_server() {
    let output = run(&["--json"]);
    assert!(output.status.success(), "{output:?}");
    let lines = json_lines(&output);
    let summary = lines.last().unwrap();
    assert_eq!(summary["event"], "summary");
    assert_eq!(summary["outcome"], "established");
    assert_eq!(summary["era"], "modern");
    assert_eq!(summary["protocol_version"], "2026-07-28");
    assert_eq!(summary["transport"], "streamable-http");
    assert_eq!(summary["attempts"], 1);
    assert_eq!(summary["http_requests"], 1);
    assert_eq!(summary["server"]["name"], "mcp-connect-demo");
    assert!(summary["elapsed_ms"].as_f64().unwrap() > 0.0);
    let stages: Vec<&str> = lines
        .iter()
        .filter(|l| l["event"] == "stage")
        .map(|l| l["stage"].as_str().unwrap())
        .collect();
    // No `connect` stage over HTTP: the probe opens the connection.
    assert_eq!(stages, ["probe", "probe"]);
}

#[test]
fn pinned_legacy_run_lists_and_calls_tools_and_counts_every_request() {
    let output = run(&[
        "--json",
        "--pin",
        "2025-11-25",
        "--list-tools",
        "--call-tool",
        "add",
        "--args",
        r#"{"a":2,"b":40}"#,
    ]);
    assert!(output.status.success(), "{output:?}");
    let lines = json_lines(&output);
    let call = lines.iter().find(|l| l["event"] == "call").unwrap();
    assert_eq!(
        (call["ok"].as_bool(), call["text"].as_str()),
        (Some(true), Some("42"))
    );
    let tools = lines.iter().find(|l| l["event"] == "tools").unwrap();
    assert_eq!(tools["tools"], serde_json::json!(["add", "echo"]));
    let summary = lines.last().unwrap();
    assert_eq!(summary["era"], "legacy");
    assert_eq!(summary["protocol_version"], "2025-11-25");
    // initialize, initialized, tools/list, tools/call, DELETE
    assert_eq!(summary["http_requests"], 5);
}

#[test]
fn human_output_is_a_timeline_then_the_outcome() {
    let output = run(&[]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("built-in demo server"), "{text}");
    assert!(text.contains("probe"), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("established: modern era, protocol 2026-07-28"),
        "{text}"
    );
}

#[test]
fn failure_exits_1_with_a_structured_failure() {
    let output = run(&["--json", &closed_port_url("/mcp")]);
    assert_eq!(output.status.code(), Some(1));
    let summary = json_lines(&output).pop().unwrap();
    assert_eq!(summary["outcome"], "failed");
    assert_eq!(summary["failure"]["stage"], "probe");
    assert_eq!(summary["failure"]["kind"], "connect");
    assert_eq!(summary["failure"]["http_status"], Value::Null);
    assert!(summary
        .get("failure")
        .unwrap()
        .get("cancel_source")
        .is_some());
    // Issue 63, item 25: the report (every cause) as the human line has it.
    let error = summary["error"].as_str().unwrap_or_default();
    assert!(error.contains("refused"), "{summary}");
}

#[test]
fn a_short_deadline_is_reported_as_the_deadline() {
    // A listener that accepts and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let output = run(&["--json", "--deadline", "300ms", &url]);
    assert_eq!(output.status.code(), Some(1));
    let summary = json_lines(&output).pop().unwrap();
    assert_eq!(summary["failure"]["kind"], "timeout");
    assert_eq!(summary["failure"]["cancel_source"], "deadline");
    assert!(summary["elapsed_ms"].as_f64().unwrap() < 2000.0);
    drop(listener);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--deadline", "soon"][..],
        &["--args", "{}"][..],
        &["--call-tool", "x", "--args", "[1]"][..],
        &["ftp://example.com/mcp"][..],
        &["http://127.0.0.1:1/mcp", "--", "server"][..],
        &["--header", "no-colon"][..],
        &["--transport", "carrier-pigeon"][..],
    ] {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    }
}

#[test]
fn header_values_userinfo_and_query_strings_are_never_printed() {
    let url = closed_port_url("/mcp?token=query-canary");
    let url = url.replace("http://", "http://user:userinfo-canary@");
    for json in [true, false] {
        let mut args = vec![
            "--header",
            "Authorization: Bearer header-canary",
            url.as_str(),
        ];
        if json {
            args.insert(0, "--json");
        }
        let output = run(&args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        for canary in ["header-canary", "query-canary", "userinfo-canary"] {
            assert!(!all.contains(canary), "{canary} printed: {all}");
        }
    }
}

mod sse {
    use std::process::Output;

    use crate::support::cli::run_async;
    use crate::support::sse_server::{SseBehaviour, SseServer};

    fn summary(output: &Output) -> serde_json::Value {
        let text = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(text.lines().last().unwrap()).unwrap()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn sse_only_server_reports_sse_and_counts_what_the_server_saw() {
        let server = SseServer::start(SseBehaviour::default()).await;
        let output = run_async(&["--json", &server.url()]).await;
        assert!(output.status.success(), "{output:?}");
        let summary = summary(&output);
        assert_eq!(summary["transport"], "sse");
        assert_eq!(summary["era"], "legacy");
        assert_eq!(summary["http_requests"], server.log().len() as u64);
        assert_eq!(summary["http_requests"], 5);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn era_cache_file_makes_the_second_run_cheaper() {
        let server = SseServer::start(SseBehaviour::default()).await;
        let file =
            std::env::temp_dir().join(format!("mcp-connect-era-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let path = file.to_str().unwrap();
        let first = summary(&run_async(&["--json", "--era-cache", path, &server.url()]).await);
        let second = summary(&run_async(&["--json", "--era-cache", path, &server.url()]).await);
        assert_eq!(
            (
                first["http_requests"].as_u64(),
                second["http_requests"].as_u64()
            ),
            (Some(5), Some(3))
        );
        let saved = std::fs::read_to_string(&file).unwrap();
        assert!(
            saved.contains("\"sse\"") && !saved.contains("sessionId"),
            "{saved}"
        );

        std::fs::write(&file, "not a cache").unwrap();
        let output = run_async(&["--json", "--era-cache", path, &server.url()]).await;
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "not a cache",
            "a bad file is left untouched"
        );
    }
}

mod recovery {
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::support::{LegacyServer, Script, ScriptServer};

    async fn summary(args: &[&str]) -> (Option<i32>, serde_json::Value) {
        let output = crate::support::cli::run_async(args).await;
        let text = String::from_utf8_lossy(&output.stdout);
        (
            output.status.code(),
            serde_json::from_str(text.lines().last().unwrap()).unwrap(),
        )
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn recovery_default_reports_the_attempts_it_took() {
        let legacy = LegacyServer::new();
        let first = AtomicBool::new(true);
        let server = ScriptServer::start(move |r| match r.rpc_method() {
            "initialize" if first.swap(false, Ordering::SeqCst) => Script::ResetBeforeHeaders,
            _ => legacy.respond(r),
        })
        .await;
        let (code, off) = summary(&["--json", "--recovery", "off", &server.url()]).await;
        assert_eq!(
            (code, off["outcome"].as_str(), off["attempts"].as_u64()),
            (Some(1), Some("failed"), Some(1))
        );
        assert_eq!(off["failure"]["kind"], "closed");

        let legacy = LegacyServer::new();
        let first = AtomicBool::new(true);
        let server = ScriptServer::start(move |r| match r.rpc_method() {
            "initialize" if first.swap(false, Ordering::SeqCst) => Script::ResetBeforeHeaders,
            _ => legacy.respond(r),
        })
        .await;
        let (code, on) = summary(&[
            "--json",
            "--recovery",
            "default",
            "--max-attempts",
            "2",
            &server.url(),
        ])
        .await;
        assert_eq!(
            (code, on["outcome"].as_str(), on["attempts"].as_u64()),
            (Some(0), Some("established"), Some(2))
        );
    }
}

mod watch {
    use crate::support::{LegacyServer, ScriptServer};

    /// A watch run of four calls, 100 ms apart, with `extra` arguments,
    /// against a legacy server that forgets its sessions after the second
    /// call: the server, its state, the call lines and the exit code.
    async fn watch_across_expiry(
        extra: &[&str],
    ) -> (
        ScriptServer,
        LegacyServer,
        Vec<serde_json::Value>,
        Option<i32>,
    ) {
        let legacy = LegacyServer::new();
        let server = ScriptServer::start(legacy.clone().responder()).await;
        let expirer = {
            let legacy = legacy.clone();
            tokio::spawn(async move {
                while legacy.tool_calls() < 2 {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                legacy.expire_sessions();
            })
        };
        let url = server.url();
        let mut args = vec![
            "--json",
            "--pin",
            "2025-11-25",
            "--call-tool",
            "x",
            "--repeat",
            "4",
            "--interval",
            "100ms",
        ];
        args.extend_from_slice(extra);
        args.push(&url);
        let output = crate::support::cli::run_async(&args).await;
        expirer.await.unwrap();
        let calls = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|l| l["event"] == "call")
            .collect();
        (server, legacy, calls, output.status.code())
    }

    /// Issue 6: the watch mode calls through the long-lived client: one line
    /// per call, and a session that dies is rebuilt for the next call.
    #[tokio::test(flavor = "multi_thread")]
    async fn watch_mode_survives_session_expiry_and_reports_generations() {
        let (_server, legacy, calls, code) = watch_across_expiry(&[]).await;
        let shape: Vec<(bool, u64, bool)> = calls
            .iter()
            .map(|c| {
                (
                    c["ok"].as_bool().unwrap(),
                    c["generation"].as_u64().unwrap(),
                    c["reconnected"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (true, 1, false),
                (true, 1, false),
                (false, 1, false),
                (true, 2, true)
            ]
        );
        assert_eq!(calls[2]["http_status"], 404);
        assert_eq!(code, Some(1), "one call failed");
        assert_eq!(legacy.sessions_created(), 2);
    }

    /// Issue 17: with `--replay undelivered` the call refused for the
    /// expired session is sent once on the new one: every call succeeds,
    /// and the server ran each exactly once.
    #[tokio::test(flavor = "multi_thread")]
    async fn watch_mode_with_replay_succeeds_on_every_call_across_session_expiry() {
        let (server, legacy, calls, code) = watch_across_expiry(&["--replay", "undelivered"]).await;
        let shape: Vec<(bool, u64)> = calls
            .iter()
            .map(|c| {
                (
                    c["ok"].as_bool().unwrap(),
                    c["generation"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(shape, [(true, 1), (true, 1), (true, 2), (true, 2)]);
        assert_eq!(code, Some(0));
        assert_eq!(legacy.tool_calls(), 4, "each call ran once");
        assert_eq!(server.count("tools/call"), 5, "one refused, sent again");
    }
}

/// Issue 43, item 4: the command's per-server call policies in watch mode.
mod call_policies {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::support::{LegacyServer, Script, ScriptServer};

    /// The call lines and exit code of a watch run with `extra` arguments.
    async fn calls(server: &ScriptServer, extra: &[&str]) -> (Vec<serde_json::Value>, Option<i32>) {
        let url = server.url();
        let mut args = vec![
            "--json",
            "--pin",
            "2025-11-25",
            "--call-tool",
            "x",
            "--interval",
            "10ms",
        ];
        args.extend_from_slice(extra);
        args.push(&url);
        let output = crate::support::cli::run_async(&args).await;
        let calls = crate::support::cli::json_lines(&output)
            .into_iter()
            .filter(|l| l["event"] == "call")
            .collect();
        (calls, output.status.code())
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn retry_rate_limited_waits_out_a_429_once() {
        for retrying in [false, true] {
            let legacy = LegacyServer::new();
            let seen = AtomicUsize::new(0);
            let server = ScriptServer::start(move |r| match r.rpc_method() {
                "tools/call" if seen.fetch_add(1, Ordering::SeqCst) == 0 => {
                    Script::StatusWith(429, vec![("retry-after", "1".to_owned())])
                }
                _ => legacy.respond(r),
            })
            .await;
            let extra: &[&str] = if retrying {
                &["--retry-rate-limited"]
            } else {
                &[]
            };
            let (calls, code) = calls(&server, extra).await;
            assert_eq!(calls.len(), 1);
            if retrying {
                assert_eq!((calls[0]["ok"].as_bool(), code), (Some(true), Some(0)));
                assert_eq!(server.count("tools/call"), 2);
            } else {
                assert_eq!(calls[0]["failure"]["kind"], "throttled", "{calls:?}");
                assert_eq!(code, Some(1));
                assert_eq!(server.count("tools/call"), 1);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn breaker_stops_calling_a_server_that_answers_503() {
        for breaker in [false, true] {
            let legacy = LegacyServer::new();
            let server = ScriptServer::start(move |r| match r.rpc_method() {
                "tools/call" => Script::Status(503),
                _ => legacy.respond(r),
            })
            .await;
            let mut extra = vec!["--repeat", "8"];
            if breaker {
                extra.push("--breaker");
            }
            let (calls, code) = calls(&server, &extra).await;
            assert_eq!((calls.len(), code), (8, Some(1)));
            let reached = server.count("tools/call");
            if breaker {
                assert_eq!(reached, 5, "the breaker opens after 5: {calls:?}");
                assert_eq!(calls[7]["failure"]["kind"], "unavailable", "{:?}", calls[7]);
            } else {
                assert_eq!(reached, 8);
            }
        }
    }

    /// `--replica`: a primary answering 503 is left out after 3 failures
    /// and the calls go to the replica; without it, all 8 fail at the one.
    #[tokio::test(flavor = "multi_thread")]
    async fn replica_takes_the_calls_of_a_failing_primary() {
        let failing = || {
            let legacy = LegacyServer::new();
            move |r: &crate::support::Recorded| match r.rpc_method() {
                "tools/call" => Script::Status(503),
                _ => legacy.respond(r),
            }
        };
        let working = LegacyServer::new();
        for with_replica in [false, true] {
            let primary = ScriptServer::start(failing()).await;
            let working = working.clone();
            let replica =
                ScriptServer::start(move |r: &crate::support::Recorded| working.respond(r)).await;
            let replica_url = replica.url();
            let mut extra = vec!["--repeat", "8"];
            if with_replica {
                extra.extend(["--replica", &replica_url]);
            }
            let (calls, _) = calls(&primary, &extra).await;
            assert_eq!(calls.len(), 8);
            let (at_primary, at_replica) =
                (primary.count("tools/call"), replica.count("tools/call"));
            if with_replica {
                assert!(at_primary <= 3, "ejected after 3: {at_primary}");
                assert_eq!(at_primary + at_replica, 8);
                let ok = calls.iter().filter(|c| c["ok"] == true).count();
                assert_eq!(ok, at_replica, "{calls:?}");
            } else {
                assert_eq!((at_primary, at_replica), (8, 0));
            }
        }
    }

    /// `--hedge-after`: the called tool is sent a second time when the
    /// first has no answer after the delay; the first answer wins.
    #[tokio::test(flavor = "multi_thread")]
    async fn hedge_after_sends_a_stalled_call_again() {
        for hedged in [false, true] {
            let legacy = LegacyServer::new();
            let seen = AtomicUsize::new(0);
            let server = ScriptServer::start(move |r| match r.rpc_method() {
                "tools/call" if seen.fetch_add(1, Ordering::SeqCst) == 0 => Script::Delayed(
                    std::time::Duration::from_secs(3),
                    Box::new(legacy.respond(r)),
                ),
                _ => legacy.respond(r),
            })
            .await;
            let extra: &[&str] = if hedged {
                &["--hedge-after", "100ms"]
            } else {
                &[]
            };
            let started = std::time::Instant::now();
            let (calls, code) = calls(&server, extra).await;
            let took = started.elapsed();
            assert_eq!((calls.len(), code), (1, Some(0)), "{calls:?}");
            if hedged {
                assert_eq!(server.count("tools/call"), 2);
                assert!(took < std::time::Duration::from_secs(3), "{took:?}");
            } else {
                assert_eq!(server.count("tools/call"), 1);
                assert!(took >= std::time::Duration::from_secs(3), "{took:?}");
            }
        }
    }
}

/// Issue 30, item 6: `--list-skills` lists the skills' `SKILL.md` URIs
/// and reads no skill file.
#[tokio::test(flavor = "multi_thread")]
async fn list_skills_prints_the_skills_and_reads_none_of_them() {
    use crate::support::{result, LegacyServer, Script, ScriptServer};
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "skills/list" => Script::Json(
            200,
            result(
                r,
                serde_json::json!({ "skills": [{
                    "uri": "skill://pdf-processing/SKILL.md",
                    "frontmatter": { "name": "pdf-processing", "description": "d" },
                    "resources": "dynamic"
                }] }),
            ),
        ),
        _ => legacy.respond(r),
    })
    .await;
    let output = crate::support::cli::run_async(&[
        "--json",
        "--pin",
        "2025-11-25",
        "--list-skills",
        &server.url(),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let skills = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["event"] == "skills")
        .expect("a skills line");
    assert_eq!(
        skills["skills"],
        serde_json::json!(["skill://pdf-processing/SKILL.md"])
    );
    assert!(server
        .recorded()
        .iter()
        .all(|r| r.rpc_method() != "resources/read"));
}

/// The command built without TLS (`--no-default-features`): an `https://`
/// target is a usage error (exit 2), and a listener on its port sees
/// nothing, not even the connection.
#[cfg(not(feature = "rustls"))]
#[test]
fn without_tls_https_is_a_usage_error_and_nothing_is_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    let output =
        crate::support::cli::run(&["--header", "Authorization: Bearer canary-token-7f3a", &url]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty());
    std::thread::sleep(std::time::Duration::from_millis(100));
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok(_) => panic!("a connection reached the listener"),
        Err(e) => panic!("accept failed: {e}"),
    }
}
