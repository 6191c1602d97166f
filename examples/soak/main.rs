//! A seeded fault soak: many establishments and calls through the full
//! stack and `McpClient`, against testkit servers that inject, at random
//! per seed, a fault at one stage of each run. Prints one JSON summary line;
//! exits 1 when any run hung, was misclassified, disposed of a session other
//! than once, or replayed a call, when anything leaked, or when resident
//! memory grew by more than 1 MiB per 10,000 runs.
//!
//! ```text
//! cargo build --release --features testkit --bin mcp-connect-stdio-fixture
//! cargo run --release --features testkit --example soak -- --seed 7 --establishments 2000
//! ```
//!
//! Options: `--seed S` (default 1), `--establishments N` (default 1000),
//! `--concurrency C` runs in flight (default 16), `--fixture PATH` (the
//! stdio fixture; default: next to this example's directory),
//! `--pool-idle-ms MS` (the shared HTTP client's idle timeout, default
//! 1000; see [`connector`]), `--isolate`
//! (one run at a time, each checked for leaks on its own and named when it
//! leaves something behind).
//!
//! Each run draws a [`faults::Plan`] (transport, stage, fault, whether the
//! client may replay undelivered calls), makes two calls and closes the
//! client, and checks: every call ends within its bound and as the plan's
//! oracle says (kind, session lost or not, generation); each session is
//! ended at most once and the last one exactly once; no call reached the
//! server twice. The same seed draws the same plans; a failing run is named
//! (plan and run number, nothing the server said) on stderr.

mod faults;
mod leaks;
mod rng;
mod servers;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_connect::client::replay::ReplayPolicy;
use mcp_connect::client::ClientError;
use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy};
use mcp_connect::protocol::CallToolResult;
use mcp_connect::request::Limits;
use mcp_connect::transport::HttpClient;
use mcp_connect::{Connector, EstablishBuilder, McpClient};
use serde_json::json;
use tokio::time::Instant;

use faults::{Expect, Plan};
use leaks::Holdings;

/// The establishment deadline.
const DEADLINE: Duration = Duration::from_secs(2);
const HANDSHAKE: Duration = Duration::from_millis(250);
const REQUEST: Duration = Duration::from_millis(250);
const GRACE: Duration = Duration::from_millis(200);
/// What a run may take on top of its own limits (scheduling on a loaded
/// machine, a stdio child starting).
const SLACK: Duration = Duration::from_millis(750);
/// A call's bound: an establishment within its deadline (which includes the
/// cleanup of the attempt it cut), the request's own timeout, and, after a
/// lost session, the old session's close.
const CALL_BOUND: Duration = DEADLINE
    .saturating_add(REQUEST)
    .saturating_add(GRACE)
    .saturating_add(GRACE)
    .saturating_add(SLACK);
/// Closing: the DELETE or the stdio close ladder (stdin, then SIGTERM).
const CLOSE_BOUND: Duration = REQUEST
    .saturating_add(GRACE)
    .saturating_add(GRACE)
    .saturating_add(SLACK);
/// Past this a call counts as hung however it ends.
const WATCHDOG: Duration = Duration::from_secs(15);

struct Options {
    seed: u64,
    runs: u64,
    concurrency: usize,
    fixture: PathBuf,
    /// One run at a time, each checked for leaks on its own.
    isolate: bool,
    /// How long the shared HTTP client keeps an idle connection.
    pool_idle: Duration,
}

#[derive(Default)]
struct Totals {
    hangs: AtomicU64,
    misclassified: AtomicU64,
    disposal_errors: AtomicU64,
    replayed: AtomicU64,
    faulted: AtomicU64,
    max_call_ms: AtomicU64,
    reported: AtomicU64,
}

fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("soak: {message}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let ok = runtime.block_on(soak(options));
    std::process::exit(if ok { 0 } else { 1 });
}

