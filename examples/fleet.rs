//! A reconnecting fleet: many `McpClient`s in one process calling one
//! server that is killed and restarted. Prints one JSON line per
//! configuration (jitter on, jitter off; with `--replay` also the opt-in
//! replay) with the time until every client was back, the peak rate of
//! connection attempts while the server was down and when it came back,
//! and how many calls failed or reached the server twice.
//!
//! ```text
//! cargo run --release --features testkit --example fleet -- --clients 1000
//! ```
//!
//! Options: `--clients N` (1000), `--outage-ms MS` (3000), `--interval-ms MS`
//! between one client's calls (500), `--ticks` (every client calls on the
//! same tick, like a scheduled job, instead of at its own phase: the worst
//! case for a herd), `--replay` (also run with `ReplayPolicy::Undelivered`).
//!
//! Connection attempts are counted where the fleet resolves the server's
//! name: hyper's connector resolves once per TCP connect, so the count is
//! exact, and it includes the attempts a dead port refuses, which the
//! server itself could not see. Each client has the recovery layer (3
//! attempts, backoff from 100 ms) with one retry budget shared by the
//! fleet, and its own cool-down after failed reconnects; "jitter off"
//! turns the jitter off in both, nothing else.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_connect::client::replay::ReplayPolicy;
use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy};
use mcp_connect::testkit::{LegacyServer, Recorded, Script, ScriptServer};
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use serde_json::json;
use tokio::time::Instant;
use tower::retry::budget::TpsBudget;

struct Options {
    clients: u64,
    outage: Duration,
    interval: Duration,
    replay: bool,
    /// Every client calls on the same tick (a scheduled job), instead of
    /// at its own phase of the interval.
    ticks: bool,
}

fn main() {
    let options = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let mut configurations = vec![(true, false), (false, false)];
        if options.replay {
            configurations.push((true, true));
        }
        for (jitter, replay) in configurations {
            let report = fleet(&options, jitter, replay).await;
            println!("{report}");
        }
    });
}

/// What the server saw of each call, by its token.
#[derive(Default)]
struct Seen {
    calls: Mutex<std::collections::HashMap<u64, u32>>,
}

fn responder(legacy: LegacyServer, seen: Arc<Seen>) -> impl Fn(&Recorded) -> Script {
    move |r| {
        let script = legacy.respond(r);
        if r.rpc_method() == "tools/call" && !matches!(script, Script::Json(404, _)) {
            let token = r.body["params"]["arguments"]["token"].as_u64().unwrap_or(0);
            *seen.calls.lock().expect("lock").entry(token).or_default() += 1;
        }
        script
    }
}

