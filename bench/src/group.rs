//! Issue 26: a group of many servers against its slowest member alone.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- group [--servers 100] [--runs 5] [--quick]
//! ```
//!
//! The servers run in a child process: legacy Streamable HTTP servers on
//! 127.0.0.1 (testkit scripts that list four tools), server *i* delaying
//! every answer by `max_delay * i / (n - 1)`, an emulated link from 0 to
//! `max_delay` per round trip, so one server is clearly the slowest. Each
//! run measures, in this order:
//!
//! - **slowest single**: every server established alone, one after the
//!   other (the default stack, as a member gets it, with a notification
//!   listener, which opens the
//!   standalone stream as a group member does, then `tools/list`: the work
//!   a member does before it is ready); the slowest of them;
//! - **hand-written**: all of them at once with `join_all` over the same
//!   work, what an application writes without a group;
//! - **group**: a `ServerGroup` of all of them, from the first `add` until
//!   the last is ready (catalogue built, health published).
//!
//! The physical floor is the slowest server's round trips times its delay
//! (the number of round trips counted on an undelayed copy). Memory per
//! idle server is RSS growth per member of a ready, idle group in a fresh
//! process, beside the same for bare `McpClient`s established at once (the
//! same allocator traffic as a group) and one by one (which packs the heap
//! tighter: the difference is the allocator's, not the group's). The link is emulated with 0 ms as well, where the client's CPU
//! is all there is: there 100 establishments on two cores cannot be
//! within 1.2x of one, and the row says so.

use std::process::Stdio;
use std::time::Duration;

use futures_util::future::join_all;
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::inbound::notification_channel;
use mcp_connect::testkit::{error, result, Recorded, Script, ScriptServer};
use mcp_connect::{ConnectRequest, Connector, Establish, EstablishBuilder, McpClient};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;

use crate::stats::{ms, Across};

/// Answers like a 2025 server that lists four tools, after `delay`.
fn scripted(delay: Duration) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request| {
        let answer = match request.rpc_method() {
            "server/discover" => Script::Json(400, error(request, -32000, None)),
            "initialize" => Script::JsonWith(
                200,
                result(
                    request,
                    json!({
                        "protocolVersion": request.body["params"]["protocolVersion"],
                        "capabilities": { "tools": { "listChanged": true } },
                        "serverInfo": { "name": "bench", "version": "1" }
                    }),
                ),
                vec![("mcp-session-id", format!("s-{}", request.seq()))],
            ),
            "tools/list" => {
                let tools: Vec<_> = ["read", "write", "search", "list"]
                    .iter()
                    .map(|name| json!({ "name": name, "inputSchema": { "type": "object" } }))
                    .collect();
                Script::Json(200, result(request, json!({ "tools": tools })))
            }
            "tools/call" => Script::Json(
                200,
                result(
                    request,
                    json!({ "content": [{ "type": "text", "text": "done" }] }),
                ),
            ),
            "" if request.method == http::Method::GET => Script::Status(405),
            "" => Script::Status(200),
            _ => Script::Status(202),
        };
        if delay.is_zero() {
            answer
        } else {
            Script::Delayed(delay, Box::new(answer))
        }
    }
}

fn delay_of(i: usize, n: usize, max_delay: Duration) -> Duration {
    if n < 2 {
        return max_delay;
    }
    max_delay * i as u32 / (n as u32 - 1)
}

/// The child: `n` servers, their URLs printed one a line, until stdin
/// closes.
pub async fn serve(n: usize, max_delay_ms: u64) {
    let max_delay = Duration::from_millis(max_delay_ms);
    let mut servers = Vec::new();
    for i in 0..n {
        let server = ScriptServer::start(scripted(delay_of(i, n, max_delay))).await;
        println!("{}", server.url());
        servers.push(server);
    }
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = stdin.next_line().await {}
}

