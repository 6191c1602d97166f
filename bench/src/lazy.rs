//! Issue 44: a lazy start from remembered listings, 100 and 1,000 members.
//!
//! A first (eager) group reaches every server once and remembers the
//! listings in a file, as a run of the service would. Then, timed: a group
//! whose members are all lazy, from the first `add` until its catalogue
//! holds every tool (4 per server) — no member may have started an
//! establishment (all `Idle`): the work is reading the file's listings
//! into the catalogue, and the floor is no connection at all. Beside it,
//! the eager group's time to ready for the same servers, the work a lazy
//! start saves. Memory is RSS growth per lazy member in a fresh process,
//! after 10 warm-up members.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- lazy [--quick] [--sizes 100,1000,10000]
//! ```

use std::time::Duration;

use mcp_connect::group::{HealthState, RememberedListings, Server, ServerGroup};
use mcp_connect::{ConnectRequest, Connector, Establish, EstablishBuilder};
use serde_json::json;
use tokio::time::Instant;

use crate::stats::ms;

/// Members reached eagerly at once, to remember their listings.
const BATCH: usize = 1_000;

/// Every member through one stack (one connector, one HTTP pool), as a
/// service builds its group.
fn member(stack: &Establish, url: &str, i: usize, lazy: bool) -> Server {
    let request = ConnectRequest::http(url)
        .unwrap()
        .with_name(format!("s{i:04}"));
    let server = Server::new(stack.clone(), request);
    if lazy {
        server.lazy()
    } else {
        server
    }
}

fn group_with(listings: RememberedListings) -> ServerGroup {
    ServerGroup::builder()
        .with_remembered_listings(listings)
        .build()
}

/// `lazy [--quick]`: the rows for 100 and 1,000 members, written to
/// `bench/lazy.jsonl`; quick, 100 only and nothing written.
pub async fn run(args: &[String]) {
    let quick = args.iter().any(|a| a == "--quick");
    let given = crate::flags::sizes(args);
    let sizes = given
        .clone()
        .unwrap_or(if quick { vec![100] } else { vec![100, 1_000] });
    let mut text = String::new();
    for n in sizes {
        let line = row(n).await;
        println!("{line}");
        text.push_str(&format!("{line}\n"));
    }
    if !quick && given.is_none() {
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/lazy.jsonl"), text).unwrap();
    }
}

/// One row: `n` servers, eagerly reached (and remembered), then started
/// lazily from what was remembered.
pub async fn row(n: usize) -> serde_json::Value {
    let (child, urls) = crate::group::servers(n, 0).await;
    let dir = std::env::temp_dir();
    let file = dir.join(format!(
        "mcp-connect-bench-lazy-{}-{n}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&file);

    // Reached eagerly a thousand at a time, each thousand's connections
    // closed before the next: a group of more than 1,000 eager members
    // would need more descriptors than this machine allows (20,000).
    let eager_started = Instant::now();
    let listings = RememberedListings::file(&file).unwrap();
    for (batch, chunk) in urls.chunks(BATCH).enumerate() {
        let stack = EstablishBuilder::new(Connector::new()).build();
        let eager = group_with(listings.clone());
        for (i, url) in chunk.iter().enumerate() {
            eager
                .add(member(&stack, url, batch * BATCH + i, false))
                .unwrap();
        }
        eager.settled().await;
        while listings.len() < batch * BATCH + chunk.len() {
            assert!(
                eager_started.elapsed() < Duration::from_secs(600),
                "never all listed"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        eager.shutdown().await;
    }
    // One batch: the time a lazy start saves. More: not comparable.
    let eager_ms = (n <= BATCH).then(|| ms(eager_started.elapsed()));
    listings.save().await.unwrap();
    let stack = EstablishBuilder::new(Connector::new()).build();

    let started = Instant::now();
    let lazy = group_with(RememberedListings::file(&file).unwrap());
    for (i, url) in urls.iter().enumerate() {
        lazy.add(member(&stack, url, i, true)).unwrap();
    }
    while lazy.catalogue().tools().len() < 4 * n {
        tokio::task::yield_now().await;
    }
    let lazy_ms = ms(started.elapsed());
    let idle = lazy
        .healths()
        .iter()
        .all(|(_, h)| h.state == HealthState::Idle);
    assert!(idle, "a lazy member connected");
    lazy.shutdown().await;

    let urls_file = dir.join(format!(
        "mcp-connect-bench-lazy-urls-{}-{n}",
        std::process::id()
    ));
    std::fs::write(&urls_file, urls.join("\n")).unwrap();
    let memory = crate::child_json(&[
        "lazy-memory",
        file.to_str().unwrap(),
        urls_file.to_str().unwrap(),
    ])
    .await;
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&urls_file);
    drop(child);
    json!({
        "metric": "lazy start from remembered listings",
        "servers": n, "lazy_complete_catalogue_ms": lazy_ms, "connections": 0,
        "eager_ready_ms": eager_ms, "floor": "no connection",
        "rss_per_lazy_member_bytes": memory["rss_per_member"],
    })
}

/// The child: RSS growth per lazy member, after 10 warm-up members.
pub async fn memory(listings_file: &str, urls_file: &str) {
    let urls: Vec<String> = std::fs::read_to_string(urls_file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let stack = EstablishBuilder::new(Connector::new()).build();
    let group = group_with(RememberedListings::file(listings_file).unwrap());
    for (i, url) in urls.iter().enumerate().take(10) {
        group.add(member(&stack, url, i, true)).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = crate::rss_and_fds().0;
    for (i, url) in urls.iter().enumerate().skip(10) {
        group.add(member(&stack, url, i, true)).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = crate::rss_and_fds().0;
    assert_eq!(group.catalogue().tools().len(), 4 * urls.len());
    let per = (after - before) / (urls.len() - 10) as f64;
    println!("{}", json!({ "rss_per_member": per }));
    std::process::exit(0);
}
