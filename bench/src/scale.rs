//! Issue 46, item 5: how the group scales. For each size, the time from
//! the first `add` until the catalogue holds every tool (cold: each member
//! established and listed), beside the same establishments by hand
//! (`join_all`), so what grows faster than the size shows as the group's.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- scale [--sizes 100,1000] [--runs 3]
//! cargo run --release --manifest-path bench/Cargo.toml -- scale-once N   # one cold group, for a profiler
//! ```

use futures_util::future::join_all;
use serde_json::json;
use tokio::time::Instant;

use crate::stats::{ms, percentile};

fn sizes(args: &[String]) -> Vec<usize> {
    args.iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').map(|n| n.parse().expect("a size")).collect())
        .unwrap_or_else(|| vec![100, 1_000])
}

/// `scale`: one line per size, medians of `--runs` (default 3).
pub async fn run(args: &[String]) {
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    for n in sizes(args) {
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
