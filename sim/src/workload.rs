//! The client host: one establishment stack over the library's pooled HTTP
//! client (recovery on, one deadline); a long-lived `McpClient` for each
//! server whose path is its own client (the opt-in replay of undelivered
//! calls on one, a breaker on another) and one `ServerGroup` of the rest,
//! with call policies on each member (`target.rs`); `CALLS` tool calls at
//! seeded moments, each recorded as it ends. Then everything is closed,
//! the group shut down and all dropped, and what is still open on the host
//! counts as leaked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_connect::client::CallPolicies;
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::client::replay::ReplayPolicy;
use mcp_connect::request::Limits;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use mcp_connect_layers::{StageEvent, StageObserver, StageOutcome};

use crate::faults::Draw;
use crate::ledger::{now, CallFailure, Outcome, Shared};
use crate::server::{Path, Spec};
use crate::target::{group_policies, Target, GROUP_RETRY};

/// One deadline over every establishment, all attempts and backoffs.
pub const DEADLINE: Duration = Duration::from_secs(4);
/// How long one request may wait for its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// Establishment attempts (recovery on).
pub const ATTEMPTS: u32 = 3;
/// Tool calls per run.
pub const CALLS: u64 = 50;
/// Calls start within this window; faults happen within it.
pub const WINDOW: Duration = Duration::from_secs(50);
/// A call that has not ended after this long is reported as hung (far
/// beyond any bound the client promises).
const WATCHDOG: Duration = Duration::from_secs(120);

/// The client host's software.
pub async fn run(seed: u64, servers: &'static [Spec], ledger: Shared) -> turmoil::Result {
    mcp_connect_layers::jitter::seed_this_thread(Some(seed));
    let open = Arc::new(AtomicUsize::new(0));
    let http = crate::net::http_client(Arc::clone(&open));
    let stack = EstablishBuilder::new(Connector::with_client(http))
        .with_recovery(RecoveryPolicy::new().with_max_attempts(ATTEMPTS))
        .with_deadline(DEADLINE)
        .build();
    let group = ServerGroup::builder().with_retry(GROUP_RETRY).build();
    let mut targets = Vec::new();
    for spec in servers {
        let request = ConnectRequest::http(&format!("http://{}/mcp", spec.name))?
            .with_name(spec.name)
            .with_pin(ProtocolVersion::V2025_11_25)
            .with_limits(Limits::default().with_request_timeout(REQUEST_TIMEOUT))
            .with_observer(Arc::new(LateStages {
                server: spec.name,
                ledger: Arc::clone(&ledger),
                began: std::sync::Mutex::default(),
            }));
        let target = match spec.path {
            Path::Group => {
                let member = Server::new(stack.clone(), request)
                    .with_policies(group_policies(REQUEST_TIMEOUT));
                group.add(member)?;
                let group = group.clone();
                let server = spec.name;
                Target::Group { group, server }
            }
            path => {
                let client = McpClient::builder(stack.clone(), request);
                Target::Client(
                    match path {
                        // Sent again only when the server provably never had it.
                        Path::Replay => client.with_replay(ReplayPolicy::Undelivered),
                        Path::Breaker => client.with_policies(CallPolicies::new().with_breaker()),
                        _ => client,
                    }
                    .build(),
                )
            }
        };
        targets.push((spec.name, target));
    }
    // Calls are routed by the catalogue: start them once every member has
    // had its first try.
    group.settled().await;
    let mut draw = Draw::new(seed, u64::from(u32::MAX));
    let mut calls = Vec::new();
    for call in 0..CALLS {
        let start = draw.millis(0, WINDOW.as_millis() as u64);
        let (server, target) = targets[draw.below(targets.len() as u64) as usize].clone();
        let ledger = Arc::clone(&ledger);
        calls.push(tokio::spawn(async move {
            tokio::time::sleep(start).await;
            let started = now();
            crate::ledger::note(&ledger, format_args!("client: c{call} to {server}"));
            let ended = tokio::time::timeout(WATCHDOG, target.call(call)).await;
            let took = now() - started;
            let error = match ended {
                Ok(Ok(())) => None,
                Ok(Err(failure)) => Some(failure),
                Err(_) => Some(CallFailure {
                    text: "hung".into(),
                    ..CallFailure::default()
                }),
            };
            let mut ledger = ledger.lock().expect("ledger");
            let line = match &error {
                None => format!("client: c{call} ok"),
                Some(f) => format!(
                    "client: c{call} failed (lost {}, status {:?}): {}",
                    f.session_lost, f.http_status, f.text
                ),
            };
            ledger.note(now(), line);
            ledger.outcomes.push(Outcome {
                call,
                server,
                took,
                ended: started + took,
                error,
            });
        }));
    }
    for call in calls {
        call.await?;
    }
    for (_, target) in &targets {
        if let Target::Client(client) = target {
            let _ = client.close().await;
        }
    }
    group.shutdown().await;
    drop((targets, group, stack));
    // Time for the dropped pool's connection tasks to end.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut ledger = ledger.lock().expect("ledger");
    let sockets = open.load(Ordering::Relaxed);
    if sockets > 0 {
        ledger
            .leaks
            .push(format!("{sockets} TCP streams still open"));
    }
    // This task is the only one left.
    let tasks = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    if tasks > 1 {
        ledger
            .leaks
            .push(format!("{} tasks still alive", tasks - 1));
    }
    ledger.workload_done = true;
    Ok(())
}

/// Records every establishment stage that starts after the establishment's
/// deadline, and every stage that ends later than the deadline and the
/// simulator's grain (G3, G9). The establishment's start is taken from its
/// first attempt's events and simulated time, not from what later attempts
/// report, so an attempt that wrongly started a clock of its own is still
/// measured from the beginning.
#[derive(Debug)]
struct LateStages {
    server: &'static str,
    ledger: Shared,
    /// When the current establishment began, in simulated time.
    began: std::sync::Mutex<Duration>,
}

impl StageObserver for LateStages {
    fn on_event(&self, event: &StageEvent) {
        let started = event.outcome == StageOutcome::Started;
        let mut began = self.began.lock().expect("began");
        if started && event.attempt == 1 {
            *began = now().saturating_sub(event.elapsed);
        }
        let elapsed = (now() - *began).max(event.elapsed);
        let late = match started {
            true => elapsed > DEADLINE,
            false => elapsed > crate::check::ESTABLISH_BOUND,
        };
        if late {
            let mut ledger = self.ledger.lock().expect("ledger");
            let late = (self.server, event.attempt, elapsed, started);
            ledger.late_stages.push(late);
        }
    }
}
