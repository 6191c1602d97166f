//! Issue 27, item 1, through a real proxy: tinyproxy (Debian's package),
//! one per test on a loopback port, Basic authentication on. Both eras and
//! the legacy SSE transport, `http://` targets as absolute-form requests and
//! `https://` ones through a `CONNECT` tunnel to the TLS fixture; the
//! environment's variables read by the command; a wrong password typed
//! after one attempt; credentials only where they belong.
//!
//! Ignored in the plain test run (tinyproxy is an installed component);
//! CI installs it and runs `cargo test -p mcp-connect-cli --test installed -- --ignored proxy::`, and a
//! missing tinyproxy fails these tests, never skips them.

#![cfg(feature = "rustls")]

use crate::support;

use std::process::Command;
use std::time::Duration;

use mcp_connect::auth::Authorization;
use mcp_connect::demo::DemoServer;
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::request::TransportMode;
use mcp_connect::testkit::{SseBehaviour, SseServer, TlsFixture, TlsFront, TlsServe};
use mcp_connect::transport::{HttpClient, Proxy, ProxyError, TransportKind};
use mcp_connect::{ConnectRequest, Connector, ErrorKind, Session};
use serde_json::{json, Value};

use support::proxy::{Relay, Tinyproxy, PASSWORD};
use support::watchdog;

const LIMIT: Duration = Duration::from_secs(30);
const NEEDS: &str = "needs tinyproxy (apt-get install tinyproxy); CI runs it";
/// What the origin gets as its own credentials; never in the proxy's view
/// of an https target.
const ORIGIN_TOKEN: &str = "canary-origin-token";

fn client(proxy: &str, fixture: &TlsFixture) -> HttpClient {
    HttpClient::builder()
        .proxy(Proxy::url(proxy).unwrap())
        .add_root_certificates_pem(fixture.ca_pem().as_bytes())
        .unwrap()
        .build()
}

async fn connect(client: &HttpClient, request: ConnectRequest) -> Session {
    watchdog(
        LIMIT,
        Connector::with_client(client.clone()).connect(request),
    )
    .await
    .expect("established through the proxy")
}

async fn add(session: &Session) {
    let sum = session
        .call_tool("add", &json!({ "a": 20, "b": 22 }))
        .await
        .unwrap();
    assert_eq!(sum.text(), "42");
}

/// Both eras of the demo server at `url`, each calling a tool.
async fn both_eras(client: &HttpClient, url: &str) {
    let request = || {
        ConnectRequest::http(url)
            .unwrap()
            .with_header("authorization", &format!("Bearer {ORIGIN_TOKEN}"))
            .unwrap()
    };
    let modern = connect(client, request()).await;
    assert_eq!(modern.era(), Era::Modern);
    add(&modern).await;
    modern.close().await.unwrap();
    let legacy = connect(client, request().with_pin(ProtocolVersion::V2025_11_25)).await;
    assert_eq!(legacy.era(), Era::Legacy);
    add(&legacy).await;
    legacy.close().await.unwrap();
}

/// The legacy SSE server behind the fixture's TLS.
async fn behind_tls(fixture: &TlsFixture, sse: &SseServer) -> TlsFront {
    let addr = sse
        .url()
        .trim_start_matches("http://")
        .trim_end_matches("/sse")
        .parse()
        .unwrap();
    fixture.front(addr, TlsServe::default()).await.unwrap()
}