/// The servers' child process and their URLs.
pub(crate) async fn servers(n: usize, max_delay_ms: u64) -> (tokio::process::Child, Vec<String>) {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["group-servers", &n.to_string(), &max_delay_ms.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("servers");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut urls = Vec::new();
    while urls.len() < n {
        urls.push(lines.next_line().await.unwrap().expect("a URL per server"));
    }
    (child, urls)
}

/// What a member does before it is ready, done by hand: establish with a
/// listener (the standalone stream is opened), list the tools.
pub(crate) async fn ready(stack: &Establish, url: &str) -> mcp_connect::Session {
    let (listener, _notifications) = notification_channel(64);
    let request = ConnectRequest::http(url)
        .unwrap()
        .with_notifications(listener);
    let session = stack.connect(request).await.expect("establishes");
    session.list_tools().await.expect("lists");
    session
}

/// One server alone: the time until it is ready (its close is not timed).
async fn single(stack: &Establish, url: &str) -> Duration {
    let started = Instant::now();
    let session = ready(stack, url).await;
    let took = started.elapsed();
    session.close().await.expect("closes");
    took
}

pub(crate) async fn group_ready(urls: &[String]) -> Duration {
    let stack = EstablishBuilder::new(Connector::new()).build();
    let group = ServerGroup::new();
    let started = Instant::now();
    for (i, url) in urls.iter().enumerate() {
        let request = ConnectRequest::http(url)
            .unwrap()
            .with_name(format!("s{i:03}"));
        group.add(Server::new(stack.clone(), request)).unwrap();
    }
    // Ready means listed: the time to a complete catalogue (4 tools a
    // server), watched as it is published, not polled.
    let mut catalogues = group.catalogue_changes();
    let complete = catalogues.wait_for(|catalogue| catalogue.tools().len() == 4 * urls.len());
    let _ = tokio::time::timeout(Duration::from_secs(10), complete).await;
    let took = started.elapsed();
    assert!(
        group.healths().iter().all(|(_, h)| h.state.is_usable()),
        "every server ready"
    );
    let catalogue = group.catalogue();
    if catalogue.tools().len() != 4 * urls.len() {
        let mut per_server = std::collections::BTreeMap::<&str, usize>::new();
        for tool in catalogue.tools() {
            *per_server.entry(&tool.server).or_default() += 1;
        }
        for (name, health) in group.healths() {
            if per_server.get(&*name).copied().unwrap_or(0) != 4 {
                eprintln!(
                    "{name}: {:?}, tools {:?}, last error {:?}, left out {}",
                    health,
                    per_server.get(&*name),
                    group
                        .last_error(&name)
                        .map(|e| mcp_connect::layers::Classify::failure(&*e)),
                    catalogue.left_out().len()
                );
            }
        }
        panic!("{} tools of {}", catalogue.tools().len(), 4 * urls.len());
    }
    group.shutdown().await;
    took
}

/// Round trips of one member's work, counted on an undelayed server.
async fn round_trips() -> usize {
    let server = ScriptServer::start(scripted(Duration::ZERO)).await;
    single(
        &EstablishBuilder::new(Connector::new()).build(),
        &server.url(),
    )
    .await;
    // The DELETE of the close is not part of being ready.
    server
        .recorded()
        .iter()
        .filter(|r| r.method != http::Method::DELETE)
        .count()
}

/// The child: RSS growth per idle member of a group (`which` = `group`) or
/// per bare `McpClient` (`clients`), after 10 warm-up members.
pub async fn memory(which: &str, urls_file: &str) {
    let urls: Vec<String> = std::fs::read_to_string(urls_file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let (warm, measured) = urls.split_at(10);
    let stack = EstablishBuilder::new(Connector::new()).build();
    let group = ServerGroup::new();
    let mut clients = Vec::new();
    let add = |url: &String, i: usize, clients: &mut Vec<McpClient>| {
        let request = ConnectRequest::http(url)
            .unwrap()
            .with_name(format!("s{i:03}"));
        if which == "group" {
            group.add(Server::new(stack.clone(), request)).unwrap();
        } else {
            let (listener, notifications) = notification_channel(64);
            std::mem::forget(notifications);
            clients.push(
                McpClient::builder(stack.clone(), request.with_notifications(listener)).build(),
            );
        }
    };
    let one_by_one = which == "clients-one-by-one";
    let settle = |clients: &[McpClient]| {
        let clients = clients.to_vec();
        let group = group.clone();
        async move {
            group.settled().await;
            if one_by_one {
                for client in &clients {
                    client.list_tools().await.unwrap();
                }
            } else {
                // At once, as a group establishes: the same allocator traffic.
                join_all(clients.iter().map(|client| client.list_tools())).await;
            }
        }
    };
    for (i, url) in warm.iter().enumerate() {
        add(url, i, &mut clients);
    }
    settle(&clients).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = crate::rss_and_fds().0;
    for (i, url) in measured.iter().enumerate() {
        add(url, warm.len() + i, &mut clients);
    }
    settle(&clients).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = crate::rss_and_fds().0;
    println!(
        "{}",
        json!({ "rss_per_server": (after - before) / measured.len() as f64 })
    );
    std::process::exit(0);
}

struct Measured {
    slowest: Vec<f64>,
    sum: Vec<f64>,
    by_hand: Vec<f64>,
    group: Vec<f64>,
}

async fn measure(urls: &[String], runs: usize) -> Measured {
    // The stack a group member gets by default: the same work.
    let connector = EstablishBuilder::new(Connector::new()).build();
    // Warm-up: code paths, the pool, the allocator.
    for url in urls.iter().take(5) {
        single(&connector, url).await;
    }
    let mut measured = Measured {
        slowest: vec![],
        sum: vec![],
        by_hand: vec![],
        group: vec![],
    };
    for _ in 0..runs {
        let mut singles = Vec::new();
        for url in urls {
            singles.push(ms(single(&connector, url).await));
        }
        measured
            .slowest
            .push(singles.iter().copied().fold(0.0, f64::max));
        measured.sum.push(singles.iter().sum());
        let started = Instant::now();
        let sessions = join_all(urls.iter().map(|url| ready(&connector, url))).await;
        measured.by_hand.push(ms(started.elapsed()));
        join_all(sessions.iter().map(|session| session.close())).await;
        measured.group.push(ms(group_ready(urls).await));
    }
    measured
}

fn ratios(a: &[f64], b: &[f64]) -> Across {
    let per_run: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
    Across::of(&per_run)
}

fn across(label: &str, value: Across) -> serde_json::Value {
    json!({ label: value.median, format!("{label}_min"): value.min, format!("{label}_max"): value.max })
}

/// The parent: every measurement, one JSON line per link, then memory;
/// written to `bench/group.jsonl` unless quick.
pub async fn run(args: &[String]) {
    let value = |name: &str, default: usize| crate::flags::value(args, name).unwrap_or(default);
    let quick = args.iter().any(|a| a == "--quick");
    let n = value("--servers", if quick { 30 } else { 100 });
    let runs = value("--runs", if quick { 2 } else { 5 });
    let trips = round_trips().await;
    let mut lines = Vec::new();
    for max_delay_ms in [20u64, 0] {
        let (child, urls) = servers(n, max_delay_ms).await;
        let m = measure(&urls, runs).await;
        let floor = (trips as u64 * max_delay_ms) as f64;
        let mut line = json!({
            "metric": "group ready vs slowest single",
            "servers": n, "runs": runs, "link_ms_max": max_delay_ms,
            "round_trips_per_server": trips, "floor_ms": floor,
        });
        for (label, values) in [
            ("slowest_single_ms", &m.slowest),
            ("sum_of_singles_ms", &m.sum),
            ("by_hand_ms", &m.by_hand),
            ("group_ms", &m.group),
        ] {
            merge(&mut line, across(label, Across::of(values)));
        }
        let ratio = ratios(&m.group, &m.slowest);
        merge(&mut line, across("group_vs_slowest", ratio));
        merge(
            &mut line,
            across("group_vs_by_hand", ratios(&m.group, &m.by_hand)),
        );
        line["goal_1_2x_met"] = json!(ratio.max <= 1.2);
        println!("{line}");
        lines.push(line);
        drop(child);
    }
    // Memory: a fresh process per kind, the servers undelayed.
    let (child, urls) = servers(n.max(20), 0).await;
    let file = std::env::temp_dir().join(format!("mcp-connect-bench-group-{}", std::process::id()));
    std::fs::write(&file, urls.join("\n")).unwrap();
    let mut memory = json!({ "metric": "memory per idle server", "servers": urls.len() - 10 });
    for which in ["group", "clients", "clients-one-by-one"] {
        let value = crate::child_json(&["group-memory", which, file.to_str().unwrap()]).await;
        memory[format!("{}_bytes", which.replace('-', "_"))] = value["rss_per_server"].clone();
    }
    std::fs::remove_file(&file).unwrap();
    drop(child);
    println!("{memory}");
    lines.push(memory);
    if !quick {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/group.jsonl"), text).unwrap();
    }
}

fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
    if let (Some(into), serde_json::Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
}
