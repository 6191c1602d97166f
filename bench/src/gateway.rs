//! Issue 66: a `tools/call` forwarded by the gateway against the same call
//! made directly, on loopback.
//!
//! The member is the demo server (hyper, JSON replies), in this process;
//! the gateway is mounted in a hyper server in this process too, so the
//! added latency is the gateway's work and one more loopback round trip.
//! Each figure: `n` sequential calls for p50 and p99 (after a warm-up),
//! then calls from 100 concurrent tasks on one session for a fixed time
//! (throughput), then the RSS growth per 2025 session opened and left
//! idle (2,000 `initialize`s, no `DELETE`).
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- gateway [--quick]
//! ```

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_connect::demo::DemoServer;
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, Session};
use mcp_connect_gateway::Gateway;
use serde_json::json;
use tokio::time::Instant;
use tower_service::Service as _;

use crate::stats::{ms, percentile};

/// Serves `gateway` at `/mcp` on loopback.
async fn mount(gateway: Gateway) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            // As `serve` does: events are small writes (see docs/GATEWAY.md).
            let _ = stream.set_nodelay(true);
            let gateway = gateway.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let mut gateway = gateway.clone();
                    async move { gateway.call(request).await }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

async fn session(url: &str) -> Session {
    let request = ConnectRequest::http(url)
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    Connector::new().connect(request).await.unwrap()
}

/// p50 and p99 of `n` sequential calls of `tool`, in ms.
async fn latencies(session: &Session, tool: &str, n: usize) -> (f64, f64) {
    let arguments = json!({ "a": 1, "b": 2 });
    for _ in 0..n / 10 {
        session.call_tool(tool, &arguments).await.unwrap();
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        session.call_tool(tool, &arguments).await.unwrap();
        samples.push(ms(started.elapsed()));
    }
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
}

/// Calls per second from 100 concurrent tasks on one session.
async fn throughput(session: Arc<Session>, tool: &'static str, run_for: Duration) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + run_for;
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let (session, done) = (Arc::clone(&session), Arc::clone(&done));
            tokio::spawn(async move {
                let arguments = json!({ "a": 1, "b": 2 });
                while Instant::now() < until {
                    session.call_tool(tool, &arguments).await.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / run_for.as_secs_f64()
}

fn rss() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: f64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096.0
}

/// RSS growth per 2025 session opened at the gateway and left idle.
async fn per_idle_session(addr: SocketAddr, n: usize) -> f64 {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "bench", "version": "1" } } })
    .to_string();
    let open = |client: &hyper_util::client::legacy::Client<_, Full<Bytes>>| {
        let request = http::Request::post(format!("http://{addr}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(body.clone())))
            .unwrap();
        client.request(request)
    };
    for _ in 0..100 {
        let response = open(&client).await.unwrap();
        response.into_body().collect().await.unwrap();
    }
    let before = rss();
    for _ in 0..n {
        let response = open(&client).await.unwrap();
        assert!(response.headers().contains_key("mcp-session-id"));
        response.into_body().collect().await.unwrap();
    }
    (rss() - before) / n as f64
}

/// `gateway [--quick]`: one JSON line of figures.
pub async fn run(args: &[String]) {
    let quick = args.iter().any(|a| a == "--quick");
    let (n, run_for) = match quick {
        true => (200, Duration::from_millis(500)),
        false => (5_000, Duration::from_secs(5)),
    };
    let demo = DemoServer::start().await.unwrap();
    let stack = EstablishBuilder::new(Connector::new()).build();
    let group = ServerGroup::new();
    let member = ConnectRequest::http(&demo.url()).unwrap().with_name("demo");
    group.add(Server::new(stack, member)).unwrap();
    group.settled().await;
    let addr = mount(
        Gateway::builder(group.clone())
            .max_sessions(1_000_000)
            .build(),
    )
    .await;

    let direct = session(&demo.url()).await;
    let forwarded = session(&format!("http://{addr}/mcp")).await;
    let (direct_p50, direct_p99) = latencies(&direct, "add", n).await;
    let (gateway_p50, gateway_p99) = latencies(&forwarded, "add", n).await;
    let direct_rate = throughput(Arc::new(direct), "add", run_for).await;
    let gateway_rate = throughput(Arc::new(forwarded), "add", run_for).await;
    let per_session = per_idle_session(addr, if quick { 200 } else { 2_000 }).await;
    let row = json!({
        "bench": "gateway",
        "calls": n,
        "direct_p50_ms": direct_p50, "direct_p99_ms": direct_p99,
        "gateway_p50_ms": gateway_p50, "gateway_p99_ms": gateway_p99,
        "added_p50_ms": gateway_p50 - direct_p50, "added_p99_ms": gateway_p99 - direct_p99,
        "direct_calls_per_s": direct_rate, "gateway_calls_per_s": gateway_rate,
        "throughput_ratio": gateway_rate / direct_rate,
        "rss_per_idle_session_bytes": per_session,
    });
    println!("{row}");
    if !quick {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/gateway.jsonl");
        std::fs::write(path, format!("{row}\n")).unwrap();
    }
    group.shutdown().await;
}