async fn legacy_sse(client: &HttpClient, url: &str) {
    let request = ConnectRequest::http(url)
        .unwrap()
        .with_mode(TransportMode::Sse);
    let session = connect(client, request).await;
    assert_eq!(session.transport_kind(), TransportKind::Sse);
    let result = session.call_tool("x", &json!({})).await.unwrap();
    assert_eq!(result.text(), "over sse");
    session.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs tinyproxy (apt-get install tinyproxy); CI runs it"]
async fn http_targets_go_through_the_proxy_as_absolute_form_requests() {
    let _ = NEEDS;
    let proxy = Tinyproxy::start();
    let fixture = TlsFixture::new();
    let origin = DemoServer::start().await.unwrap();
    let sse = SseServer::start(SseBehaviour::default()).await;
    let client = client(&proxy.url(), &fixture);
    assert_eq!(
        client
            .proxy_for(&origin.url().parse().unwrap())
            .map(|p| p.to_string()),
        Some(proxy.address())
    );
    both_eras(&client, &origin.url()).await;
    legacy_sse(&client, &sse.url()).await;
    // tinyproxy closes a client connection after each response without
    // saying so: a request written onto a reused one would fail. None is
    // reused, so a long run of calls never does.
    let session = connect(&client, ConnectRequest::http(&origin.url()).unwrap()).await;
    for _ in 0..100 {
        add(&session).await;
    }
    session.close().await.unwrap();

    let requests = proxy.requests();
    assert!(
        requests.contains(&format!("POST {} HTTP/1.1", origin.url())),
        "{requests:?}"
    );
    let stream = sse.url();
    assert!(
        requests.contains(&format!("GET {stream} HTTP/1.1")),
        "{requests:?}"
    );
    assert!(origin.saw_header("authorization"));
    assert!(
        !origin.saw_header("proxy-authorization"),
        "the proxy's credentials never reach the origin"
    );
    assert!(!proxy.log().contains(PASSWORD));
}

#[tokio::test]
#[ignore = "needs tinyproxy (apt-get install tinyproxy); CI runs it"]
async fn https_targets_go_through_a_connect_tunnel_and_the_proxy_sees_only_ciphertext() {
    let proxy = Tinyproxy::start();
    // Every byte the proxy is sent, recorded on the way.
    let relay = Relay::start(proxy.addr()).await;
    let fixture = TlsFixture::new();
    let origin = fixture.serve(TlsServe::default()).await.unwrap();
    let sse = SseServer::start(SseBehaviour::default()).await;
    let sse_front = behind_tls(&fixture, &sse).await;
    let through_relay = format!("http://proxy-user:{PASSWORD}@{}", relay.addr());
    let client = client(&through_relay, &fixture);
    both_eras(&client, &origin.url()).await;
    legacy_sse(&client, &sse_front.url_for("/sse")).await;

    let port = origin
        .url()
        .trim_start_matches("https://127.0.0.1:")
        .trim_end_matches("/mcp")
        .to_owned();
    let requests = proxy.requests();
    assert!(
        requests.contains(&format!("CONNECT 127.0.0.1:{port} HTTP/1.1")),
        "{requests:?}"
    );
    assert!(
        requests.iter().all(|r| r.starts_with("CONNECT ")),
        "{requests:?}"
    );
    assert!(
        origin
            .negotiated()
            .iter()
            .all(|p| p.as_deref() == Some(b"h2")),
        "HTTP/2 by ALPN inside the tunnel"
    );
    assert!(sse_front.handshakes() > 0);
    assert!(origin.saw_header("authorization"));
    assert!(!origin.saw_header("proxy-authorization"));
    let seen = String::from_utf8_lossy(&relay.seen()).into_owned();
    assert!(
        seen.contains(&format!("CONNECT 127.0.0.1:{port} HTTP/1.1")),
        "the relay saw the tunnel"
    );
    assert!(
        !seen.contains(ORIGIN_TOKEN),
        "the origin's credentials crossed the proxy in clear"
    );
    assert!(!proxy.log().contains(ORIGIN_TOKEN));
    assert!(!proxy.log().contains(PASSWORD));
}

#[tokio::test]
#[ignore = "needs tinyproxy (apt-get install tinyproxy); CI runs it"]
async fn a_wrong_password_is_a_typed_failure_after_one_attempt() {
    let proxy = Tinyproxy::start();
    let fixture = TlsFixture::new();
    let plain = DemoServer::start().await.unwrap();
    let tls = fixture.serve(TlsServe::default()).await.unwrap();
    let client = client(&proxy.url_with("not-the-password"), &fixture);
    // tinyproxy 1.11 answers a wrong password with 401 (not 407) and
    // `WWW-Authenticate`. To a CONNECT only the proxy answers, so that is
    // the proxy's failure; to an absolute-form request it cannot be told
    // from the origin's own 401 and stays an authorization failure. Both
    // are typed and final.
    for (n, url, kind) in [
        (1, tls.url(), FailureKind::Proxy),
        (2, plain.url(), FailureKind::Auth),
    ] {
        let error = watchdog(
            LIMIT,
            support::recovering_with(Connector::with_client(client.clone()), 3)
                .connect(ConnectRequest::http(&url).unwrap()),
        )
        .await
        .unwrap_err();
        assert_eq!(error.attempts(), 1, "never retried: {error}");
        let failure = error.failure();
        assert_eq!(failure.kind, kind, "{failure}");
        assert_eq!(failure.http_status, Some(401));
        if kind == FailureKind::Proxy {
            let ErrorKind::Transport(transport) = error.error().unwrap().kind() else {
                panic!("a transport error: {error:?}");
            };
            assert!(matches!(
                transport.proxy_error(),
                Some(ProxyError::AuthenticationRequired { status: 401 })
            ));
        }
        assert!(!format!("{error} {error:?}").contains("not-the-password"));
        assert_eq!(proxy.requests().len(), n, "one request per target");
    }
    assert_eq!(plain.requests(), 0);
    assert_eq!(tls.handshakes(), 0);
}

#[tokio::test]
#[ignore = "needs tinyproxy (apt-get install tinyproxy); CI runs it"]
async fn the_authorization_stage_goes_through_the_same_proxy() {
    let proxy = Tinyproxy::start();
    let server = support::oauth::start(support::oauth::As::default()).await;
    let relay = Relay::start(proxy.addr()).await;
    let client = HttpClient::builder()
        .proxy(Proxy::url(&format!("http://proxy-user:{PASSWORD}@{}", relay.addr())).unwrap())
        .build();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_authorization(Authorization::client_credentials("svc", "canary-secret"));
    let session = match watchdog(
        LIMIT,
        Connector::with_client(client.clone()).connect(request),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            tokio::time::sleep(Duration::from_millis(500)).await;
            panic!("{e:?}\n{}", proxy.log())
        }
    };
    session.call_tool("x", &json!({})).await.unwrap();
    session.close().await.unwrap();
    let requests = proxy.requests();
    let base = server.url_for("");
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server/as",
        "/as/token",
    ] {
        assert!(
            requests
                .iter()
                .any(|r| r.contains(&format!("{base}{path} "))),
            "{path} through the proxy: {requests:?}"
        );
    }
    assert_eq!(
        server.recorded().len(),
        requests.len(),
        "every request the servers got came through the proxy"
    );
    assert!(server
        .recorded()
        .iter()
        .all(|r| r.header("proxy-authorization").is_none()));
}

