//! SIGINT and SIGTERM (issue 10, item 3): the first signal cancels as the
//! caller, closes what the command holds (the HTTP session's DELETE, the
//! stdio child's process group) and prints the summary, exiting 130 or 143;
//! a second signal exits at once.

use std::path::Path;
use std::process::{Child, Output};
use std::time::{Duration, Instant};

use crate::support::cli::{command, finish};
use crate::support::{alive, spawn_log, LegacyServer, ScriptServer};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn send(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Waits for a stdio child to write its pid.
fn child_pid(path: &Path) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the child never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn summary(output: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.lines().last().expect("a summary line")).unwrap()
}

/// A stdio server that ignores stdin (so closing it does not end it).
fn deaf_server(pid_path: &Path) -> String {
    format!("echo $$ > {}; exec sleep 977", pid_path.display())
}

#[test]
fn sigterm_during_establishment_stops_the_stdio_child_and_exits_143() {
    let pid_path = spawn_log("sigterm");
    let script = deaf_server(&pid_path);
    let child = command(&["--json", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    let server = child_pid(&pid_path);
    send(&child, Signal::SIGTERM);
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(143), "{output:?}");
    let summary = summary(&output);
    assert_eq!(summary["outcome"], "failed");
    assert_eq!(summary["signal"], "SIGTERM");
    assert_eq!(summary["failure"]["kind"], "cancelled");
    assert_eq!(summary["failure"]["cancel_source"], "caller");
    assert!(!alive(server), "the stdio child {server} was left behind");
}

#[test]
fn a_stdio_child_dies_with_its_parent_killed_outright() {
    // SIGKILL runs no cleanup in the command: only the kernel's parent-death
    // signal on the child ends it.
    let pid_path = spawn_log("pdeathsig");
    let script = deaf_server(&pid_path);
    let mut child = command(&["--", "sh", "-c", &script]).spawn().unwrap();
    let server = child_pid(&pid_path);
    send(&child, Signal::SIGKILL);
    child.wait().unwrap();
    let killed = Instant::now();
    while alive(server) && killed.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !alive(server),
        "the stdio child {server} outlived its parent by a second"
    );
}

/// Issue 63, item 15: a stdio server's whole tree ends with a command
/// killed outright: a helper in the server's group (npx's node), one that
/// left it (`setsid`) and the guardian itself. Only the direct child died.
#[test]
fn a_killed_command_leaves_no_process_of_the_servers_tree() {
    let pid_path = spawn_log("tree");
    let script = format!(
        "sleep 978 & group=$!; setsid sleep 979 & left=$!; \
         echo \"$$ $PPID $group $left\" > {}; exec sleep 980",
        pid_path.display()
    );
    let mut child = command(&["--", "sh", "-c", &script]).spawn().unwrap();
    let started = Instant::now();
    let pids: Vec<i32> = loop {
        let text = std::fs::read_to_string(&pid_path).unwrap_or_default();
        let pids: Vec<i32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() == 4 {
            break pids;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(pids.iter().all(|pid| alive(*pid)), "{pids:?}");
    send(&child, Signal::SIGKILL);
    child.wait().unwrap();
    let left: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|pid| !gone_within(*pid, Duration::from_secs(5)))
        .collect();
    for pid in &left {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(left.is_empty(), "left running: {left:?} of {pids:?}");
}

/// Issue 63, item 15, the same on a normal close: a helper that left the
/// server's group, which the group's SIGKILL never reached, ends too.
#[test]
fn a_closed_server_leaves_no_helper_that_left_its_group() {
    let pid_path = spawn_log("tree-close");
    let script = format!(
        "setsid sleep 981 & echo $! > {}; exec sleep 982",
        pid_path.display()
    );
    let child = command(&[
        "--probe-timeout",
        "300ms",
        "--handshake-timeout",
        "300ms",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .spawn()
    .unwrap();
    let helper = child_pid(&pid_path);
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let gone = gone_within(helper, Duration::from_secs(5));
    assert!(gone, "the helper {helper} outlived the session");
}

#[test]
fn a_second_signal_exits_at_once() {
    let pid_path = spawn_log("second");
    let script = deaf_server(&pid_path);
    let child = command(&["--", "sh", "-c", &script]).spawn().unwrap();
    let server = child_pid(&pid_path);
    send(&child, Signal::SIGINT);
    // The first signal's cleanup waits a grace period for the child.
    std::thread::sleep(Duration::from_millis(200));
    send(&child, Signal::SIGINT);
    let second = Instant::now();
    let output = finish(child, Duration::from_secs(30));
    let took = second.elapsed();
    assert_eq!(output.status.code(), Some(130), "{output:?}");
    assert!(took < Duration::from_millis(1500), "exit took {took:?}");
    assert!(
        gone_within(server, Duration::from_secs(5)),
        "the stdio child {server} was left behind"
    );
}

/// Waits for `pid` to die; whether it did within `limit`.
fn gone_within(pid: i32, limit: Duration) -> bool {
    let started = Instant::now();
    while alive(pid) {
        if started.elapsed() > limit {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Issue 24, item 3.4: two SIGTERMs at once (as coreutils `timeout` sends
/// them, to the process and its group) during watch mode against a server
/// that ignores SIGTERM: the command exits at once and the server's group
/// gets SIGKILL, so no server is left running with parent 1.
#[test]
fn a_second_signal_still_kills_a_stubborn_stdio_server() {
    let pid_path = spawn_log("stubborn-second");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/stdio_server.py"
    );
    let log = pid_path.to_str().unwrap();
    let child = command(&[
        "--repeat",
        "100",
        "--interval",
        "100ms",
        "--call-tool",
        "x",
        "--",
        "python3",
        fixture,
        "stubborn",
        log,
    ])
    .spawn()
    .unwrap();
    let server = child_pid(&pid_path);
    // Well into watch mode: established, calls running.
    std::thread::sleep(Duration::from_millis(1500));
    send(&child, Signal::SIGTERM);
    // Two at the same instant are one to the signal stream (and take the
    // first signal's ladder); apart, the second is seen as a second.
    std::thread::sleep(Duration::from_millis(100));
    send(&child, Signal::SIGTERM);
    let second = Instant::now();
    let output = finish(child, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(143), "{output:?}");
    assert!(
        second.elapsed() < Duration::from_millis(1500),
        "the second signal exits at once"
    );
    assert!(
        gone_within(server, Duration::from_secs(5)),
        "the stdio server {server} was left behind"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_in_watch_mode_ends_the_http_session_and_prints_the_summary() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let url = server.url();
    let child = command(&[
        "--json",
        "--pin",
        "2025-11-25",
        "--call-tool",
        "x",
        "--repeat",
        "1000",
        "--interval",
        "50ms",
        &url,
    ])
    .spawn()
    .unwrap();
    crate::support::watchdog(Duration::from_secs(20), async {
        while legacy.tool_calls() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    send(&child, Signal::SIGINT);
    let output = tokio::task::spawn_blocking(move || finish(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130), "{output:?}");
    let summary = summary(&output);
    assert_eq!(summary["outcome"], "established");
    assert_eq!(summary["signal"], "SIGINT");
    assert_eq!(legacy.sessions_created(), 1);
    assert_eq!(legacy.sessions_deleted(), 1, "the session got its DELETE");
}
