//! `rtt`: establishment and first-result time on an emulated link, in
//! round trips, for this client and the peers' clients against real
//! servers.
//!
//! Each (server, client) pair runs through two [links](crate::link) in
//! front of the same server: one with a one-way delay `d` (a round trip of
//! `2d`), one with none. The time through the delayed link minus the time
//! through the undelayed one, divided by the round trip, is what the
//! client paid the network: its own processing and the server's cancel
//! out, so the figure is stable across machines. Medians of `runs` runs
//! after one warm-up; connections are counted at the delayed link.
//!
//! Servers: server-everything 2026.8.31 (2025 only, TypeScript SDK v1) and
//! the Python SDK 2.3 server (2026-07-28), once without caching hints and
//! once with `ttlMs` on every cacheable result (public). Clients, each at
//! its documented or best configuration: this one with a cold client (a
//! new connector per run: new connections), warm (one connector), with a
//! warm era cache (on the hinted server that is the remembered discover);
//! rmcp 3.11 with one pooled reqwest client in its auto and initialize
//! modes; the TypeScript SDK v2 client in its default mode (2025 only), in
//! auto mode and with `prior` (the discover result of a warm-up); the
//! Python SDK `Client` in auto mode and with `prior_discover`. The peers'
//! clients are scripts (`bench/peers/`) run in one process per
//! configuration, warm, building a new client per run as their docs show.
//!
//! Over TLS the same pairs run with the testkit's TLS fixture (a private CA
//! made at start, TLS 1.3, HTTP/1.1 by ALPN since the peers speak only
//! that) between the link and the server, so a new connection pays its TCP
//! and its TLS handshake on the link. Every client trusts the fixture's CA
//! the way its platform does: ours and rmcp's reqwest by adding the
//! certificate, node by `NODE_EXTRA_CA_CERTS`, Python's httpx by
//! `SSL_CERT_FILE`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcp_connect::era_cache::EraCache;
use mcp_connect::testkit::{TlsFixture, TlsServe};
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{json, Value};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::link::Link;

fn peers() -> PathBuf {
    std::env::var_os("MCP_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/peers")))
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path)
}

/// A peer server process on a loopback port, killed when dropped.
struct PeerServer {
    name: &'static str,
    _child: Child,
    addr: SocketAddr,
    /// Whether its results carry `ttlMs`.
    hinted: bool,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start(name: &'static str, mut command: Command, port: u16, hinted: bool) -> PeerServer {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{name} starts (are the peers installed? .ci/install-peers.sh): {e}")
        });
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(Instant::now() < deadline, "{name} did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    PeerServer {
        name,
        _child: child,
        addr,
        hinted,
    }
}

async fn everything() -> PeerServer {
    let port = free_port();
    let mut command = Command::new("node");
    command
        .arg("--require")
        .arg(repo("tests/peers/loopback.cjs"))
        .arg(
            peers().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        )
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    start("server-everything (2025)", command, port, false).await
}

async fn python(hinted: bool) -> PeerServer {
    let port = free_port();
    let mut command = Command::new(peers().join("venv/bin/python"));
    command
        .arg(repo("tests/peers/python_server.py"))
        .args(["streamable-http", &port.to_string()]);
    if hinted {
        command.env("MCP_PEER_CACHE_TTL_MS", "600000");
    }
    let name = if hinted {
        "Python SDK (2026), ttlMs"
    } else {
        "Python SDK (2026)"
    };
    start(name, command, port, hinted).await
}

