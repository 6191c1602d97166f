//! mcp-connect side by side with rmcp 3.11 at each of its configurations and
//! with a raw-hyper floor, in one run, interleaved, against the same servers.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- [--runs 5] [--quick]
//! ```
//!
//! The contenders: ours (the bare make-service; `full stack vs bare` rows
//! show what the four layers add); rmcp with a new reqwest client per
//! connection (its documented `from_config`, client built inside the timed
//! window), with one shared client without pooling (rmcp's own default
//! policy), and with one shared pooled client (what a performance-aware user
//! picks); and the floor, a raw hyper client sending the same requests with
//! no MCP logic. Shared clients are built once, outside every timer. Every
//! headline row compares ours with the *best* rmcp variant for that metric
//! and names it; ratios are medians of per-run paired ratios, with min–max,
//! and "not distinguishable" when that range crosses 1.
//!
//! The servers: rmcp's own Streamable HTTP server in a child process (the
//! main one), the same in this process, a legacy-only variant, and a
//! canned-answer hyper server (answers captured from rmcp's) where the
//! server costs next to nothing, so the clients' own cost shows.
//!
//! Writes `bench/results.md` (the table), `bench/results.jsonl` (one object
//! per metric: `metric`, `unit`, `better`, `ours`, `rmcp`, `rmcp_variant`,
//! `floor`, `ratio`, `floor_ratio`, each with min and max),
//! `bench/latency.svg`, and the scaling curves in `bench/scaling.svg` and
//! `bench/scaling.jsonl`.

mod cheap;
mod clients;
mod discovery;
mod flags;
mod floor;
mod gateway;
mod gateway_count;
mod group;
mod instructions;
mod lazy;
mod link;
mod report;
mod rtt;
mod scale;
mod server;
mod stats;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use clients::{Client, Era, Held, RmcpVariant};
use report::Row;
use stats::{ms, percentile};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;

struct Config {
    runs: usize,
    sequential: usize,
    concurrent: usize,
    concurrency: usize,
    calls: usize,
    held: usize,
    lifecycles: usize,
    /// Concurrency levels of the scaling curves.
    levels: &'static [usize],
    /// Sessions held for the memory curve.
    held_levels: &'static [usize],
}

fn config() -> Config {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 2 } else { 5 });
    if quick {
        Config {
            runs,
            sequential: 50,
            concurrent: 300,
            concurrency: 100,
            calls: 200,
            held: 200,
            lifecycles: 200,
            levels: &[1, 10, 100],
            held_levels: &[100, 500],
        }
    } else {
        Config {
            runs,
            sequential: 1000,
            concurrent: 1000,
            concurrency: 100,
            calls: 1000,
            held: 1000,
            lifecycles: 1000,
            levels: &[1, 10, 100, 1000],
            held_levels: &[100, 1000, 10000],
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "count") {
        return instructions::child(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == "gateway-count") {
        return gateway_count::child(&args[2..]);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match args.get(1).map(String::as_str) {
        Some("group") => runtime.block_on(group::run(&args[2..])),
        Some("rtt") => runtime.block_on(rtt::run(&args[2..])),
        Some("instructions") => runtime.block_on(instructions::run(&args[2..])),
        Some("group-servers") => runtime.block_on(group::serve(
            args[2].parse().unwrap(),
            args[3].parse().unwrap(),
        )),
        Some("lazy") => runtime.block_on(lazy::run(&args[2..])),
        Some("discovery") => runtime.block_on(discovery::run(&args[2..])),
        Some("gateway") => runtime.block_on(gateway::run(&args[2..])),
        Some("scale") => runtime.block_on(scale::run(&args[2..])),
        Some("scale-calls") => runtime.block_on(scale::calls(&args[2..])),
        Some("scale-once") => runtime.block_on(scale::once(args[2].parse().unwrap())),
        Some("lazy-memory") => runtime.block_on(lazy::memory(&args[2], &args[3])),
        Some("group-memory") => runtime.block_on(group::memory(&args[2], &args[3])),
        Some("serve") => runtime.block_on(serve(args.get(2).is_some_and(|a| a == "legacy-only"))),
        Some("serve-canned") => runtime.block_on(serve_canned(&args[2])),
        Some("split") => runtime.block_on(split()),
        Some("otel") => runtime.block_on(otel_cost(config())),
        Some("layers") => runtime.block_on(layers()),
        Some("probe-latency") => runtime.block_on(probe_latency(&args[2])),
        Some("memory") => runtime.block_on(memory(
            &args[2],
            &args[3],
            &args[4],
            args[5].parse().unwrap(),
        )),
        Some("cpu") => {
            runtime.block_on(cpu(&args[2], &args[3], &args[4], args[5].parse().unwrap()))
        }
        _ => runtime.block_on(run(config())),
    }
}

/// Runs a server in this process until stdin closes; prints its address.
async fn serve(legacy_only: bool) {
    let (addr, _) = server::start(legacy_only).await;
    println!("{addr}");
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = stdin.next_line().await {}
}

/// Runs the canned-answer server (answers captured from the rmcp server at
/// `url`) until stdin closes; prints its address.
async fn serve_canned(url: &str) {
    let addr = cheap::start(cheap::Canned::capture(url).await).await;
    println!("{addr}");
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = stdin.next_line().await {}
}

/// Where rmcp's establishment time goes: building the transport (its own
/// reqwest client) against the handshake itself.
async fn split() {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::{model::ClientConfig, ClientLifecycleMode, ClientServiceExt};
    let server = server_process(false).await;
    let (mut build, mut handshake) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        let t = Instant::now();
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(server.url.as_str()),
        );
        build.push(ms(t.elapsed()));
        let t = Instant::now();
        let client = ClientConfig::default()
            .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
            .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
            .await
            .unwrap();
        handshake.push(ms(t.elapsed()));
        let _ = client.cancel().await;
    }
    println!(
        "rmcp transport build p50 {:.3} ms, handshake p50 {:.3} ms",
        percentile(&build, 0.5),
        percentile(&handshake, 0.5)
    );
}

