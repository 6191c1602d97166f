//! G14 Payload-free diagnostics: stage, elapsed, transport mode,
//! cancellation source, closure category, HTTP status, JSON-RPC code,
//! attempt count, exhaustion reason; never credentials, session ids,
//! bodies, raw server messages or URL query strings. Tested with canaries.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::capture::Capture;
use crate::support::{watchdog, LegacyServer, Script, ScriptServer};
use mcp_connect::layers::diagnostics::{LifecycleMetrics, OutcomeRecord, StageRecord};
use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy};
use mcp_connect::protocol::{GetPrompt, Ping, ReadResource, SetLoggingLevel};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

const CANARIES: [&str; 7] = [
    "canary-authorization",
    "canary-session-id",
    "canary-query",
    "canary-userinfo",
    "canary-tool-argument",
    "canary-server-error",
    "canary-event-id",
];

#[derive(Debug, Default)]
struct Metrics(Mutex<String>);

impl LifecycleMetrics for Metrics {
    fn on_stage(&self, record: &StageRecord) {
        let _ = write!(self.0.lock().unwrap(), "\n{record:?}");
    }
    fn on_outcome(&self, record: &OutcomeRecord) {
        let _ = write!(self.0.lock().unwrap(), "\n{record:?}");
    }
}

/// Runs `body` on a current-thread runtime with every tracing event, at
/// every level, captured; the events as text.
fn traced(body: impl std::future::Future<Output = ()>) -> String {
    crate::support::capture::keep_every_call_site_open();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(
        capture
            .clone()
            .with_filter(tracing_subscriber::filter::LevelFilter::TRACE),
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(body);
    capture.text()
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut text = format!("{error} | {error:?}");
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(text, " | {cause} | {cause:?}");
        source = cause.source();
    }
    text
}

/// Connects to `url` and appends the session's `Debug`, or the whole error
/// chain, to `printed`.
#[cfg(feature = "rustls")]
async fn connect_and_print(connector: &Connector, url: &str, printed: &mut String) {
    let request = ConnectRequest::http(url).unwrap();
    match watchdog(Duration::from_secs(10), connector.connect(request)).await {
        Ok(session) => {
            let _ = write!(printed, "{session:?}");
            session.close().await.unwrap();
        }
        Err(error) => printed.push_str(&chain(&error)),
    }
}

/// G14: secrets in every place a caller or server can put them appear in no
/// tracing event, no metrics value and no error `Debug` or `Display`.
#[test]
fn no_canary_reaches_diagnostics_metrics_or_errors() {
    let metrics = Arc::new(Metrics::default());
    let mut printed = String::new();
    let traced = traced(async {
        let legacy = LegacyServer::new();
        let server = ScriptServer::start(move |r| match r.rpc_method() {
            "initialize" => Script::JsonWith(
                200,
                crate::support::result(r, json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {} })),
                vec![("mcp-session-id", "canary-session-id".into())],
            ),
            "notifications/initialized" => Script::Status(202),
            "tools/call" => Script::Json(
                400,
                json!({ "jsonrpc": "2.0", "id": r.id(), "error": { "code": -32000, "message": "canary-server-error", "data": "canary-server-error" } }),
            ),
            "ping" => Script::Raw(500, "text/plain", "canary-server-error".into()),
            "resources/read" => Script::Raw(200, "application/json", "{\"canary-server-error\": [".into()),
            "prompts/get" => Script::Json(404, json!({ "error": "canary-server-error" })),
            // A reply stream cut after an event whose id is a secret; its
            // resumption is refused.
            "logging/setLevel" => Script::Sse(vec!["id: canary-event-id\nretry: 10\ndata:\n\n".into()]),
            "" if r.header("last-event-id").is_some() => Script::Status(405),
            _ => legacy.respond(r),
        })
        .await;
        let url = server
            .url()
            .replace("http://", "http://user:canary-userinfo@")
            + "?token=canary-query";
        let stack = EstablishBuilder::new(Connector::new())
            .with_recovery(RecoveryPolicy::new().with_backoff(Backoff::NONE))
            .with_metrics(metrics.clone())
            .build();
        let request = ConnectRequest::http(&url)
            .unwrap()
            .with_header("authorization", "Bearer canary-authorization")
            .unwrap();
        let _ = write!(printed, "{request:?}");
        let session = watchdog(Duration::from_secs(10), stack.connect(request))
            .await
            .unwrap();
        let _ = write!(printed, "{session:?}");
        let args = json!({ "secret": "canary-tool-argument" });
        for error in [
            session.call_tool("x", &args).await.unwrap_err(),
            session.send(Ping).await.unwrap_err(),
            session.send(ReadResource::new("x")).await.unwrap_err(),
            session
                .send(SetLoggingLevel::new("debug"))
                .await
                .unwrap_err(),
            // Last: its 404 ends the session.
            session
                .send(GetPrompt::new("x").with_arguments(&args))
                .await
                .unwrap_err(),
        ] {
            printed.push_str(&chain(&error));
        }
        session.close().await.unwrap();

        // A failing establishment, through every layer.
        let failing = ScriptServer::start(|r| match r.rpc_method() {
            "server/discover" => Script::Json(400, json!({ "jsonrpc": "2.0", "id": r.id(), "error": { "code": -32000, "message": "canary-server-error" } })),
            _ => Script::Raw(403, "text/plain", "canary-server-error".into()),
        })
        .await;
        let url = failing.url() + "?token=canary-query";
        let request = ConnectRequest::http(&url)
            .unwrap()
            .with_header("authorization", "Bearer canary-authorization")
            .unwrap();
        let error = watchdog(Duration::from_secs(10), stack.connect(request))
            .await
            .unwrap_err();
        printed.push_str(&chain(&error));
    });
    let measured = metrics.0.lock().unwrap().clone();
    assert!(
        traced.contains("stage"),
        "diagnostics were captured: {traced}"
    );
    assert!(
        traced.contains("stream resumption refused"),
        "the resumption was traced: {traced}"
    );
    assert!(
        measured.contains("Probe") || measured.contains("probe"),
        "{measured}"
    );
    for canary in CANARIES {
        assert!(!traced.contains(canary), "{canary} in tracing: {traced}");
        assert!(
            !measured.contains(canary),
            "{canary} in metrics: {measured}"
        );
        assert!(
            !printed.contains(canary),
            "{canary} in errors or Debug: {printed}"
        );
    }
}

