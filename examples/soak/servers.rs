//! The server side of one run: a testkit server with the plan's fault, and
//! what it saw (how often each call arrived, which sessions were ended).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Method;
use mcp_connect::request::TransportMode;
use mcp_connect::testkit::{error, LegacyServer, Recorded, Script, ScriptServer, UnknownSession};
use mcp_connect::testkit::{SseBehaviour, SseServer};
use mcp_connect::transport::StdioCommand;
use mcp_connect::ConnectRequest;

use crate::faults::{Fault, Plan, Where};

/// How long a slow handler takes: well inside every timeout.
const SLOW: Duration = Duration::from_millis(40);

/// A run's server, kept alive for the run.
pub enum Server {
    Http {
        server: ScriptServer,
        legacy: LegacyServer,
        /// How often each call (by its `n` argument) reached the server and
        /// was not refused for an unknown session (404, or 400 without id).
        received: Arc<Mutex<HashMap<u64, u32>>>,
    },
    /// Kept only to keep the server running for the run.
    Sse {
        _server: SseServer,
    },
    Stdio {
        spawn_log: PathBuf,
    },
}

impl Server {
    pub async fn start(
        plan: Plan,
        fixture: &std::path::Path,
        run: u64,
    ) -> (Server, ConnectRequest) {
        match plan.transport {
            crate::faults::Transport::Http => http(plan).await,
            crate::faults::Transport::Sse => {
                let server = SseServer::start(SseBehaviour {
                    stall_initialize: plan.place == Where::Initialize,
                    close_on_call: plan.place == Where::Call,
                    ..SseBehaviour::default()
                })
                .await;
                let request = ConnectRequest::http(&server.url())
                    .expect("a loopback URL")
                    .with_mode(TransportMode::Sse)
                    .with_pin(mcp_connect::protocol::ProtocolVersion::V2024_11_05);
                (Server::Sse { _server: server }, request)
            }
            crate::faults::Transport::Stdio => {
                let spawn_log = std::env::temp_dir()
                    .join(format!("mcp-connect-soak-{}-{run}.log", std::process::id()));
                let mut args = vec![
                    "--spawn-log".to_owned(),
                    spawn_log.display().to_string(),
                    "--faulty-spawns".to_owned(),
                    "1".to_owned(),
                ];
                let method = match plan.place {
                    Where::Initialize => Some("initialize"),
                    Where::Call => Some("tools/call"),
                    _ => None,
                };
                if let Some(method) = method {
                    let flag = match plan.fault {
                        Fault::ChildExit => "--exit-on",
                        _ => "--stall-on",
                    };
                    args.extend([flag.to_owned(), method.to_owned()]);
                }
                let command = StdioCommand::new(fixture).args(args);
                (Server::Stdio { spawn_log }, ConnectRequest::stdio(command))
            }
        }
    }

    /// The server-side count of calls that arrived more than once.
    pub fn replayed(&self) -> u64 {
        match self {
            Server::Http { received, .. } => received
                .lock()
                .expect("lock")
                .values()
                .filter(|&&count| count > 1)
                .count() as u64,
            _ => 0,
        }
    }

    /// Whether every session was disposed of exactly once: no session
    /// ended twice, the last one ended when the run closed it cleanly, and
    /// no server process is left.
    pub fn disposed_once(&self, plan: Plan, closed_cleanly: bool) -> bool {
        match self {
            Server::Http { server, legacy, .. } => {
                let mut deletes: HashMap<String, u32> = HashMap::new();
                for request in server.recorded() {
                    if request.method == Method::DELETE {
                        let id = request.header("mcp-session-id").unwrap_or_default();
                        *deletes.entry(id.to_owned()).or_default() += 1;
                    }
                }
                let last = format!("session-{}", legacy.sessions_created());
                let ended_last = legacy.sessions_created() == 0
                    || plan.place == Where::Close
                    || !closed_cleanly
                    || deletes.get(&last) == Some(&1);
                deletes.values().all(|&n| n == 1) && ended_last
            }
            Server::Sse { .. } => true,
            Server::Stdio { spawn_log } => std::fs::read_to_string(spawn_log)
                .unwrap_or_default()
                .lines()
                .filter_map(|pid| pid.trim().parse::<u32>().ok())
                .all(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Server::Stdio { spawn_log } = self {
            let _ = std::fs::remove_file(spawn_log);
        }
    }
}

async fn http(plan: Plan) -> (Server, ConnectRequest) {
    let legacy = LegacyServer::new();
    let received: Arc<Mutex<HashMap<u64, u32>>> = Arc::default();
    let fired = AtomicBool::new(false);
    let (responder, counts) = (legacy.clone(), Arc::clone(&received));
    let server = ScriptServer::start(move |r| {
        let here = matches!(
            (plan.place, &r.method, r.rpc_method()),
            (Where::Initialize, &Method::POST, "initialize")
                | (
                    Where::Initialized,
                    &Method::POST,
                    "notifications/initialized"
                )
                | (Where::Call, &Method::POST, "tools/call")
                | (Where::Close, &Method::DELETE, _)
        );
        let script = match here && !fired.swap(true, Ordering::SeqCst) {
            true => inject(plan.fault, r, &responder),
            false => responder.respond(r),
        };
        // Refused for an unknown session (404, or 400 with an error without
        // id): the call never ran, and may be sent again.
        let refused = match &script {
            Script::Json(404, _) => true,
            Script::Json(400, body) => body.get("id").is_none_or(serde_json::Value::is_null),
            _ => false,
        };
        if r.rpc_method() == "tools/call" && !refused {
            let n = r.body["params"]["arguments"]["n"].as_u64().unwrap_or(0);
            *counts.lock().expect("lock").entry(n).or_default() += 1;
        }
        script
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .expect("a loopback URL")
        .with_pin(mcp_connect::protocol::ProtocolVersion::V2025_11_25);
    (
        Server::Http {
            server,
            legacy,
            received,
        },
        request,
    )
}

fn inject(fault: Fault, request: &Recorded, legacy: &LegacyServer) -> Script {
    match fault {
        Fault::None => legacy.respond(request),
        Fault::CloseBeforeHeaders => Script::CloseBeforeHeaders,
        Fault::ResetBeforeHeaders => Script::ResetBeforeHeaders,
        Fault::ChildExit => unreachable!("a stdio fault, never drawn for HTTP"),
        Fault::BreakMidBody => {
            Script::BreakMidBody("application/json", "{\"jsonrpc\":\"2.0\",".into())
        }
        Fault::BreakMidSse => Script::SseThenBreak(vec![": working\n\n".into()]),
        Fault::Stall => Script::Stall,
        Fault::Status(status) => Script::Raw(
            status,
            "text/plain",
            bytes::Bytes::from_static(b"the proxy says no"),
        ),
        Fault::Garbage => Script::Raw(
            200,
            "application/json",
            bytes::Bytes::from_static(b"<html>not json</html>"),
        ),
        Fault::RpcError => Script::Json(200, error(request, -32603, None)),
        Fault::SessionExpiry => {
            legacy.expire_sessions();
            legacy.respond(request)
        }
        Fault::SessionRestart => {
            legacy.answer_unknown_sessions(UnknownSession::BadRequestWithoutId);
            legacy.expire_sessions();
            legacy.respond(request)
        }
        Fault::RefusedWithId => Script::Json(400, error(request, -32602, None)),
        Fault::Slow => Script::Delayed(SLOW, Box::new(legacy.respond(request))),
    }
}
