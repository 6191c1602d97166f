//! Cancellation latency and deadline overshoot, median and p99 over many
//! runs against a loopback server whose `initialize` never answers.
//!
//! Run: `cargo bench --bench deadline` (optionally `-- RUNS`). Not a timed
//! test: timings on shared machines are noisy, so it reports, it does not
//! judge.

use std::time::Duration;

use mcp_connect::request::Limits;
use mcp_connect::testkit::{LegacyServer, Script, ScriptServer};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "| {name} | {} | {:.3} | {:.3} | {:.3} |",
        samples.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1000.0,
        percentile(&samples, 0.99).as_secs_f64() * 1000.0,
        samples.last().unwrap().as_secs_f64() * 1000.0,
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" => Script::Stall,
        _ => legacy.respond(r),
    })
    .await;
    let limits = Limits::default()
        .with_handshake_timeout(Duration::from_secs(60))
        .with_probe_timeout(Duration::from_secs(60));

    let mut cancellation = Vec::with_capacity(runs);
    for _ in 0..runs {
        let token = CancellationToken::new();
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_limits(limits)
            .with_cancellation(token.clone());
        let connector = Connector::new();
        let connect = connector.connect(request);
        tokio::pin!(connect);
        // Let it reach the stalled initialize, then cancel.
        let _ = tokio::time::timeout(Duration::from_millis(20), &mut connect).await;
        let cancelled_at = Instant::now();
        token.cancel();
        assert!(connect.await.is_err());
        cancellation.push(cancelled_at.elapsed());
    }

    let budget = Duration::from_millis(50);
    let stack = EstablishBuilder::new(Connector::new())
        .with_deadline(budget)
        .build();
    let mut overshoot = Vec::with_capacity(runs);
    for _ in 0..runs {
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_limits(limits);
        let started = Instant::now();
        assert!(stack.connect(request).await.is_err());
        overshoot.push(started.elapsed().saturating_sub(budget));
    }

    println!("| metric | runs | median ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|");
    report("cancellation latency (cancel to return)", cancellation);
    report(
        "deadline overshoot (return minus deadline, 50 ms budget)",
        overshoot,
    );
}