/// The cost of OpenTelemetry alone (`-- otel [--runs N]`): tools/call p50
/// with the SDK on (every span sampled, batched to an in-memory exporter)
/// and off, interleaved, per run and the median ratio.
async fn otel_cost(config: Config) {
    let server = server_process(false).await;
    for era in [Era::Legacy, Era::Modern] {
        let pair = [Client::traced(), Client::ours()];
        let (p50, _) = rotated_calls(&pair, &server.url, era, &config).await;
        let mut ratios: Vec<f64> = p50[0]
            .iter()
            .zip(&p50[1])
            .map(|(on, off)| on / off)
            .collect();
        ratios.sort_by(f64::total_cmp);
        println!(
            "tools/call {} p50: on {:.3} ms, off {:.3} ms (medians of {} runs); ratio median {:.3} (min {:.3}, max {:.3})",
            era.name(),
            percentile(&p50[0], 0.5),
            percentile(&p50[1], 0.5),
            config.runs,
            percentile(&ratios, 0.5),
            ratios[0],
            ratios[ratios.len() - 1],
        );
        // CPU time (every thread of a fresh process, the SDK's batch thread
        // included) per lifecycle: establish, one call, close. Steadier than
        // latency on a noisy machine.
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for _ in 0..config.runs {
            on.push(cpu_run("traced", era, &server.url, 2000).await);
            off.push(cpu_run("ours", era, &server.url, 2000).await);
        }
        println!(
            "lifecycle {} CPU: on {:.1} us, off {:.1} us (medians of {} runs); ratio {:.3}",
            era.name(),
            percentile(&on, 0.5),
            percentile(&off, 0.5),
            config.runs,
            percentile(&on, 0.5) / percentile(&off, 0.5),
        );
    }
}