/// The command, with only the proxy variables given here.
fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = support::cli::command(args);
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command
}

/// Runs it off the runtime: its summary line, its `call` lines, and all
/// it printed.
async fn run(command: Command) -> (Value, Vec<Value>, String) {
    let output = tokio::task::spawn_blocking(move || support::cli::run_command(command))
        .await
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let summary = lines
        .iter()
        .find(|line| line["event"] == "summary")
        .cloned()
        .unwrap_or(Value::Null);
    let calls = lines
        .into_iter()
        .filter(|line| line["event"] == "call")
        .collect();
    (summary, calls, printed)
}

async fn summary(command: Command) -> (Value, String) {
    let (summary, _, printed) = run(command).await;
    (summary, printed)
}

#[tokio::test]
#[ignore = "needs tinyproxy (apt-get install tinyproxy); CI runs it"]
async fn the_command_reaches_both_eras_and_legacy_sse_through_the_proxy_variables() {
    let proxy = Tinyproxy::start();
    let fixture = TlsFixture::new();
    let plain = DemoServer::start().await.unwrap();
    let tls = fixture.serve(TlsServe::default()).await.unwrap();
    let sse = SseServer::start(SseBehaviour::default()).await;
    let sse_front = behind_tls(&fixture, &sse).await;
    let dir = std::env::temp_dir().join(format!("mcp-connect-eras-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, fixture.ca_pem()).unwrap();
    let ca = ca.to_str().unwrap();
    let url = proxy.url();
    let add = ["--call-tool", "add", "--args", r#"{"a":1,"b":2}"#];
    let x = ["--call-tool", "x", "--args", "{}"];
    let sse_tls = sse_front.url_for("/sse");
    for (variable, demo, sse_url) in [
        ("HTTP_PROXY", plain.url(), sse.url()),
        ("HTTPS_PROXY", tls.url(), sse_tls),
    ] {
        let runs: [(Vec<&str>, &str, &str, &str); 3] = [
            (
                [&add[..], &[demo.as_str()]].concat(),
                "modern",
                "streamable-http",
                "3",
            ),
            (
                [&add[..], &["--pin", "2025-11-25", demo.as_str()]].concat(),
                "legacy",
                "streamable-http",
                "3",
            ),
            (
                [&x[..], &["--transport", "sse", sse_url.as_str()]].concat(),
                "legacy",
                "sse",
                "over sse",
            ),
        ];
        for (args, era, transport, text) in runs {
            let args = [&["--json", "--cacert", ca][..], &args].concat();
            let (summary, calls, printed) = run(command(&args, &[(variable, &url)])).await;
            assert_eq!(
                summary["outcome"], "established",
                "{variable} {args:?}: {printed}"
            );
            assert_eq!(summary["era"], era, "{summary}");
            assert_eq!(summary["transport"], transport, "{summary}");
            assert_eq!(summary["proxy"], proxy.address().as_str());
            assert_eq!(calls.len(), 1, "{printed}");
            assert_eq!(calls[0]["ok"], true, "{printed}");
            assert_eq!(calls[0]["text"], text);
            assert!(!printed.contains(PASSWORD), "{printed}");
        }
    }
    let requests = proxy.requests();
    for expected in [
        format!("POST {} HTTP/1.1", plain.url()),
        format!("GET {} HTTP/1.1", sse.url()),
        format!(
            "CONNECT {} HTTP/1.1",
            tls.url()
                .trim_start_matches("https://")
                .trim_end_matches("/mcp")
        ),
        format!(
            "CONNECT {} HTTP/1.1",
            sse_front.url_for("").trim_start_matches("https://")
        ),
    ] {
        assert!(requests.contains(&expected), "{expected} in {requests:?}");
    }
    assert!(!plain.saw_header("proxy-authorization"));
    assert!(!tls.saw_header("proxy-authorization"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
#[ignore = "needs tinyproxy (apt-get install tinyproxy); CI runs it"]
async fn the_command_reads_the_proxy_variables_and_no_proxy_bypasses_them() {
    let proxy = Tinyproxy::start();
    let fixture = TlsFixture::new();
    let plain = DemoServer::start().await.unwrap();
    let tls = fixture.serve(TlsServe::default()).await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-proxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, fixture.ca_pem()).unwrap();
    let ca = ca.to_str().unwrap();
    let url = proxy.url();

    // HTTP_PROXY for an http:// target.
    let (line, printed) =
        summary(command(&["--json", &plain.url()], &[("HTTP_PROXY", &url)])).await;
    assert_eq!(line["outcome"], "established", "{printed}");
    assert_eq!(line["proxy"], proxy.address().as_str());
    assert!(!printed.contains(PASSWORD), "{printed}");
    let requests = proxy.requests();
    assert!(
        requests.contains(&format!("POST {} HTTP/1.1", plain.url())),
        "{requests:?}"
    );

    // https_proxy (lowercase) for an https:// target, through CONNECT.
    let (line, printed) = summary(command(
        &["--json", "--cacert", ca, &tls.url()],
        &[("https_proxy", &url)],
    ))
    .await;
    assert_eq!(line["outcome"], "established", "{printed}");
    assert_eq!(line["proxy"], proxy.address().as_str());
    assert!(!printed.contains(PASSWORD), "{printed}");
    let connects = proxy
        .requests()
        .iter()
        .filter(|r| r.starts_with("CONNECT "))
        .count();
    assert!(connects >= 1);

    // NO_PROXY=127.0.0.1, and NO_PROXY=* (issue 40, item 5: curl exempts
    // IP literals too): the proxy sees nothing, for either scheme.
    let before = proxy.requests().len();
    for no_proxy in ["127.0.0.1", "*", "example.internal, *"] {
        for target in [plain.url(), tls.url()] {
            let (line, printed) = summary(command(
                &["--json", "--cacert", ca, &target],
                &[
                    ("HTTP_PROXY", &url),
                    ("HTTPS_PROXY", &url),
                    ("NO_PROXY", no_proxy),
                ],
            ))
            .await;
            assert_eq!(line["outcome"], "established", "{no_proxy}: {printed}");
            assert_eq!(line["proxy"], Value::Null, "{no_proxy}");
        }
    }
    assert_eq!(
        proxy.requests().len(),
        before,
        "the proxy's log shows no request"
    );

    // ALL_PROXY with a wrong password: typed, one attempt, never printed.
    let wrong = proxy.url_with("canary-wrong-password");
    let (line, printed) = summary(command(
        &["--json", "--cacert", ca, &tls.url()],
        &[("ALL_PROXY", &wrong)],
    ))
    .await;
    assert_eq!(line["outcome"], "failed", "{printed}");
    assert_eq!(line["failure"]["kind"], "proxy", "{line}");
    assert_eq!(line["failure"]["http_status"], 401, "{line}");
    assert_eq!(line["attempts"], 1);
    assert!(!printed.contains("canary-wrong-password"), "{printed}");
    let _ = std::fs::remove_dir_all(&dir);
}
