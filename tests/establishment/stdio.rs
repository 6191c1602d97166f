//! The stdio transport against scripted child processes: the probe, a fresh
//! process after a probe that killed the server, closure, and the close ladder.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::watchdog;
use mcp_connect::layers::{Closure, FailureKind};
use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::request::Limits;
use mcp_connect::session::SessionState;
use mcp_connect::transport::{StdioCommand, StdioTransport};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

fn fixture(mode: &str, log: Option<&PathBuf>) -> StdioCommand {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/stdio_server.py"
    );
    let mut command = StdioCommand::new("python3").args([script, mode]);
    if let Some(log) = log {
        command = command.args([log.as_os_str()]);
    }
    command
}

fn spawn_log(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-connect-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

fn pids(log: &PathBuf) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

fn alive(pid: i32) -> bool {
    // Signal 0 only checks existence; a reaped child is gone.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[tokio::test]
async fn legacy_stdio_server_is_reached_after_a_method_not_found_probe_on_the_same_process() {
    let log = spawn_log("same");
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::stdio(fixture("legacy", Some(&log)))),
    )
    .await
    .unwrap();
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(pids(&log).len(), 1, "one process for probe and initialize");
    let result = session.call_tool("anything", &json!({})).await.unwrap();
    assert_eq!(result.text(), "ok");
    session.close().await.unwrap();
    assert!(!alive(pids(&log)[0]), "closed session reaps its process");
}

#[tokio::test]
async fn server_that_exits_on_the_probe_gets_initialize_on_a_fresh_process() {
    let log = spawn_log("fresh");
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::stdio(fixture(
            "exit-on-discover",
            Some(&log),
        ))),
    )
    .await
    .unwrap();
    let spawned = pids(&log);
    assert_eq!(
        spawned.len(),
        2,
        "the probe's process died; initialize ran on a new one"
    );
    assert_ne!(spawned[0], spawned[1]);
    assert!(!alive(spawned[0]), "the first process was reaped");
    assert_eq!(session.server_info().version, spawned[1].to_string());
    session.close().await.unwrap();
}

#[tokio::test]
async fn silent_probe_over_stdio_is_legacy_after_the_probe_limit() {
    let limits = Limits::default().with_probe_timeout(Duration::from_millis(300));
    let request = ConnectRequest::stdio(fixture("silent-probe", None)).with_limits(limits);
    let started = Instant::now();
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert_eq!(session.era(), Era::Legacy);
    assert!(started.elapsed() >= Duration::from_millis(300));
    session.close().await.unwrap();
}

#[tokio::test]
async fn non_json_lines_on_stdout_are_skipped() {
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::stdio(fixture("noisy", None))),
    )
    .await
    .unwrap();
    assert_eq!(
        session.call_tool("x", &json!({})).await.unwrap().text(),
        "ok"
    );
    session.close().await.unwrap();
}

#[tokio::test]
async fn child_exit_fails_the_pending_request_at_once_and_the_session_is_terminal() {
    let log = spawn_log("exit");
    let limits = Limits::default().with_request_timeout(Duration::from_secs(30));
    let request = ConnectRequest::stdio(fixture("legacy", Some(&log))).with_limits(limits);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    let started = Instant::now();
    let error = session.call_tool("die", &json!({})).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "failed at closure, not at the request limit"
    );
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.closure),
        (FailureKind::Closed, Some(Closure::ProcessExit))
    );
    assert_eq!(session.state(), SessionState::Closed(Closure::ProcessExit));
    let again = session.call_tool("x", &json!({})).await.unwrap_err();
    assert_eq!(
        again.failure().closure,
        Some(Closure::ProcessExit),
        "later requests fail fast"
    );
    session.close().await.unwrap();
    assert!(!alive(pids(&log)[0]));
}

#[tokio::test]
async fn close_escalates_to_sigkill_for_a_server_that_ignores_eof_and_sigterm() {
    let log = spawn_log("stubborn");
    let grace = Duration::from_millis(200);
    let request = ConnectRequest::stdio(fixture("stubborn", Some(&log)))
        .with_limits(Limits::default().with_close_grace(grace));
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    let started = Instant::now();
    session.close().await.unwrap();
    let took = started.elapsed();
    assert!(
        took >= grace * 2,
        "waited after EOF and after SIGTERM: {took:?}"
    );
    assert!(
        took < grace * 2 + Duration::from_secs(2),
        "bounded: {took:?}"
    );
    assert!(!alive(pids(&log)[0]), "killed and reaped");
    session.close().await.unwrap();
}

#[tokio::test]
async fn missing_program_is_a_configuration_failure() {
    let request = ConnectRequest::stdio(StdioCommand::new("/nonexistent/mcp-server"));
    let error = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Configuration);
}