/// Where ours spends a modern establishment's latency: the whole connect,
/// against the same discover request on an established session, against
/// the floor's one POST.
async fn probe_latency(url: &str) {
    use mcp_connect::{ConnectRequest, Connector};
    let connector = Connector::new();
    let floor = floor::Floor::new();
    let (mut connect, mut again, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3000 {
        let t = Instant::now();
        let session = connector
            .connect(ConnectRequest::http(url).unwrap())
            .await
            .unwrap();
        connect.push(ms(t.elapsed()));
        let t = Instant::now();
        let discover = mcp_connect::protocol::RawRequest::new("server/discover", None);
        session.send(discover).await.unwrap();
        again.push(ms(t.elapsed()));
        let t = Instant::now();
        floor.establish(url, Era::Modern).await;
        raw.push(ms(t.elapsed()));
    }
    println!(
        "connect p50 {:.3} ms, discover on the session p50 {:.3} ms, floor p50 {:.3} ms",
        percentile(&connect, 0.5),
        percentile(&again, 0.5),
        percentile(&raw, 0.5)
    );
}

/// What each layer adds to one establishment: the stack built up one layer
/// at a time, measured interleaved.
async fn layers() {
    use mcp_connect::layers::classify::FailureClassifierLayer;
    use mcp_connect::layers::deadline::DeadlineLayer;
    use mcp_connect::layers::diagnostics::LifecycleDiagnosticsLayer;
    use mcp_connect::layers::recovery::{FreshSessionRecoveryLayer, RecoveryPolicy};
    use mcp_connect::{ConnectRequest, Connector};
    use tower::util::BoxCloneSyncService;
    use tower::{ServiceBuilder, ServiceExt};
    type Stack = BoxCloneSyncService<
        ConnectRequest,
        mcp_connect::Session,
        Box<dyn std::error::Error + Send + Sync>,
    >;
    let server = server_process(false).await;
    let boxed = |s| -> Stack { s };
    let stacks: Vec<(&str, Stack)> = vec![
        (
            "bare",
            boxed(BoxCloneSyncService::new(
                ServiceBuilder::new()
                    .map_err(|e: mcp_connect::Error| e.into())
                    .service(Connector::new()),
            )),
        ),
        (
            "+classifier",
            boxed(BoxCloneSyncService::new(
                ServiceBuilder::new()
                    .map_err(|e| Box::new(e) as _)
                    .layer(FailureClassifierLayer::new())
                    .service(Connector::new()),
            )),
        ),
        (
            "+recovery",
            boxed(BoxCloneSyncService::new(
                ServiceBuilder::new()
                    .map_err(|e| Box::new(e) as _)
                    .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::new()))
                    .layer(FailureClassifierLayer::new())
                    .service(Connector::new()),
            )),
        ),
        (
            "+diagnostics",
            boxed(BoxCloneSyncService::new(
                ServiceBuilder::new()
                    .map_err(|e| Box::new(e) as _)
                    .layer(LifecycleDiagnosticsLayer::new())
                    .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::new()))
                    .layer(FailureClassifierLayer::new())
                    .service(Connector::new()),
            )),
        ),
        (
            "+deadline",
            boxed(BoxCloneSyncService::new(
                ServiceBuilder::new()
                    .map_err(|e| Box::new(e) as _)
                    .layer(DeadlineLayer::new(Duration::from_secs(60)))
                    .layer(LifecycleDiagnosticsLayer::new())
                    .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::new()))
                    .layer(FailureClassifierLayer::new())
                    .service(Connector::new()),
            )),
        ),
    ];
    let mut samples = vec![Vec::new(); stacks.len()];
    for n in 0..2000 {
        for k in 0..stacks.len() {
            let i = (k + n) % stacks.len();
            let request = ConnectRequest::http(&server.url).unwrap();
            let t = Instant::now();
            let session = stacks[i].1.clone().oneshot(request).await.unwrap();
            samples[i].push(ms(t.elapsed()));
            let _ = session.close().await;
        }
    }
    for (i, (name, _)) in stacks.iter().enumerate() {
        println!("{name}: p50 {:.4} ms", percentile(&samples[i], 0.5));
    }
}

/// A server in a child process (so client memory and CPU are the client's).
struct ServerProcess {
    _child: tokio::process::Child,
    url: String,
}

async fn server_process(legacy_only: bool) -> ServerProcess {
    spawn_server(if legacy_only {
        &["serve", "legacy-only"]
    } else {
        &["serve"]
    })
    .await
}

async fn spawn_server(args: &[&str]) -> ServerProcess {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command.args(args);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("server process");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines.next_line().await.unwrap().expect("server address");
    ServerProcess {
        _child: child,
        url: format!("http://{addr}/mcp"),
    }
}

/// `n` establishments one after another; the latency of each (close untimed).
async fn sequential(client: &Client, url: &str, era: Era, n: usize) -> Vec<f64> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let held = client.establish(url, era).await;
        samples.push(ms(started.elapsed()));
        held.close().await;
    }
    samples
}

type PerClient = Vec<Vec<f64>>;

/// Untimed establishments before every timed series.
const WARM_UP: usize = 20;

