//! Issue 46, item 5: how the group scales. For each size, the time from
//! the first `add` until the catalogue holds every tool (cold: each member
//! established and listed), beside the same establishments by hand
//! (`join_all`), so what grows faster than the size shows as the group's.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- scale [--sizes 100,1000] [--runs 3]
//! cargo run --release --manifest-path bench/Cargo.toml -- scale-once N   # one cold group, for a profiler
//! cargo run --release --manifest-path bench/Cargo.toml -- scale-calls [--runs 3]
//! ```
//!
//! `scale-calls`: 10,000 `tools/call` at once across a ready group of 100
//! servers, routed by catalogue name, with every call policy but hedging
//! and replicas configured on each server (at most 64 in flight and 64
//! waiting, a breaker, the rate-limit retry, a progress-aware idle
//! timeout), beside the same group without policies: what the policies
//! cost on the call path when nothing goes wrong.

use std::time::Duration;

use futures_util::future::join_all;
use mcp_connect::client::CallPolicies;
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use serde_json::json;
use tokio::time::Instant;

use crate::flags;
use crate::stats::{ms, percentile};

/// `scale`: one line per size, medians of `--runs` (default 3).
pub async fn run(args: &[String]) {
    let runs = flags::value(args, "--runs").unwrap_or(3);
    for n in flags::sizes(args).unwrap_or_else(|| vec![100, 1_000]) {
        let (child, urls) = crate::group::servers(n, 0).await;
        let stack = mcp_connect::EstablishBuilder::new(mcp_connect::Connector::new()).build();
        let (mut group, mut by_hand) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let started = Instant::now();
            let sessions = join_all(urls.iter().map(|url| crate::group::ready(&stack, url))).await;
            by_hand.push(ms(started.elapsed()));
            join_all(sessions.iter().map(|session| session.close())).await;
            group.push(ms(crate::group::group_ready(&urls).await));
        }
        drop(child);
        println!(
            "{}",
            json!({
                "metric": "group cold to complete catalogue", "servers": n, "runs": runs,
                "group_ms": percentile(&group, 0.5), "by_hand_ms": percentile(&by_hand, 0.5),
                "group_ms_all": group, "by_hand_ms_all": by_hand,
            })
        );
    }
}

/// `scale-once N`: one cold group of `N` servers, nothing else timed.
pub async fn once(n: usize) {
    let (child, urls) = crate::group::servers(n, 0).await;
    let took = crate::group::group_ready(&urls).await;
    drop(child);
    println!("{}", json!({ "servers": n, "group_ms": ms(took) }));
}

/// A ready group of the servers at `urls`, each with `policies`.
async fn ready_group(urls: &[String], policies: &CallPolicies) -> ServerGroup {
    let stack = EstablishBuilder::new(Connector::new()).build();
    let group = ServerGroup::new();
    for (i, url) in urls.iter().enumerate() {
        let request = ConnectRequest::http(url)
            .unwrap()
            .with_name(format!("s{i:03}"));
        let server = Server::new(stack.clone(), request).with_policies(policies.clone());
        group.add(server).unwrap();
    }
    let mut catalogues = group.catalogue_changes();
    let complete = catalogues.wait_for(|catalogue| catalogue.tools().len() == 4 * urls.len());
    tokio::time::timeout(Duration::from_secs(30), complete)
        .await
        .expect("ready in 30 s")
        .expect("the group lives");
    group
}

/// `calls` calls at once, spread evenly over the servers: the time for all
/// of them, each call's latency, and how many failed.
async fn burst(group: &ServerGroup, servers: usize, calls: usize) -> (f64, Vec<f64>, usize) {
    let names: Vec<String> = (0..servers).map(|i| format!("s{i:03}__read")).collect();
    let arguments = json!({});
    let started = Instant::now();
    let outcomes = join_all((0..calls).map(|i| {
        let (name, arguments) = (&names[i % servers], &arguments);
        async move {
            let started = Instant::now();
            let outcome = group.call_tool(name, arguments).await;
            (ms(started.elapsed()), outcome.is_ok())
        }
    }))
    .await;
    let took = ms(started.elapsed());
    let failed = outcomes.iter().filter(|(_, ok)| !ok).count();
    (
        took,
        outcomes.into_iter().map(|(ms, _)| ms).collect(),
        failed,
    )
}

/// `scale-calls [--runs 3]`: policies on and off, interleaved.
pub async fn calls(args: &[String]) {
    let runs = flags::value(args, "--runs").unwrap_or(3);
    let (servers, calls) = (100, 10_000);
    let (child, urls) = crate::group::servers(servers, 0).await;
    let on = CallPolicies::new()
        .with_max_in_flight(64)
        .with_breaker()
        .with_rate_limit_retry()
        .with_idle_timeout(Duration::from_secs(30), Duration::from_secs(300));
    for (label, policies) in [("none", CallPolicies::new()), ("all", on)] {
        let group = ready_group(&urls, &policies).await;
        burst(&group, servers, servers).await; // warm-up: one call each
        let (mut totals, mut latencies, mut failed) = (Vec::new(), Vec::new(), 0);
        for _ in 0..runs {
            let (took, each, errors) = burst(&group, servers, calls).await;
            totals.push(took);
            latencies.extend(each);
            failed += errors;
        }
        group.shutdown().await;
        assert_eq!(failed, 0, "every call answered ({label} policies)");
        println!(
            "{}",
            json!({
                "metric": "10,000 tools/call at once across 100 servers", "policies": label,
                "runs": runs, "all_ms": percentile(&totals, 0.5), "all_ms_runs": totals,
                "calls_per_s": calls as f64 / percentile(&totals, 0.5) * 1000.0,
                "call_p50_ms": percentile(&latencies, 0.5), "call_p99_ms": percentile(&latencies, 0.99),
                "failed": failed,
            })
        );
    }
    drop(child);
}