/// Issue 10, item 13: the session's transport can be reached as its
/// concrete type (the documented way to read a stdio server's pid and
/// stderr); another type is `None`, not a panic.
#[tokio::test]
async fn a_stdio_session_exposes_its_concrete_transport() {
    let log = spawn_log("downcast");
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::stdio(fixture("legacy", Some(&log)))),
    )
    .await
    .unwrap();
    let stdio = session
        .transport_as::<StdioTransport>()
        .expect("a stdio session has a StdioTransport");
    assert_eq!(stdio.pid().map(|p| p as i32), pids(&log).first().copied());
    assert!(session
        .transport_as::<mcp_connect::transport::StreamableHttp>()
        .is_none());
    session.close().await.unwrap();
}

/// Issue 24, item 2 (G16): after the server process is killed (`kill -9`),
/// the session is known dead before the next call, so `McpClient` replaces
/// it before sending anything: the call succeeds on generation 2 with
/// replay off, on a new process.
#[tokio::test]
async fn a_killed_server_is_replaced_before_the_next_call() {
    use mcp_connect::{EstablishBuilder, McpClient};
    let log = spawn_log("killed");
    let client = McpClient::builder(
        EstablishBuilder::new(Connector::new()).build(),
        ConnectRequest::stdio(fixture("legacy", Some(&log))),
    )
    .build();
    let first = watchdog(LIMIT, client.call_tool("x", &json!({})))
        .await
        .unwrap();
    assert_eq!(first.text(), "ok");
    let (session, _) = client.session().await.unwrap();
    let pid = session
        .transport_as::<StdioTransport>()
        .and_then(StdioTransport::pid)
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    watchdog(LIMIT, async {
        while session.state() == SessionState::Open {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    drop(session);
    let second = watchdog(LIMIT, client.call_tool("x", &json!({})))
        .await
        .unwrap();
    assert_eq!(second.text(), "ok");
    assert_eq!(client.generation(), 2);
    let spawned = pids(&log);
    assert_eq!(spawned.len(), 2, "one new process");
    assert!(!alive(spawned[0]));
    client.close().await.unwrap();
}

/// Issue 24, items 3.6 and 3.9: a line that is not UTF-8 is skipped like a
/// line that is not JSON (it used to end the session as a reset); a reply
/// to an id never sent is dropped; a batch reply is taken. All counted.
#[tokio::test]
async fn non_utf8_lines_stray_replies_and_batches_on_stdout() {
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::stdio(fixture("hostile-lines", None))),
    )
    .await
    .unwrap();
    for _ in 0..3 {
        assert_eq!(
            session.call_tool("x", &json!({})).await.unwrap().text(),
            "ok"
        );
    }
    assert_eq!(session.state(), SessionState::Open);
    let skipped = session.stats().skipped;
    // Two per reply (the non-UTF-8 line and the stray reply): the probe,
    // initialize and three calls.
    assert_eq!(skipped, 10, "{skipped}");
    session.close().await.unwrap();
}

/// Issue 40, item 15: a missing `cwd` is said to be the working directory
/// (it read like a missing program) and is a configuration failure,
/// started nowhere.
#[tokio::test]
async fn a_missing_working_directory_is_named_as_such() {
    let command = fixture("legacy", None).current_dir("/nonexistent/mcp-connect-cwd");
    let error = watchdog(
        Duration::from_secs(10),
        Connector::new().connect(ConnectRequest::stdio(command)),
    )
    .await
    .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Configuration);
    let mut chain = Vec::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(e) = source {
        chain.push(e.to_string());
        source = e.source();
    }
    let chain = chain.join(": ");
    assert!(chain.contains("working directory"), "{chain}");
    assert!(
        !chain.contains("could not start the server process"),
        "{chain}"
    );
}

/// Issue 65: the kernel's parent-death signal fires when the *thread* that
/// forked the child ends. A server started from a thread that then exits
/// (a blocking-pool thread, a short-lived runtime's) must live on for as
/// long as this process does, and answer the next call.
#[test]
fn a_server_started_from_a_thread_that_exits_still_answers() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    let log = spawn_log("thread-exits");
    let started = std::thread::spawn({
        let log = log.clone();
        move || {
            handle.block_on(watchdog(
                LIMIT,
                Connector::new().connect(ConnectRequest::stdio(fixture("legacy", Some(&log)))),
            ))
        }
    });
    let session = started.join().expect("the starting thread").unwrap();
    // The starting thread is gone; a parent-death signal would be on its
    // way now. Give it time to land before the call.
    std::thread::sleep(Duration::from_millis(200));
    let pid = pids(&log)[0];
    assert!(alive(pid), "the server outlives the thread that started it");
    let result = runtime
        .block_on(watchdog(LIMIT, session.call_tool("anything", &json!({}))))
        .unwrap();
    assert_eq!(result.text(), "ok");
    runtime.block_on(session.close()).unwrap();
    assert!(!alive(pid), "closing still reaps it");
}