/// G14, issue 27: a client certificate's private key reaches no tracing
/// event, no error and no `Debug` of the client or its builder, whether
/// the key is refused, the server is distrusted or the session works.
#[cfg(feature = "rustls")]
#[test]
fn no_client_key_reaches_diagnostics_or_errors() {
    use mcp_connect::testkit::{TlsFixture, TlsServe};
    use mcp_connect::transport::HttpClient;

    let fixture = TlsFixture::new();
    let other = TlsFixture::new();
    // The key's body: what a leak would show.
    let key_body: String = fixture
        .client_key_pem()
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let mut printed = String::new();
    let traced = traced(async {
        let server = fixture
            .serve(TlsServe::default().requiring_client_certificate())
            .await
            .unwrap();
        let (cert, key) = (
            fixture.client_certificate_pem().as_bytes(),
            fixture.client_key_pem().as_bytes(),
        );
        // Refused: the key of another certificate.
        if let Err(error) = HttpClient::builder()
            .client_certificate_pem(other.client_certificate_pem().as_bytes(), key)
        {
            printed.push_str(&chain(&error));
        }
        for trusted in [false, true] {
            let mut builder = HttpClient::builder()
                .client_certificate_pem(cert, key)
                .unwrap();
            if trusted {
                builder = builder
                    .add_root_certificates_pem(fixture.ca_pem().as_bytes())
                    .unwrap();
            }
            let _ = write!(printed, "{builder:?}");
            let connector = Connector::with_client(builder.build());
            let _ = write!(printed, "{connector:?}");
            connect_and_print(&connector, &server.url(), &mut printed).await;
        }
    });
    assert!(
        !printed.is_empty() && traced.contains("connected to"),
        "tracing was captured: {traced}"
    );
    for text in [&printed, &traced] {
        assert!(!text.contains(&key_body[..48]), "the client key leaked");
        assert!(!text.contains("PRIVATE KEY"), "the client key leaked");
    }
}

/// G14, issue 27: a proxy's password (as given and as its Basic encoding)
/// reaches no tracing event, no error and no `Debug` of the proxy setting,
/// the client, its builder or a session, whether the proxy refuses the
/// credentials (an `http://` target and a `CONNECT`), refuses the tunnel,
/// or is bypassed and the session works.
#[cfg(feature = "rustls")]
#[test]
fn no_proxy_password_reaches_diagnostics_or_errors() {
    use base64::Engine as _;
    use mcp_connect::demo::DemoServer;
    use mcp_connect::testkit::{TlsFixture, TlsServe};
    use mcp_connect::transport::{HttpClient, Proxy};

    use crate::support::proxy::AnsweringProxy;

    const PASSWORD: &str = "canary-proxy-password";
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("u:{PASSWORD}"));
    let mut printed = String::new();
    let traced = traced(async {
        let fixture = TlsFixture::new();
        let tls = fixture.serve(TlsServe::default()).await.unwrap();
        let plain = DemoServer::start().await.unwrap();
        for (status, no_proxy) in [(407, None), (403, None), (403, Some("127.0.0.1"))] {
            let proxy = AnsweringProxy::start(status).await;
            let mut setting = Proxy::url(
                &proxy
                    .url()
                    .replace("http://", &format!("http://u:{PASSWORD}@")),
            )
            .unwrap();
            if let Some(rules) = no_proxy {
                setting = setting.with_no_proxy(rules);
            }
            let _ = write!(printed, "{setting:?}");
            let builder = HttpClient::builder()
                .proxy(setting)
                .add_root_certificates_pem(fixture.ca_pem().as_bytes())
                .unwrap();
            let _ = write!(printed, "{builder:?}");
            let client = builder.build();
            let _ = write!(printed, "{client:?}");
            for url in [plain.url(), tls.url()] {
                let connector = Connector::with_client(client.clone());
                connect_and_print(&connector, &url, &mut printed).await;
            }
        }
    });
    assert!(
        printed.contains("proxy") && traced.contains("connected to"),
        "errors and tracing were captured: {printed} {traced}"
    );
    for text in [&printed, &traced] {
        assert!(
            !text.contains(PASSWORD),
            "the proxy password leaked: {text}"
        );
        assert!(
            !text.contains(&encoded),
            "the proxy credentials leaked: {text}"
        );
    }
}