/// One client configuration.
#[derive(Clone, Copy, Debug)]
enum Contender {
    OursCold,
    Ours,
    OursEraCache,
    RmcpAuto,
    RmcpInitialize,
    TypeScript(&'static str),
    Python(&'static str),
}

impl Contender {
    fn name(self, hinted: bool) -> String {
        match self {
            Contender::OursCold => "this, cold client (new connections)".into(),
            Contender::Ours => "this, warm client".into(),
            Contender::OursEraCache if hinted => "this, remembered discover".into(),
            Contender::OursEraCache => "this, era cache".into(),
            Contender::RmcpAuto => "rmcp 3.11, auto, pooled".into(),
            Contender::RmcpInitialize => "rmcp 3.11, initialize, pooled".into(),
            Contender::TypeScript(mode) => format!("TypeScript SDK v2 client, {mode}"),
            Contender::Python(mode) => format!("Python SDK 2.3 Client, {mode}"),
        }
    }

    fn path(self, hinted: bool) -> &'static str {
        match self {
            Contender::OursCold => "cold",
            Contender::Ours | Contender::RmcpAuto => "auto",
            Contender::OursEraCache if hinted => "remembered-discover",
            Contender::OursEraCache => "era-cache",
            Contender::RmcpInitialize => "initialize",
            Contender::TypeScript(mode) | Contender::Python(mode) => mode,
        }
    }
}

/// Establishment and first-result times of one run, in milliseconds.
#[derive(Clone, Copy)]
struct Timing {
    establish: f64,
    first: f64,
}

/// The call every run makes (both peers have `echo`).
fn tool() -> (&'static str, Value) {
    ("echo", json!({ "message": "rtt" }))
}

/// `runs` timed runs (after one warm-up) of `contender` against `url`.
async fn measure(contender: Contender, url: &str, runs: usize, tls: Option<&Trust>) -> Vec<Timing> {
    let (name, arguments) = tool();
    match contender {
        Contender::TypeScript(mode) => {
            return Script::typescript()
                .run(url, mode, runs, name, &arguments, tls)
                .await
        }
        Contender::Python(mode) => {
            return Script::python()
                .run(url, mode, runs, name, &arguments, tls)
                .await
        }
        _ => {}
    }
    let shared = connector(tls);
    let era_cache = EraCache::new();
    let reqwest = match tls {
        Some(trust) => reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(trust.pem.as_bytes()).unwrap())
            .build()
            .unwrap(),
        None => reqwest::Client::new(),
    };
    let mut timings = Vec::new();
    for run in 0..=runs {
        let start = Instant::now();
        let timing = match contender {
            Contender::OursCold | Contender::Ours | Contender::OursEraCache => {
                let connector = match contender {
                    Contender::OursCold => connector(tls),
                    _ => shared.clone(),
                };
                let mut request = ConnectRequest::http(url).unwrap();
                if matches!(contender, Contender::OursEraCache) {
                    request = request.with_era_cache(era_cache.clone());
                }
                let session = connector.connect(request).await.expect("ours establishes");
                let establish = start.elapsed();
                let result = session
                    .call_tool(name, &arguments)
                    .await
                    .expect("ours calls");
                assert!(!result.is_error);
                let first = start.elapsed();
                let _ = session.close().await;
                (establish, first)
            }
            Contender::RmcpAuto | Contender::RmcpInitialize => {
                let config = StreamableHttpClientTransportConfig::with_uri(url);
                let transport = StreamableHttpClientTransport::with_client(reqwest.clone(), config);
                let (config, mode) = match contender {
                    Contender::RmcpInitialize => (
                        ClientConfig::default()
                            .with_protocol_version(ProtocolVersion::V_2025_11_25),
                        ClientLifecycleMode::Initialize,
                    ),
                    _ => (
                        ClientConfig::default(),
                        ClientLifecycleMode::Auto {
                            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                            legacy_version: Some(ProtocolVersion::V_2025_11_25),
                        },
                    ),
                };
                let client = config
                    .serve_with_lifecycle(transport, mode)
                    .await
                    .expect("rmcp establishes");
                let establish = start.elapsed();
                let arguments = arguments.as_object().cloned().unwrap();
                let result = client
                    .call_tool(CallToolRequestParams::new(name).with_arguments(arguments))
                    .await
                    .expect("rmcp calls");
                assert_ne!(result.is_error, Some(true));
                let first = start.elapsed();
                let _ = client.cancel().await;
                (establish, first)
            }
            Contender::TypeScript(_) | Contender::Python(_) => unreachable!(),
        };
        if run > 0 {
            timings.push(Timing {
                establish: timing.0.as_secs_f64() * 1000.0,
                first: timing.1.as_secs_f64() * 1000.0,
            });
        }
    }
    timings
}

/// The fixture's CA, as each client is given it.
struct Trust {
    pem: String,
    file: PathBuf,
}

/// A new connector, trusting the fixture's CA over TLS.
fn connector(tls: Option<&Trust>) -> Connector {
    match tls {
        Some(trust) => Connector::with_client(
            HttpClient::builder()
                .add_root_certificates_pem(trust.pem.as_bytes())
                .unwrap()
                .build(),
        ),
        None => Connector::new(),
    }
}

async fn lines(mut command: Command, what: &str) -> Vec<Timing> {
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .await
        .unwrap_or_else(|e| panic!("{what} runs: {e}"));
    assert!(output.status.success(), "{what} failed");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let value: Value =
                serde_json::from_str(line).unwrap_or_else(|_| panic!("{what}: {line}"));
            Timing {
                establish: value["establish_ms"].as_f64().unwrap(),
                first: value["first_result_ms"].as_f64().unwrap(),
            }
        })
        .collect()
}