async fn fleet(options: &Options, jitter: bool, replay: bool) -> serde_json::Value {
    let seen = Arc::new(Seen::default());
    let first = ScriptServer::start(responder(LegacyServer::new(), Arc::clone(&seen))).await;
    let addr = first.addr();
    let connects: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let connector = counting_connector(addr, Arc::clone(&connects));
    let url = format!("http://localhost:{}/mcp", addr.port());

    let backoff = |b: Backoff| if jitter { b } else { b.without_jitter() };
    let policy = RecoveryPolicy::new()
        .with_max_attempts(3)
        .with_backoff(backoff(Backoff::new(
            Duration::from_millis(100),
            Duration::from_secs(2),
        )))
        .with_budget(Arc::new(TpsBudget::new(Duration::from_secs(10), 10, 0.2)));
    let cool_down = backoff(Backoff::new(
        Duration::from_millis(100),
        Duration::from_secs(30),
    ));

    let started = Instant::now();
    let stop = tokio_util::sync::CancellationToken::new();
    let failed = Arc::new(AtomicU64::new(0));
    // Calls that started with the server back up and still failed.
    let failed_after = Arc::new(AtomicU64::new(0));
    let calls = Arc::new(AtomicU64::new(0));
    let tokens = Arc::new(AtomicU64::new(1));
    // When each client first succeeded after the restart.
    let back: Arc<Mutex<Vec<Option<Instant>>>> =
        Arc::new(Mutex::new(vec![None; options.clients as usize]));
    let restarted_at: Arc<Mutex<Option<Instant>>> = Arc::default();

    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..options.clients {
        let stack = EstablishBuilder::new(connector.clone())
            .with_recovery(policy.clone())
            .with_deadline(Duration::from_secs(5))
            .build();
        let request = ConnectRequest::http(&url)
            .expect("a loopback URL")
            .with_pin(mcp_connect::protocol::ProtocolVersion::V2025_11_25);
        let client = McpClient::builder(stack, request)
            .with_cool_down(cool_down)
            .with_replay(match replay {
                true => ReplayPolicy::Undelivered,
                false => ReplayPolicy::Never,
            })
            .build();
        let (stop, failed, failed_after, calls, tokens, back, restarted_at) = (
            stop.clone(),
            Arc::clone(&failed),
            Arc::clone(&failed_after),
            Arc::clone(&calls),
            Arc::clone(&tokens),
            Arc::clone(&back),
            Arc::clone(&restarted_at),
        );
        let interval = options.interval;
        // Spread over one interval, or all on the same tick.
        let phase = match options.ticks {
            true => Duration::ZERO,
            false => interval.mul_f64(index as f64 / options.clients as f64),
        };
        tasks.spawn(async move {
            let mut tick = tokio::time::interval_at(started + phase, interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            while !stop.is_cancelled() {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let token = tokens.fetch_add(1, Ordering::Relaxed);
                calls.fetch_add(1, Ordering::Relaxed);
                let up = restarted_at.lock().expect("lock").is_some();
                let ok = client
                    .call_tool("work", &json!({ "token": token }))
                    .await
                    .is_ok();
                if !ok {
                    failed.fetch_add(1, Ordering::Relaxed);
                    if up {
                        failed_after.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let restarted = *restarted_at.lock().expect("lock");
                if let (true, Some(at)) = (ok, restarted) {
                    let now = Instant::now();
                    let mut back = back.lock().expect("lock");
                    if back[index as usize].is_none() && now > at {
                        back[index as usize] = Some(now);
                    }
                }
            }
            let _ = client.close().await;
        });
    }

    // Everyone connected and calling; then the server dies.
    tokio::time::sleep(options.interval * 4).await;
    let killed_at = Instant::now();
    first.stop().await;
    tokio::time::sleep(options.outage).await;
    let second = ScriptServer::start_on(addr, responder(LegacyServer::new(), Arc::clone(&seen)))
        .await
        .expect("the address is free again");
    let restart = Instant::now();
    *restarted_at.lock().expect("lock") = Some(restart);

    // Wait until every client is back (or give up after a minute).
    let give_up = restart + Duration::from_secs(60);
    loop {
        let all_back = back.lock().expect("lock").iter().all(Option::is_some);
        if all_back || Instant::now() > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let recovered = back
        .lock()
        .expect("lock")
        .iter()
        .map(|at| at.map(|at| at - restart))
        .collect::<Option<Vec<_>>>()
        .map(|all| all.into_iter().max().unwrap_or_default());
    stop.cancel();
    while tasks.join_next().await.is_some() {}
    let initializes_after = second.count("initialize");
    drop(second);

    let connects = connects.lock().expect("lock").clone();
    let replayed = seen
        .calls
        .lock()
        .expect("lock")
        .values()
        .filter(|&&n| n > 1)
        .count();
    json!({
        "clients": options.clients,
        "jitter": jitter,
        "replay": replay,
        "outage_ms": options.outage.as_millis() as u64,
        "interval_ms": options.interval.as_millis() as u64,
        "recovered_ms": recovered.map(|d| d.as_millis() as u64),
        "workload": if options.ticks { "ticks" } else { "spread" },
        "peak_connects_per_s_outage": peak_per_second(&connects, killed_at, restart),
        "peak_connects_per_100ms_outage": peak_in(&connects, killed_at, restart, Duration::from_millis(100)),
        // Once the cool-downs have grown past the first seconds' burst.
        "peak_connects_per_s_outage_after_2s": peak_per_second(&connects, killed_at + Duration::from_secs(2), restart),
        "connects_per_s_by_second": per_second(&connects, killed_at, restart + Duration::from_secs(5)),
        "peak_connects_per_s_after_restart": peak_per_second(&connects, restart, restart + Duration::from_secs(10)),
        "connects_during_outage": connects.iter().filter(|&&t| t >= killed_at && t < restart).count(),
        "initializes_after_restart": initializes_after,
        "calls": calls.load(Ordering::Relaxed),
        "calls_failed": failed.load(Ordering::Relaxed),
        "calls_failed_after_restart": failed_after.load(Ordering::Relaxed),
        "calls_replayed": replayed,
        "elapsed_s": started.elapsed().as_secs(),
    })
}

/// Attempts in each whole second from `from` to `to`.
fn per_second(times: &[Instant], from: Instant, to: Instant) -> Vec<usize> {
    let seconds = (to - from).as_secs() as usize + 1;
    let mut counts = vec![0; seconds];
    for &t in times.iter().filter(|&&t| t >= from && t < to) {
        counts[(t - from).as_secs() as usize] += 1;
    }
    counts
}

/// The largest number of attempts in any one-second window inside
/// `[from, to)`, sliding in 50 ms steps.
fn peak_per_second(times: &[Instant], from: Instant, to: Instant) -> usize {
    peak_in(times, from, to, Duration::from_secs(1))
}

/// The largest number of attempts in any `window` inside `[from, to)`,
/// sliding in 50 ms steps (at 100 ms it shows lock-step bursts).
fn peak_in(times: &[Instant], from: Instant, to: Instant, window: Duration) -> usize {
    let mut peak = 0;
    let mut start = from;
    while start < to {
        let end = (start + window).min(to);
        let count = times.iter().filter(|&&t| t >= start && t < end).count();
        peak = peak.max(count);
        start += Duration::from_millis(50);
    }
    peak
}

/// The fleet's one HTTP client: `localhost` resolves to the server, and
/// each resolution (one per TCP connect) is counted.
fn counting_connector(addr: SocketAddr, connects: Arc<Mutex<Vec<Instant>>>) -> Connector {
    let resolver = tower::service_fn(move |_name| {
        connects.lock().expect("lock").push(Instant::now());
        std::future::ready(Ok::<_, std::io::Error>(std::iter::once(addr)))
    });
    Connector::with_client(HttpClient::http_only_with_resolver(resolver))
}

fn options() -> Options {
    let mut options = Options {
        clients: 1000,
        outage: Duration::from_secs(3),
        interval: Duration::from_millis(500),
        replay: false,
        ticks: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> u64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| fail(&format!("{arg} takes a number")))
        };
        match arg.as_str() {
            "--clients" => options.clients = number().max(1),
            "--outage-ms" => options.outage = Duration::from_millis(number()),
            "--interval-ms" => options.interval = Duration::from_millis(number().max(1)),
            "--replay" => options.replay = true,
            "--ticks" => options.ticks = true,
            other => fail(&format!("unknown option {other}")),
        }
    }
    options
}

fn fail(message: &str) -> ! {
    eprintln!("fleet: {message}");
    std::process::exit(2);
}