async fn soak(options: Options) -> bool {
    let started = Instant::now();
    let connector = connector(options.pool_idle);
    let totals = Arc::new(Totals::default());
    // Long enough for the allocator and the pool to reach their working
    // size, so the growth measured after it is growth per run.
    let warmup = (options.runs / 2).min(2000);
    run_range(0..warmup, &options, &connector, &totals).await;
    let baseline = Holdings::settled(Holdings::now(), Duration::from_millis(500)).await;
    run_range(warmup..options.runs, &options, &connector, &totals).await;
    let end = Holdings::settled(baseline, Duration::from_secs(10)).await;

    let measured = (options.runs - warmup).max(1);
    let rss_growth = end.rss_kib - baseline.rss_kib;
    // 1 MiB per 10,000 runs, and never less than 2 MiB: on a short run the
    // allocator's per-thread arenas move RSS by up to about 1 MiB whatever
    // the library does (measured: 0.2 to 0.9 MiB over 1,000 runs, 0.2 MiB
    // over 98,000).
    let rss_limit = (1024 * measured as i64 / 10_000).max(2048);
    let summary = json!({
        "seed": options.seed,
        "runs": options.runs,
        "faulted": totals.faulted.load(Ordering::Relaxed),
        "hangs": totals.hangs.load(Ordering::Relaxed),
        "misclassified": totals.misclassified.load(Ordering::Relaxed),
        "disposal_errors": totals.disposal_errors.load(Ordering::Relaxed),
        "leaked_tasks": end.tasks.saturating_sub(baseline.tasks),
        "leaked_fds": end.fds.saturating_sub(baseline.fds),
        "leaked_processes": end.children,
        "replayed": totals.replayed.load(Ordering::Relaxed),
        "rss_growth_kib": rss_growth,
        "rss_limit_kib": rss_limit,
        "rss_measured_runs": measured,
        "pool_idle_ms": options.pool_idle.as_millis() as u64,
        "max_call_ms": totals.max_call_ms.load(Ordering::Relaxed),
        "call_bound_ms": CALL_BOUND.as_millis() as u64,
        "elapsed_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    });
    println!("{summary}");
    let zero = |name: &str| summary[name].as_u64() == Some(0);
    [
        "hangs",
        "misclassified",
        "disposal_errors",
        "leaked_tasks",
        "leaked_fds",
        "leaked_processes",
        "replayed",
    ]
    .iter()
    .all(|name| zero(name))
        && rss_growth <= rss_limit
}

async fn run_range(
    runs: std::ops::Range<u64>,
    options: &Options,
    connector: &Connector,
    totals: &Arc<Totals>,
) {
    futures_util::stream::iter(runs)
        .map(|index| run(index, options, connector.clone(), Arc::clone(totals)))
        .buffer_unordered(options.concurrency)
        .for_each(|()| async {})
        .await;
}

async fn run(index: u64, options: &Options, connector: Connector, totals: Arc<Totals>) {
    let plan = Plan::draw(&mut rng::Rng::for_run(options.seed, index));
    let before = options.isolate.then(Holdings::now);
    if plan.fault != faults::Fault::None {
        totals.faulted.fetch_add(1, Ordering::Relaxed);
    }
    let (server, request) = servers::Server::start(plan, &options.fixture, index).await;
    let request = request.with_limits(
        Limits::default()
            .with_handshake_timeout(HANDSHAKE)
            .with_request_timeout(REQUEST)
            .with_close_grace(GRACE),
    );
    let stack = EstablishBuilder::new(connector)
        .with_recovery(
            RecoveryPolicy::new()
                .with_max_attempts(3)
                .with_backoff(Backoff::new(
                    Duration::from_millis(5),
                    Duration::from_millis(20),
                )),
        )
        .with_deadline(DEADLINE)
        .build();
    let replay = match plan.replay {
        true => ReplayPolicy::Undelivered,
        false => ReplayPolicy::Never,
    };
    let client = McpClient::builder(stack, request)
        .with_replay(replay)
        .build();
    let report = |what: String| {
        // The first few failures, by plan and run: enough to reproduce.
        if totals.reported.fetch_add(1, Ordering::Relaxed) < 20 {
            eprintln!("soak: run {index} ({}): {what}", plan.name());
        }
    };

    let mut hung = false;
    for (n, expect) in (1u64..).zip(plan.expect()) {
        let arguments = json!({ "n": n, "text": n.to_string() });
        let started = Instant::now();
        let result = tokio::time::timeout(WATCHDOG, client.call_tool("echo", &arguments)).await;
        let took = started.elapsed();
        totals
            .max_call_ms
            .fetch_max(took.as_millis() as u64, Ordering::Relaxed);
        let Ok(result) = result else {
            report(format!("call {n} did not end in {WATCHDOG:?}"));
            hung = true;
            break;
        };
        if took > CALL_BOUND {
            report(format!("call {n} took {took:?}, over {CALL_BOUND:?}"));
            hung = true;
        }
        if let Err(got) = check(&result, expect, client.generation()) {
            totals.misclassified.fetch_add(1, Ordering::Relaxed);
            report(format!("call {n}: expected {expect:?}, got {got}"));
        }
    }
    let started = Instant::now();
    let closed = tokio::time::timeout(WATCHDOG, client.close()).await;
    let took = started.elapsed();
    if closed.is_err() || took > CLOSE_BOUND {
        report(format!("close took {took:?}, over {CLOSE_BOUND:?}"));
        hung = true;
    }
    drop(client);
    let cleanly = matches!(closed, Ok(Ok(())));
    if !server.disposed_once(plan, cleanly) {
        totals.disposal_errors.fetch_add(1, Ordering::Relaxed);
        report("a session was not disposed of exactly once".into());
    }
    let replayed = server.replayed();
    if replayed > 0 {
        totals.replayed.fetch_add(replayed, Ordering::Relaxed);
        report(format!("{replayed} call(s) reached the server twice"));
    }
    if hung {
        totals.hangs.fetch_add(1, Ordering::Relaxed);
    }
    drop(server);
    if let Some(before) = before {
        let after = Holdings::settled(before, Duration::from_secs(2)).await;
        if after.tasks > before.tasks || after.fds > before.fds || after.children > 0 {
            report(format!(
                "left {} task(s), {} fd(s), {} process(es)",
                after.tasks.saturating_sub(before.tasks),
                after.fds.saturating_sub(before.fds),
                after.children
            ));
        }
    }
}

/// `Ok` when the call ended as expected, else what it ended in (kinds and
/// flags only).
fn check(
    result: &Result<CallToolResult, ClientError>,
    expect: Expect,
    generation: u64,
) -> Result<(), String> {
    let matched = match (result, expect) {
        (Ok(_), Expect::Ok { generation: g }) => generation == g,
        (
            Err(e @ (ClientError::Connect(_) | ClientError::CoolingDown { .. })),
            Expect::NoSession(kinds),
        ) => kinds.contains(&e.failure().kind),
        (Err(e @ ClientError::CoolingDown { .. }), Expect::CoolingDownOrOk(kinds)) => {
            kinds.contains(&e.failure().kind)
        }
        (Ok(_), Expect::CoolingDownOrOk(_)) => generation == 1,
        (Err(e @ ClientError::Call { .. }), Expect::Fails { kinds, lost }) => {
            kinds.contains(&e.failure().kind) && e.is_session_lost() == lost
        }
        _ => false,
    };
    if matched {
        return Ok(());
    }
    Err(match result {
        Ok(_) => format!("success on generation {generation}"),
        Err(e) => {
            let failure = e.failure();
            format!(
                "{} (kind {}, status {:?}, closure {:?}, session lost {}, generation {generation})",
                match e {
                    ClientError::Connect(_) => "no session",
                    ClientError::CoolingDown { .. } => "cooling down",
                    _ => "call failed",
                },
                failure.kind.as_str(),
                failure.http_status,
                failure.closure.map(|c| c.as_str()),
                e.is_session_lost()
            )
        }
    })
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        seed: 1,
        runs: 1000,
        concurrency: 16,
        fixture: default_fixture(),
        isolate: false,
        pool_idle: Duration::from_secs(1),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--seed" => options.seed = value()?.parse().map_err(|_| "--seed takes a number")?,
            "--establishments" => {
                options.runs = value()?
                    .parse()
                    .map_err(|_| "--establishments takes a number")?
            }
            "--concurrency" => {
                options.concurrency = value()?
                    .parse::<usize>()
                    .map_err(|_| "--concurrency takes a number")?
                    .max(1)
            }
            "--fixture" => options.fixture = PathBuf::from(value()?),
            "--pool-idle-ms" => {
                options.pool_idle = Duration::from_millis(
                    value()?
                        .parse()
                        .map_err(|_| "--pool-idle-ms takes a number")?,
                )
            }
            "--isolate" => {
                options.isolate = true;
                options.concurrency = 1;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !options.fixture.exists() {
        return Err(format!(
            "the stdio fixture is not at {} (cargo build --release --features testkit --bin mcp-connect-stdio-fixture, or --fixture PATH)",
            options.fixture.display()
        ));
    }
    Ok(options)
}

/// One HTTP client for every run, as an application shares one: hyper-util's
/// pooled client, as the default client is built, with a shorter idle
/// timeout. Every run meets a new server on a new port, so the pool holds
/// the idle connections of the last `idle` of runs (the default client's
/// 90 s is about 7 KiB per run at this pace); the RSS check is about what
/// the library keeps, not that window.
fn connector(idle: Duration) -> Connector {
    let mut builder =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    builder
        .pool_idle_timeout(idle)
        .pool_timer(hyper_util::rt::TokioTimer::new());
    let client = builder.build_http::<http_body_util::Full<bytes::Bytes>>();
    Connector::with_client(HttpClient::new(client))
}

/// `target/<profile>/mcp-connect-stdio-fixture`, next to `examples/`.
fn default_fixture() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("mcp-connect-stdio-fixture")))
        .unwrap_or_default()
}