/// A peer's client script: `program script URL MODE RUNS TOOL ARGS`, the
/// fixture's CA in `ca_variable` over TLS.
struct Script {
    program: PathBuf,
    script: PathBuf,
    ca_variable: &'static str,
    what: &'static str,
}

impl Script {
    fn typescript() -> Script {
        // The script resolves the SDK from its own folder.
        let script = peers().join("node-client/ts_client.mjs");
        std::fs::copy(
            concat!(env!("CARGO_MANIFEST_DIR"), "/peers/ts_client.mjs"),
            &script,
        )
        .expect("the TypeScript client is installed (.ci/install-peers.sh)");
        Script {
            program: "node".into(),
            script,
            ca_variable: "NODE_EXTRA_CA_CERTS",
            what: "the TypeScript SDK client",
        }
    }

    fn python() -> Script {
        Script {
            program: peers().join("venv/bin/python"),
            script: concat!(env!("CARGO_MANIFEST_DIR"), "/peers/py_client.py").into(),
            ca_variable: "SSL_CERT_FILE",
            what: "the Python SDK client",
        }
    }

    async fn run(
        self,
        url: &str,
        mode: &str,
        runs: usize,
        tool: &str,
        arguments: &Value,
        tls: Option<&Trust>,
    ) -> Vec<Timing> {
        let mut command = Command::new(&self.program);
        command.arg(&self.script).args([
            url,
            mode,
            &runs.to_string(),
            tool,
            &arguments.to_string(),
        ]);
        if let Some(trust) = tls {
            command.env(self.ca_variable, &trust.file);
        }
        lines(command, self.what).await
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// One result row.
struct RttRow {
    server: &'static str,
    tls: bool,
    client: String,
    path: &'static str,
    establish: f64,
    first: f64,
    connections: f64,
}

impl RttRow {
    fn json(&self) -> String {
        json!({
            "kind": "rtt", "server": self.server, "client": self.client, "path": self.path,
            "link": if self.tls { "https" } else { "http" },
            "rtt_establish": (self.establish * 100.0).round() / 100.0,
            "rtt_first_result": (self.first * 100.0).round() / 100.0,
            "connections": (self.connections * 100.0).round() / 100.0,
        })
        .to_string()
    }
}

/// Ten concurrent first calls on a cold client: one new connector, one
/// session, ten `tools/call` at once. Round trips from the start, and the
/// connections opened.
async fn concurrent(
    server: &PeerServer,
    delayed: &Link,
    plain: &Link,
    runs: usize,
    rtt_ms: f64,
    tls: Option<&Trust>,
) -> RttRow {
    let (name, arguments) = tool();
    let mut times = [Vec::new(), Vec::new()];
    let before = delayed.connections();
    for _ in 0..runs {
        for (i, link) in [delayed, plain].into_iter().enumerate() {
            let start = Instant::now();
            let session = connector(tls)
                .connect(ConnectRequest::http(&link.url(tls.is_some(), "/mcp")).unwrap())
                .await
                .expect("ours establishes");
            let calls = (0..10).map(|_| session.call_tool(name, &arguments));
            for result in futures_util::future::join_all(calls).await {
                assert!(!result.expect("ours calls").is_error);
            }
            times[i].push(start.elapsed().as_secs_f64() * 1000.0);
            let _ = session.close().await;
        }
    }
    let [slow, fast] = times;
    RttRow {
        server: server.name,
        tls: tls.is_some(),
        client: "this, cold client, 10 concurrent first calls".into(),
        path: "cold-concurrent-10",
        establish: f64::NAN,
        first: (median(slow) - median(fast)) / rtt_ms,
        connections: (delayed.connections() - before) as f64 / runs as f64,
    }
}

pub async fn run(args: &[String]) {
    let quick = args.iter().any(|a| a == "--quick");
    let runs = if quick { 2 } else { 6 };
    let one_way = Duration::from_millis(if quick { 5 } else { 10 });
    let rtt_ms = one_way.as_secs_f64() * 2000.0;
    let servers = [everything().await, python(false).await, python(true).await];
    let fixture = TlsFixture::new();
    let trust = Trust {
        pem: fixture.ca_pem(),
        file: std::env::temp_dir().join(format!("mcp-connect-rtt-ca-{}.pem", std::process::id())),
    };
    std::fs::write(&trust.file, &trust.pem).unwrap();
    let mut rows = Vec::new();
    for tls in [None, Some(&trust)] {
        for server in &servers {
            if tls.is_some() && server.name == "Python SDK (2026)" {
                // Over TLS, the hinted copy stands for the Python server.
                continue;
            }
            rows.extend(pairs(server, tls, &fixture, one_way, runs, rtt_ms).await);
        }
    }
    let _ = std::fs::remove_file(&trust.file);
    let table = markdown(&rows, rtt_ms, runs);
    println!("{table}");
    if !quick {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::write(dir.join("rtt.md"), &table).unwrap();
        let kept = std::fs::read_to_string(dir.join("results.jsonl")).unwrap_or_default();
        let mut jsonl: String = kept
            .lines()
            .filter(|line| !line.contains("\"kind\":\"rtt\""))
            .map(|line| format!("{line}\n"))
            .collect();
        jsonl.extend(rows.iter().map(|row| row.json() + "\n"));
        std::fs::write(dir.join("results.jsonl"), jsonl).unwrap();
    }
}

/// Every contender against `server`, over plain HTTP or TLS.
async fn pairs(
    server: &PeerServer,
    tls: Option<&Trust>,
    fixture: &TlsFixture,
    one_way: Duration,
    runs: usize,
    rtt_ms: f64,
) -> Vec<RttRow> {
    // TLS terminates between the link and the server.
    let front = match tls {
        Some(_) => Some(
            fixture
                .front(server.addr, TlsServe::default())
                .await
                .unwrap(),
        ),
        None => None,
    };
    let upstream = match &front {
        Some(front) => front.addr(),
        None => server.addr,
    };
    let legacy_only = server.name.starts_with("server-everything");
    let mut contenders = vec![
        Contender::OursCold,
        Contender::Ours,
        Contender::OursEraCache,
        Contender::RmcpAuto,
        Contender::RmcpInitialize,
        Contender::TypeScript("default"),
        Contender::TypeScript("auto"),
        Contender::Python("auto"),
    ];
    if !legacy_only {
        contenders.push(Contender::TypeScript("prior"));
        contenders.push(Contender::Python("prior"));
    }
    let mut rows = Vec::new();
    for contender in contenders {
        // Fresh links per pair: each starts with no connection.
        let delayed = Link::start(upstream, one_way).await;
        let plain = Link::start(upstream, Duration::ZERO).await;
        let secure = tls.is_some();
        let slow = measure(contender, &delayed.url(secure, "/mcp"), runs, tls).await;
        let opened = delayed.connections();
        let fast = measure(contender, &plain.url(secure, "/mcp"), runs, tls).await;
        let of =
            |timings: &[Timing], f: fn(&Timing) -> f64| median(timings.iter().map(f).collect());
        let row = RttRow {
            server: server.name,
            tls: secure,
            client: contender.name(server.hinted),
            path: contender.path(server.hinted),
            establish: (of(&slow, |t| t.establish) - of(&fast, |t| t.establish)) / rtt_ms,
            first: (of(&slow, |t| t.first) - of(&fast, |t| t.first)) / rtt_ms,
            // The warm-up run's connections included: what the runs
            // needed, per run.
            connections: opened as f64 / (runs + 1) as f64,
        };
        eprintln!("{}", row.json());
        rows.push(row);
    }
    let delayed = Link::start(upstream, one_way).await;
    let plain = Link::start(upstream, Duration::ZERO).await;
    let row = concurrent(server, &delayed, &plain, runs, rtt_ms, tls).await;
    eprintln!("{}", row.json());
    rows.push(row);
    rows
}

fn markdown(rows: &[RttRow], rtt_ms: f64, runs: usize) -> String {
    let mut out = format!(
        "Round trips on an emulated {rtt_ms:.0} ms link (time over the link minus time over the same relay with no delay, \
         divided by the round trip; median of {runs} runs after a warm-up; a new TCP connection costs one round trip).\n\n\
         | link | server | client | establish (RTT) | first result (RTT) | connections per run |\n|---|---|---|---|---|---|\n"
    );
    for row in rows {
        let establish = if row.establish.is_nan() {
            "-".to_owned()
        } else {
            format!("{:.1}", row.establish)
        };
        out += &format!(
            "| {} | {} | {} | {} | {:.1} | {:.2} |\n",
            if row.tls { "https" } else { "http" },
            row.server,
            row.client,
            establish,
            row.first,
            row.connections
        );
    }
    out
}
