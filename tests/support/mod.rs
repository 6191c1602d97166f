//! Shared test helpers: the crate's own testkit, plus a watchdog.
#![allow(dead_code, unused_imports)]

pub mod capture;
pub mod cli;
pub mod oauth;
pub mod openssl;
pub mod proxy;
pub mod redis;

use std::future::Future;
use std::time::Duration;

pub use mcp_connect::testkit::{error, result, LegacyServer, Recorded, Script, ScriptServer};

pub mod sse_server {
    pub use mcp_connect::testkit::{SseBehaviour, SseServer};
}

/// A legacy server's normal answers without session checks: initialize
/// (with the session id `session-canary-0001`), initialized, tools, DELETE.
pub fn legacy(request: &Recorded) -> Script {
    match request.rpc_method() {
        "initialize" => Script::JsonWith(
            200,
            result(
                request,
                serde_json::json!({
                    "protocolVersion": request.body["params"]["protocolVersion"],
                    "capabilities": {},
                    "serverInfo": { "name": "scripted", "version": "1" }
                }),
            ),
            vec![("mcp-session-id", "session-canary-0001".to_owned())],
        ),
        "notifications/initialized" => Script::Status(202),
        "tools/call" => Script::Json(
            200,
            result(
                request,
                serde_json::json!({ "content": [{ "type": "text", "text": "ok" }] }),
            ),
        ),
        "" if request.method == http::Method::DELETE => Script::Status(200),
        _ => Script::Json(200, error(request, -32601, None)),
    }
}

/// Runs a test body with a watchdog so a regression fails instead of hanging.
pub async fn watchdog<F: Future<Output = T>, T>(limit: Duration, body: F) -> T {
    tokio::time::timeout(limit, body)
        .await
        .expect("watchdog: the test did not finish in time")
}

/// The `notifications/cancelled` `server` recorded, waited for up to 1 s:
/// a cancellation goes out as the abandoned request ends, on its own task.
pub async fn cancellation(server: &ScriptServer) -> Option<Recorded> {
    for _ in 0..50 {
        let found =
            (server.recorded().into_iter()).find(|r| r.rpc_method() == "notifications/cancelled");
        if found.is_some() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// How many `DELETE`s `server` had, counted once `legacy` has ended a
/// session and `settle` more has passed (time for a second one to show):
/// for disposals that finish in the background, after the caller has its
/// answer.
pub async fn deletes_after_disposal(
    server: &ScriptServer,
    legacy: &LegacyServer,
    settle: Duration,
) -> usize {
    watchdog(Duration::from_secs(20), async {
        while legacy.sessions_deleted() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    tokio::time::sleep(settle).await;
    (server.recorded().iter())
        .filter(|r| r.method == http::Method::DELETE)
        .count()
}

use std::sync::{Arc, Mutex};

use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy};
use mcp_connect::layers::{StageEvent, StageObserver};
use mcp_connect::{Connector, Establish, EstablishBuilder};

/// Records every stage event.
#[derive(Debug, Default)]
pub struct Events(Mutex<Vec<StageEvent>>);

impl StageObserver for Events {
    fn on_event(&self, event: &StageEvent) {
        self.0.lock().unwrap().push(*event);
    }
}

impl Events {
    pub fn new() -> Arc<Events> {
        Arc::new(Events::default())
    }

    pub fn all(&self) -> Vec<StageEvent> {
        self.0.lock().unwrap().clone()
    }

    /// The highest attempt number seen.
    pub fn attempts(&self) -> u32 {
        self.all().iter().map(|e| e.attempt).max().unwrap_or(0)
    }
}

/// The stack with recovery on, up to `attempts`, no backoff.
pub fn recovering(attempts: u32) -> Establish {
    recovering_with(Connector::new(), attempts)
}

/// The stack over `connector` with recovery on, up to `attempts`, no backoff.
pub fn recovering_with(connector: Connector, attempts: u32) -> Establish {
    EstablishBuilder::new(connector)
        .with_recovery(
            RecoveryPolicy::new()
                .with_max_attempts(attempts)
                .with_backoff(Backoff::NONE),
        )
        .build()
}

/// The stdio fault fixture with these arguments.
pub fn fixture(args: &[&str]) -> mcp_connect::transport::StdioCommand {
    // Set in the library's test targets only (the binary is the library's).
    let path = option_env!("CARGO_BIN_EXE_mcp-connect-stdio-fixture")
        .unwrap_or_else(|| panic!("the stdio fixture is the library's own test binary"));
    mcp_connect::transport::StdioCommand::new(path).args(args)
}

/// A fresh spawn-log path for the stdio fixture.
pub fn spawn_log(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-connect-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// The pids in a spawn log.
pub fn spawned(log: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// Whether a process exists (a reaped child does not).
pub fn alive(pid: i32) -> bool {
    // A zombie (killed, not yet reaped by whoever inherited it) is dead.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false);
    !zombie && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// A loopback port that refuses connections and stays reserved while this
/// lives: a socket bound to it that never listens. (A listener bound and
/// dropped frees its port, which another test's server may then take.)
pub struct ClosedPort(socket2::Socket);

impl ClosedPort {
    pub fn new() -> ClosedPort {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("a socket");
        socket
            .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .expect("bind 127.0.0.1");
        ClosedPort(socket)
    }

    /// `http://127.0.0.1:PORT{suffix}`.
    pub fn url(&self, suffix: &str) -> String {
        let addr = self
            .0
            .local_addr()
            .expect("addr")
            .as_socket()
            .expect("inet");
        format!("http://{addr}{suffix}")
    }
}