/// `config.sequential` establishments per client per run, interleaved one by
/// one in alternating order: per-run p50s, p99s, and the last run's samples.
async fn interleaved(
    clients: &[Client],
    url: &str,
    era: Era,
    config: &Config,
) -> (PerClient, PerClient, PerClient) {
    let k = clients.len();
    let (mut p50, mut p99, mut last) = (
        vec![Vec::new(); k],
        vec![Vec::new(); k],
        vec![Vec::new(); k],
    );
    // Warm-up: code paths, pools and allocators, untimed.
    for client in clients {
        sequential(client, url, era, WARM_UP).await;
    }
    for _ in 0..config.runs {
        let mut samples = vec![Vec::with_capacity(config.sequential); k];
        for n in 0..config.sequential {
            for j in 0..k {
                let i = (j + n) % k;
                samples[i].extend(sequential(&clients[i], url, era, 1).await);
                // Let the closed session's background work settle.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        for i in 0..k {
            p50[i].push(percentile(&samples[i], 0.5));
            p99[i].push(percentile(&samples[i], 0.99));
        }
        last = samples;
    }
    (p50, p99, last)
}

/// `n` establishments, `concurrency` at a time: (wall ms, per second, p50, p99).
async fn concurrent(
    client: &Client,
    url: &str,
    era: Era,
    n: usize,
    concurrency: usize,
) -> (f64, f64, f64, f64) {
    sequential(client, url, era, WARM_UP).await;
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (client, url, semaphore) = (client.clone(), url.to_owned(), Arc::clone(&semaphore));
            tokio::spawn(async move {
                let _permit = semaphore.acquire_owned().await.unwrap();
                let t = Instant::now();
                let held = client.establish(&url, era).await;
                (ms(t.elapsed()), held)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(n);
    let mut held = Vec::with_capacity(n);
    for task in tasks {
        let (latency, session) = task.await.unwrap();
        latencies.push(latency);
        held.push(session);
    }
    let wall = ms(started.elapsed());
    for session in held {
        session.close().await;
    }
    (
        wall,
        n as f64 / (wall / 1000.0),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
    )
}

/// [`calls`] for every client, `config.runs` times, the order rotated run by
/// run: per client, each run's p50 and p99.
async fn rotated_calls(
    clients: &[Client],
    url: &str,
    era: Era,
    config: &Config,
) -> (PerClient, PerClient) {
    let k = clients.len();
    let (mut p50, mut p99) = (vec![Vec::new(); k], vec![Vec::new(); k]);
    for run in 0..config.runs {
        for j in 0..k {
            let i = (j + run) % k;
            let (a, b) = calls(&clients[i], url, era, config.calls).await;
            p50[i].push(a);
            p99[i].push(b);
        }
    }
    (p50, p99)
}

/// `n` tools/call round trips on one session: (p50, p99).
async fn calls(client: &Client, url: &str, era: Era, n: usize) -> (f64, f64) {
    let held = client.establish(url, era).await;
    for _ in 0..20 {
        held.call().await;
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        held.call().await;
        samples.push(ms(t.elapsed()));
    }
    held.close().await;
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
}

fn rss_and_fds() -> (f64, f64) {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let resident: f64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    let fds = std::fs::read_dir("/proc/self/fd").unwrap().count() as f64;
    (resident * 4096.0, fds)
}

/// In a fresh process: memory and descriptors per idle established session.
async fn memory(which: &str, era: &str, url: &str, n: usize) {
    let (client, era) = (client_named(which), era_named(era));
    // Warm up code paths, the pool and the allocator with a few sessions.
    let mut held: Vec<Held> = Vec::new();
    let establish = || async {
        let mut session = client.establish(url, era).await;
        if era == Era::Legacy {
            session.hold_server_stream().await;
        }
        session
    };
    for _ in 0..10 {
        held.push(establish().await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss0, fds0) = rss_and_fds();
    for _ in 0..n {
        held.push(establish().await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss1, fds1) = rss_and_fds();
    println!(
        "{}",
        serde_json::json!({ "rss_per_session": (rss1 - rss0) / n as f64, "fds_per_session": (fds1 - fds0) / n as f64 })
    );
    std::process::exit(0);
}

/// The client a child process was asked for: `ours`, `floor` or `rmcpN`.
fn client_named(which: &str) -> Client {
    match which.strip_prefix("rmcp") {
        Some(index) => Client::Rmcp(RmcpVariant::all().swap_remove(index.parse().unwrap())),
        None if which == "floor" => Client::Floor(floor::Floor::new()),
        None if which == "traced" => Client::traced(),
        None if which == "stack" => Client::stack(),
        None => Client::ours(),
    }
}

fn era_named(era: &str) -> Era {
    if era == "legacy" {
        Era::Legacy
    } else {
        Era::Modern
    }
}

/// The names child processes know `clients` by.
fn child_names(clients: &[Client]) -> Vec<String> {
    clients
        .iter()
        .map(|client| match client {
            Client::Rmcp(variant) => format!("rmcp{}", variant.index()),
            Client::Floor(_) => "floor".to_owned(),
            _ => "ours".to_owned(),
        })
        .collect()
}

/// User plus system CPU time this process has used.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// In a fresh process (the server in another): client CPU per lifecycle
/// (establish, one tools/call, close), after a warm-up.
///
/// The loop runs in a spawned task, as a service's code runs on a worker of
/// the multi-threaded runtime, rather than on the `block_on` thread, whose
/// every wake-up would be a cross-thread hand-off for all clients alike.
async fn cpu(which: &str, era: &str, url: &str, n: usize) {
    let (client, era, url) = (client_named(which), era_named(era), url.to_owned());
    let used = tokio::spawn(async move {
        let lifecycle = || async {
            let held = client.establish(&url, era).await;
            held.call().await;
            held.close().await;
        };
        for _ in 0..(n / 10).max(20) {
            lifecycle().await;
        }
        // rmcp closes in background tasks: let the warm-up's settle first.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = cpu_time();
        for _ in 0..n {
            lifecycle().await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        cpu_time() - before
    })
    .await
    .unwrap();
    println!(
        "{}",
        serde_json::json!({ "cpu_us_per_lifecycle": used.as_secs_f64() * 1e6 / n as f64 })
    );
    std::process::exit(0);
}

/// Runs this program as a child with `args` and reads the JSON line it prints.
async fn child_json(args: &[&str]) -> serde_json::Value {
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(args)
        .output()
        .await
        .expect("child process");
    let line = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(line.trim()).unwrap_or_else(|_| panic!("{args:?}: {line}"))
}

async fn cpu_run(which: &str, era: Era, url: &str, n: usize) -> f64 {
    let value = child_json(&["cpu", which, era.name(), url, &n.to_string()]).await;
    value["cpu_us_per_lifecycle"].as_f64().unwrap()
}

async fn memory_run(which: &str, era: Era, url: &str, n: usize) -> (f64, f64) {
    let value = child_json(&["memory", which, era.name(), url, &n.to_string()]).await;
    (
        value["rss_per_session"].as_f64().unwrap(),
        value["fds_per_session"].as_f64().unwrap(),
    )
}

/// Server-side requests and connections for one establishment and one
/// lifecycle (establish, one call, close), averaged over `n`.
async fn counts(client: &Client, era: Era, n: usize) -> (f64, f64, f64, f64) {
    let (addr, counters) = server::start(false).await;
    let url = format!("http://{addr}/mcp");
    let (mut est_requests, mut est_connections, mut life_requests, mut life_connections) =
        (0, 0, 0, 0);
    for _ in 0..n {
        let before = counters.snapshot();
        let held = client.establish(&url, era).await;
        let established = counters.snapshot();
        held.call().await;
        held.close().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let after = counters.snapshot();
        est_requests += established.0 - before.0;
        est_connections += established.1 - before.1;
        life_requests += after.0 - before.0;
        life_connections += after.1 - before.1;
    }
    let n = n as f64;
    (
        est_requests as f64 / n,
        est_connections as f64 / n,
        life_requests as f64 / n,
        life_connections as f64 / n,
    )
}

/// Ours, then every rmcp variant (shared clients built here, untimed).
fn contenders() -> Vec<Client> {
    std::iter::once(Client::ours())
        .chain(RmcpVariant::all().into_iter().map(Client::Rmcp))
        .collect()
}

/// The rmcp variant that was best on the row named `metric`.
fn best_rmcp(rows: &[Row], metric: &str) -> Client {
    let variant = rows
        .iter()
        .find(|row| row.metric == metric)
        .map(|row| row.other_variant)
        .unwrap_or_else(|| panic!("no row {metric}"));
    contenders()
        .into_iter()
        .find(|client| client.name() == variant)
        .expect("a known variant")
}

/// Ours, the raw-hyper floor, then every rmcp variant.
fn with_floor() -> Vec<Client> {
    let mut clients = contenders();
    clients.insert(1, Client::Floor(floor::Floor::new()));
    clients
}

/// The row for `per_client` values of `clients` (ours first): ours against
/// the best rmcp variant, and against the floor when it ran.
fn versus(
    metric: String,
    unit: &'static str,
    better: &'static str,
    clients: &[Client],
    per_client: &[Vec<f64>],
) -> Row {
    let mut floor = None;
    let mut others = Vec::new();
    for (client, values) in clients[1..].iter().zip(&per_client[1..]) {
        match client {
            Client::Floor(_) => floor = Some(values),
            _ => others.push((client.name(), values.clone())),
        }
    }
    let row = Row::best_of(metric, unit, better, &per_client[0], others, "rmcp");
    match floor {
        Some(floor) => row.with_floor(&per_client[0], floor),
        None => row,
    }
}

const PALETTE: [&str; 5] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"];

async fn run(config: Config) {
    let modern_server = server_process(false).await;
    let legacy_server = server_process(true).await;
    let url = modern_server.url.clone();
    let mut rows = Vec::new();
    let mut curves = Vec::new();
    eprintln!("runs: {}", config.runs);

    // 1. Sequential establishment: ours against rmcp, then our full stack
    // against our bare make-service, each pair interleaved sample by sample in
    // alternating order (rmcp's background work after a close would otherwise
    // fall on whichever client runs next).
    for era in [Era::Legacy, Era::Modern] {
        let e = era.name();
        let clients = with_floor();
        let (p50, p99, last) = interleaved(&clients, &url, era, &config).await;
        rows.push(versus(
            format!("establish {e} p50"),
            "ms",
            "lower",
            &clients,
            &p50,
        ));
        rows.push(versus(
            format!("establish {e} p99"),
            "ms",
            "lower",
            &clients,
            &p99,
        ));
        for (i, client) in clients.iter().enumerate() {
            curves.push((
                format!("{} {e}", client.name()),
                PALETTE[i % PALETTE.len()],
                last[i].clone(),
            ));
        }
        let (p50, _, _) = interleaved(&[Client::stack(), Client::ours()], &url, era, &config).await;
        rows.push(Row::best_of(
            format!("full stack vs bare, establish {e} p50"),
            "ms",
            "lower",
            &p50[0],
            vec![("bare make-service", p50[1].clone())],
            "bare",
        ));
        eprintln!("done: sequential {e}");
    }

    // 1b. The same against a server in this process (client and server share
    // the two cores, as many test setups do).
    {
        let (addr, _) = server::start(false).await;
        let local = format!("http://{addr}/mcp");
        for era in [Era::Legacy, Era::Modern] {
            let clients = with_floor();
            let (p50, _, _) = interleaved(&clients, &local, era, &config).await;
            let e = era.name();
            rows.push(versus(
                format!("establish {e} p50, in-process server"),
                "ms",
                "lower",
                &clients,
                &p50,
            ));
        }
        eprintln!("done: sequential, in-process server");
    }

    // 1c. The same against a canned-answer server in its own process, where
    // the server costs next to nothing: what remains is the clients' own cost.
    {
        let canned = spawn_server(&["serve-canned", &url]).await;
        for era in [Era::Legacy, Era::Modern] {
            let e = era.name();
            let clients = with_floor();
            let (p50, _, _) = interleaved(&clients, &canned.url, era, &config).await;
            rows.push(versus(
                format!("establish {e} p50, canned server"),
                "ms",
                "lower",
                &clients,
                &p50,
            ));
            let k = clients.len();
            let mut calls_p50 = vec![Vec::new(); k];
            for run in 0..config.runs {
                for j in 0..k {
                    let i = (j + run) % k;
                    calls_p50[i].push(calls(&clients[i], &canned.url, era, config.calls).await.0);
                }
            }
            rows.push(versus(
                format!("tools/call {e} p50, canned server"),
                "ms",
                "lower",
                &clients,
                &calls_p50,
            ));
        }
        eprintln!("done: canned server");
    }

    // 2. Concurrency.
    for era in [Era::Legacy, Era::Modern] {
        let clients = with_floor();
        let k = clients.len();
        let mut rate = vec![Vec::new(); k];
        let mut wall = vec![Vec::new(); k];
        let mut p50 = vec![Vec::new(); k];
        let mut p99 = vec![Vec::new(); k];
        for run in 0..config.runs {
            for j in 0..k {
                let i = (j + run) % k;
                let (w, r, a, b) = concurrent(
                    &clients[i],
                    &url,
                    era,
                    config.concurrent,
                    config.concurrency,
                )
                .await;
                wall[i].push(w);
                rate[i].push(r);
                p50[i].push(a);
                p99[i].push(b);
            }
        }
        let e = era.name();
        // `concurrent` establishments, `concurrency` at a time.
        let n = format!("concurrency {} {e}", config.concurrency);
        rows.push(versus(
            format!("{n} rate"),
            "1/s",
            "higher",
            &clients,
            &rate,
        ));
        rows.push(versus(
            format!("{n} wall time"),
            "ms",
            "lower",
            &clients,
            &wall,
        ));
        rows.push(versus(format!("{n} p50"), "ms", "lower", &clients, &p50));
        rows.push(versus(format!("{n} p99"), "ms", "lower", &clients, &p99));
        let spread: Vec<Vec<f64>> = p99
            .iter()
            .zip(&p50)
            .map(|(high, mid)| high.iter().zip(mid).map(|(a, b)| a / b).collect())
            .collect();
        rows.push(versus(
            format!("{n} p99 / p50"),
            "x",
            "lower",
            &clients,
            &spread,
        ));
        eprintln!("done: concurrency {e}");
    }

    // 3. Memory and descriptors per idle session (fresh processes).
    for era in [Era::Legacy, Era::Modern] {
        let clients = contenders();
        let k = clients.len();
        let which = child_names(&clients);
        let mut rss = vec![Vec::new(); k];
        let mut fds = vec![Vec::new(); k];
        for run in 0..config.runs.min(3) {
            for j in 0..k {
                let i = (j + run) % k;
                let (r, f) = memory_run(&which[i], era, &url, config.held).await;
                rss[i].push(r / 1024.0);
                fds[i].push(f);
            }
        }
        let e = era.name();
        rows.push(versus(
            format!("idle memory per session {e}"),
            "KiB",
            "lower",
            &clients,
            &rss,
        ));
        rows.push(versus(
            format!("open descriptors per session {e}"),
            "fds",
            "lower",
            &clients,
            &fds,
        ));
        eprintln!("done: memory {e}");
    }

    // 3b. Client CPU per lifecycle (fresh client processes, server apart).
    for era in [Era::Legacy, Era::Modern] {
        let clients = with_floor();
        let which = child_names(&clients);
        let k = clients.len();
        let mut cpu = vec![Vec::new(); k];
        for run in 0..config.runs {
            for j in 0..k {
                let i = (j + run) % k;
                cpu[i].push(cpu_run(&which[i], era, &url, config.lifecycles).await);
            }
        }
        let e = era.name();
        rows.push(versus(
            format!("client cpu per lifecycle {e}"),
            "µs",
            "lower",
            &clients,
            &cpu,
        ));
        eprintln!("done: cpu {e}");
    }

    // 4. tools/call round trip.
    for era in [Era::Legacy, Era::Modern] {
        let clients = with_floor();
        let (p50, p99) = rotated_calls(&clients, &url, era, &config).await;
        let e = era.name();
        rows.push(versus(
            format!("tools/call {e} p50"),
            "ms",
            "lower",
            &clients,
            &p50,
        ));
        rows.push(versus(
            format!("tools/call {e} p99"),
            "ms",
            "lower",
            &clients,
            &p99,
        ));
        eprintln!("done: calls {e}");
    }

    // 4b. The cost of a handler and a listener on tools/call (issue 13's
    // bound: 5%), the two interleaved run by run.
    for era in [Era::Legacy, Era::Modern] {
        let pair = [Client::listening(), Client::ours()];
        let (p50, _) = rotated_calls(&pair, &url, era, &config).await;
        let e = era.name();
        rows.push(Row::best_of(
            format!("handler and listener vs none, tools/call {e} p50"),
            "ms",
            "lower",
            &p50[0],
            vec![("no handler or listener", p50[1].clone())],
            "none",
        ));
        eprintln!("done: handler cost {e}");
    }

    // 4b'. The cost of OpenTelemetry (issue 28's goal: within 5%): the SDK
    // with every span sampled into an in-memory exporter, vs off.
    for era in [Era::Legacy, Era::Modern] {
        let pair = [Client::traced(), Client::ours()];
        let (p50, _) = rotated_calls(&pair, &url, era, &config).await;
        let e = era.name();
        rows.push(Row::best_of(
            format!("OpenTelemetry on vs off, tools/call {e} p50"),
            "ms",
            "lower",
            &p50[0],
            vec![("off", p50[1].clone())],
            "none",
        ));
        eprintln!("done: otel cost {e}");
    }

    // 4c. The bridge's cost: rmcp's client over mcp-connect's session vs rmcp
    // alone at its best, establishment and tools/call, interleaved.
    for era in [Era::Legacy, Era::Modern] {
        let mut clients = vec![Client::bridged()];
        clients.extend(RmcpVariant::all().into_iter().map(Client::Rmcp));
        let (p50, _, _) = interleaved(&clients, &url, era, &config).await;
        let others = |values: &[Vec<f64>]| {
            clients[1..]
                .iter()
                .zip(&values[1..])
                .map(|(client, values)| (client.name(), values.clone()))
                .collect::<Vec<_>>()
        };
        let e = era.name();
        rows.push(Row::best_of(
            format!("rmcp over the bridge vs rmcp alone, establish {e} p50"),
            "ms",
            "lower",
            &p50[0],
            others(&p50),
            "rmcp",
        ));
        let (calls_p50, _) = rotated_calls(&clients, &url, era, &config).await;
        rows.push(Row::best_of(
            format!("rmcp over the bridge vs rmcp alone, tools/call {e} p50"),
            "ms",
            "lower",
            &calls_p50[0],
            others(&calls_p50),
            "rmcp",
        ));
        eprintln!("done: bridge cost {e}");
    }

    // 5. HTTP requests and TCP connections (server side, in this process).
    for era in [Era::Legacy, Era::Modern] {
        let clients = contenders();
        let mut measured = Vec::new();
        for client in &clients {
            measured.push(counts(client, era, 20).await);
        }
        let e = era.name();
        let names = [
            "HTTP requests per establishment",
            "TCP connections per establishment",
            "HTTP requests per lifecycle (establish, call, close)",
            "TCP connections per lifecycle",
        ];
        for (n, name) in names.iter().enumerate() {
            let per_client: Vec<Vec<f64>> = measured
                .iter()
                .map(|c| vec![[c.0, c.1, c.2, c.3][n]])
                .collect();
            rows.push(versus(
                format!("{name}, {e}"),
                "count",
                "lower",
                &clients,
                &per_client,
            ));
        }
        eprintln!("done: counts {e}");
    }

    // 6. A legacy-only server that refuses server/discover: cold, and with a warm era cache.
    {
        let legacy_url = legacy_server.url.clone();
        let cached = Client::cached();
        cached
            .establish(&legacy_url, Era::Modern)
            .await
            .close()
            .await;
        let mut clients = contenders();
        clients.push(cached);
        let (p50, _, _) = interleaved(&clients, &legacy_url, Era::Modern, &config).await;
        let rmcp = clients.len() - 1;
        rows.push(versus(
            "legacy-only server, unpinned, cold p50".into(),
            "ms",
            "lower",
            &clients[..rmcp],
            &p50[..rmcp],
        ));
        let mut warm = vec![p50[rmcp].clone()];
        warm.extend_from_slice(&p50[1..rmcp]);
        let mut warm_clients = vec![clients[rmcp].clone()];
        warm_clients.extend_from_slice(&clients[1..rmcp]);
        rows.push(versus(
            "legacy-only server, unpinned, warm era cache p50".into(),
            "ms",
            "lower",
            &warm_clients,
            &warm,
        ));
        eprintln!("done: legacy-only");
    }

    // 7. Scaling: ours and the best rmcp variant of each headline row, over
    // concurrency and over sessions held.
    let mut panels = vec![
        report::Panel {
            title: "establishments per second",
            x_label: "concurrency",
            y_label: "per second",
            series: Vec::new(),
        },
        report::Panel {
            title: "establishment p99",
            x_label: "concurrency",
            y_label: "ms",
            series: Vec::new(),
        },
        report::Panel {
            title: "idle memory per session",
            x_label: "sessions held",
            y_label: "KiB",
            series: Vec::new(),
        },
    ];
    let mut scaling = Vec::new();
    for era in [Era::Legacy, Era::Modern] {
        let e = era.name();
        let rate_best = best_rmcp(
            &rows,
            &format!("concurrency {} {e} rate", config.concurrency),
        );
        for client in [Client::ours(), rate_best] {
            let (mut rate, mut p99) = (Vec::new(), Vec::new());
            for &level in config.levels {
                let n = config.concurrent.max(level);
                let (_, r, _, b) = concurrent(&client, &url, era, n, level).await;
                rate.push((level as f64, r));
                p99.push((level as f64, b));
                scaling.push(serde_json::json!({
                    "era": e, "client": client.name(), "concurrency": level,
                    "establishments": n, "rate": r, "p99_ms": b,
                }));
            }
            panels[0]
                .series
                .push((format!("{} {e}", client.name()), rate));
            panels[1]
                .series
                .push((format!("{} {e}", client.name()), p99));
        }
        let memory_best = best_rmcp(&rows, &format!("idle memory per session {e}"));
        let clients = [Client::ours(), memory_best];
        let which = child_names(&clients);
        for (client, which) in clients.iter().zip(&which) {
            let mut points = Vec::new();
            for &held in config.held_levels {
                let (rss, _) = memory_run(which, era, &url, held).await;
                points.push((held as f64, rss / 1024.0));
                scaling.push(serde_json::json!({
                    "era": e, "client": client.name(), "sessions_held": held,
                    "idle_kib_per_session": rss / 1024.0,
                }));
            }
            panels[2]
                .series
                .push((format!("{} {e}", client.name()), points));
        }
        eprintln!("done: scaling {e}");
    }

    let table = report::markdown(&rows, config.runs);
    println!("{table}");
    let jsonl: String = rows.iter().map(|r| r.json() + "\n").collect();
    print!("{jsonl}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // The `rtt` rows are the `rtt` command's: kept as they are.
    let kept: String = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("\"kind\":\"rtt\""))
        .map(|line| format!("{line}\n"))
        .collect();
    let jsonl = jsonl + &kept;
    std::fs::write(dir.join("results.md"), &table).unwrap();
    std::fs::write(dir.join("results.jsonl"), &jsonl).unwrap();
    std::fs::write(dir.join("latency.svg"), report::svg(&curves)).unwrap();
    std::fs::write(dir.join("scaling.svg"), report::scaling_svg(&panels)).unwrap();
    let scaling: String = scaling.iter().map(|point| format!("{point}\n")).collect();
    std::fs::write(dir.join("scaling.jsonl"), scaling).unwrap();
}
