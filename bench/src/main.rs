//! mcp-connect and rmcp 3.11 side by side, in one run, alternating, against
//! the same rmcp Streamable HTTP server (stateful sessions, one `add` tool).
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- [--runs 5] [--quick]
//! ```
//!
//! Writes `bench/results.md` (the table), `bench/results.jsonl` (one object
//! per metric: metric, ours, rmcp, ratio) and `bench/latency.svg`.

mod clients;
mod report;
mod server;
mod stats;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use clients::{Client, Era, Held};
use report::Row;
use stats::{ms, percentile, Across};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;

struct Config {
    runs: usize,
    sequential: usize,
    concurrent: usize,
    concurrency: usize,
    calls: usize,
    held: usize,
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
            concurrent: 200,
            concurrency: 50,
            calls: 200,
            held: 200,
        }
    } else {
        Config {
            runs,
            sequential: 300,
            concurrent: 1000,
            concurrency: 100,
            calls: 1000,
            held: 1000,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match args.get(1).map(String::as_str) {
        Some("serve") => runtime.block_on(serve(args.get(2).is_some_and(|a| a == "legacy-only"))),
        Some("split") => runtime.block_on(split()),
        Some("layers") => runtime.block_on(layers()),
        Some("memory") => runtime.block_on(memory(
            &args[2],
            &args[3],
            &args[4],
            args[5].parse().unwrap(),
        )),
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
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command.arg("serve");
    if legacy_only {
        command.arg("legacy-only");
    }
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
    let client = if which == "rmcp" {
        Client::Rmcp
    } else {
        Client::ours()
    };
    let era = if era == "legacy" {
        Era::Legacy
    } else {
        Era::Modern
    };
    // Warm up code paths, the pool and the allocator with a few sessions.
    let mut held: Vec<Held> = Vec::new();
    for _ in 0..10 {
        held.push(client.establish(url, era).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss0, fds0) = rss_and_fds();
    for _ in 0..n {
        held.push(client.establish(url, era).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss1, fds1) = rss_and_fds();
    println!(
        "{}",
        serde_json::json!({ "rss_per_session": (rss1 - rss0) / n as f64, "fds_per_session": (fds1 - fds0) / n as f64 })
    );
    std::process::exit(0);
}

async fn memory_run(which: &str, era: Era, url: &str, n: usize) -> (f64, f64) {
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["memory", which, era.name(), url, &n.to_string()])
        .output()
        .await
        .expect("memory process");
    let line = String::from_utf8_lossy(&output.stdout);
    let value: serde_json::Value =
        serde_json::from_str(line.trim()).unwrap_or_else(|_| panic!("{line}"));
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

fn row(
    metric: String,
    unit: &'static str,
    better: &'static str,
    ours: &[f64],
    other: &[f64],
    other_name: &'static str,
) -> Row {
    Row {
        metric,
        unit,
        better,
        ours: Across::of(ours),
        other: Across::of(other),
        other_name,
    }
}

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
        let (p50, p99, last) =
            interleaved(&[Client::ours(), Client::Rmcp], &url, era, &config).await;
        rows.push(row(
            format!("establish {e} p50"),
            "ms",
            "lower",
            &p50[0],
            &p50[1],
            "rmcp",
        ));
        rows.push(row(
            format!("establish {e} p99"),
            "ms",
            "lower",
            &p99[0],
            &p99[1],
            "rmcp",
        ));
        let colors = if era == Era::Legacy {
            "#1f77b4"
        } else {
            "#d62728"
        };
        curves.push((format!("ours {e}"), colors, last[0].clone()));
        curves.push((format!("rmcp {e}"), colors, last[1].clone()));
        let (p50, _, _) = interleaved(&[Client::stack(), Client::ours()], &url, era, &config).await;
        rows.push(row(
            format!("full stack vs bare, establish {e} p50"),
            "ms",
            "lower",
            &p50[0],
            &p50[1],
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
            let (p50, _, _) =
                interleaved(&[Client::ours(), Client::Rmcp], &local, era, &config).await;
            let e = era.name();
            rows.push(row(
                format!("establish {e} p50, in-process server"),
                "ms",
                "lower",
                &p50[0],
                &p50[1],
                "rmcp",
            ));
        }
        eprintln!("done: sequential, in-process server");
    }

    // 2. Concurrency.
    for era in [Era::Legacy, Era::Modern] {
        let clients = [Client::ours(), Client::Rmcp];
        let mut rate = vec![Vec::new(); 2];
        let mut wall = vec![Vec::new(); 2];
        let mut p50 = vec![Vec::new(); 2];
        let mut p99 = vec![Vec::new(); 2];
        for run in 0..config.runs {
            for k in 0..2 {
                let i = (k + run) % 2;
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
        let n = format!(
            "{} at concurrency {}",
            config.concurrent, config.concurrency
        );
        rows.push(row(
            format!("{n}, {e}: wall time"),
            "ms",
            "lower",
            &wall[0],
            &wall[1],
            "rmcp",
        ));
        rows.push(row(
            format!("{n}, {e}: establishments per second"),
            "1/s",
            "higher",
            &rate[0],
            &rate[1],
            "rmcp",
        ));
        rows.push(row(
            format!("{n}, {e}: p50"),
            "ms",
            "lower",
            &p50[0],
            &p50[1],
            "rmcp",
        ));
        rows.push(row(
            format!("{n}, {e}: p99"),
            "ms",
            "lower",
            &p99[0],
            &p99[1],
            "rmcp",
        ));
        let ours_p99_over_p50: Vec<f64> = p99[0].iter().zip(&p50[0]).map(|(a, b)| a / b).collect();
        let rmcp_p99_over_p50: Vec<f64> = p99[1].iter().zip(&p50[1]).map(|(a, b)| a / b).collect();
        rows.push(row(
            format!("{n}, {e}: p99 / p50"),
            "x",
            "lower",
            &ours_p99_over_p50,
            &rmcp_p99_over_p50,
            "rmcp",
        ));
        eprintln!("done: concurrency {e}");
    }

    // 3. Memory and descriptors per idle session (fresh processes).
    for era in [Era::Legacy, Era::Modern] {
        let mut rss = vec![Vec::new(); 2];
        let mut fds = vec![Vec::new(); 2];
        for run in 0..config.runs.min(3) {
            for k in 0..2 {
                let i = (k + run) % 2;
                let (r, f) = memory_run(["ours", "rmcp"][i], era, &url, config.held).await;
                rss[i].push(r / 1024.0);
                fds[i].push(f);
            }
        }
        let e = era.name();
        rows.push(row(
            format!("idle memory per session, {e}"),
            "KiB",
            "lower",
            &rss[0],
            &rss[1],
            "rmcp",
        ));
        rows.push(row(
            format!("open descriptors per session, {e}"),
            "fds",
            "lower",
            &fds[0],
            &fds[1],
            "rmcp",
        ));
        eprintln!("done: memory {e}");
    }

    // 4. tools/call round trip.
    for era in [Era::Legacy, Era::Modern] {
        let clients = [Client::ours(), Client::Rmcp];
        let mut p50 = vec![Vec::new(); 2];
        let mut p99 = vec![Vec::new(); 2];
        for run in 0..config.runs {
            for k in 0..2 {
                let i = (k + run) % 2;
                let (a, b) = calls(&clients[i], &url, era, config.calls).await;
                p50[i].push(a);
                p99[i].push(b);
            }
        }
        let e = era.name();
        rows.push(row(
            format!("tools/call {e} p50"),
            "ms",
            "lower",
            &p50[0],
            &p50[1],
            "rmcp",
        ));
        rows.push(row(
            format!("tools/call {e} p99"),
            "ms",
            "lower",
            &p99[0],
            &p99[1],
            "rmcp",
        ));
        eprintln!("done: calls {e}");
    }

    // 5. HTTP requests and TCP connections (server side, in this process).
    for era in [Era::Legacy, Era::Modern] {
        let ours = counts(&Client::ours(), era, 20).await;
        let rmcp = counts(&Client::Rmcp, era, 20).await;
        let e = era.name();
        let pairs = [
            ("HTTP requests per establishment", ours.0, rmcp.0),
            ("TCP connections per establishment", ours.1, rmcp.1),
            (
                "HTTP requests per lifecycle (establish, call, close)",
                ours.2,
                rmcp.2,
            ),
            ("TCP connections per lifecycle", ours.3, rmcp.3),
        ];
        for (name, a, b) in pairs {
            rows.push(row(
                format!("{name}, {e}"),
                "count",
                "lower",
                &[a],
                &[b],
                "rmcp",
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
        let (p50, _, _) = interleaved(
            &[Client::ours(), Client::Rmcp, cached],
            &legacy_url,
            Era::Modern,
            &config,
        )
        .await;
        rows.push(row(
            "legacy-only server, unpinned, cold p50".into(),
            "ms",
            "lower",
            &p50[0],
            &p50[1],
            "rmcp",
        ));
        rows.push(row(
            "legacy-only server, unpinned, warm era cache p50".into(),
            "ms",
            "lower",
            &p50[2],
            &p50[1],
            "rmcp",
        ));
        eprintln!("done: legacy-only");
    }

    let table = report::markdown(&rows, config.runs);
    println!("{table}");
    let jsonl: String = rows.iter().map(|r| r.json() + "\n").collect();
    print!("{jsonl}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::write(dir.join("results.md"), &table).unwrap();
    std::fs::write(dir.join("results.jsonl"), &jsonl).unwrap();
    std::fs::write(dir.join("latency.svg"), report::svg(&curves)).unwrap();
}
