//! Issue 27, item 1, against scripted proxies (tinyproxy's own tests are in
//! `tests/proxy.rs`): a proxy's refusal is a typed failure at once, never
//! retried; the credentials ride on the right request; an unreachable or
//! broken proxy is typed too; `NO_PROXY`-style exceptions bypass it.

use std::sync::Arc;
use std::time::Duration;

use mcp_connect::demo::DemoServer;
use mcp_connect::layers::{FailureKind, StageOutcome};
use mcp_connect::testkit::{TlsFixture, TlsServe};
use mcp_connect::transport::{HttpClient, Proxy, ProxyError};
use mcp_connect::{ConnectRequest, Connector, ErrorKind, EstablishError};
use serde_json::json;

use crate::support::proxy::AnsweringProxy;
use crate::support::{watchdog, Events};

const LIMIT: Duration = Duration::from_secs(20);

fn through(proxy: Proxy, fixture: &TlsFixture) -> HttpClient {
    HttpClient::builder()
        .proxy(proxy)
        .add_root_certificates_pem(fixture.ca_pem().as_bytes())
        .expect("the CA parses")
        .build()
}

/// Three attempts allowed, every stage recorded.
async fn establish(
    client: HttpClient,
    url: &str,
    events: &Arc<Events>,
) -> Result<mcp_connect::Session, EstablishError> {
    let request = ConnectRequest::http(url)
        .unwrap()
        .with_observer(Arc::clone(events) as _);
    watchdog(
        LIMIT,
        crate::support::recovering_with(Connector::with_client(client), 3).connect(request),
    )
    .await
}

fn proxy_error(error: &EstablishError) -> &ProxyError {
    match error.error().expect("an MCP error").kind() {
        ErrorKind::Transport(transport) => transport.proxy_error().expect("a proxy error"),
        other => panic!("not a transport error: {other:?}"),
    }
}

/// The failure is the proxy's, after one attempt, and the timeline says so.
fn assert_proxy_failure(error: &EstablishError, events: &Events, status: Option<u16>) {
    assert_eq!(error.attempts(), 1, "never retried: {error}");
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Proxy, "{failure}");
    assert_eq!(failure.http_status, status);
    let failed: Vec<_> = events
        .all()
        .into_iter()
        .filter_map(|event| match event.outcome {
            StageOutcome::Failed(failure) => Some(failure.kind),
            _ => None,
        })
        .collect();
    assert_eq!(failed, [FailureKind::Proxy], "the timeline names the proxy");
}

#[tokio::test]
async fn a_refused_tunnel_is_a_typed_proxy_failure_and_never_retried() {
    let fixture = TlsFixture::new();
    let server = fixture.serve(TlsServe::default()).await.unwrap();
    let proxy = AnsweringProxy::start(403).await;
    let events = Events::new();
    let client = through(Proxy::url(&proxy.url()).unwrap(), &fixture);
    let error = establish(client, &server.url(), &events).await.unwrap_err();
    assert_proxy_failure(&error, &events, Some(403));
    assert!(matches!(
        proxy_error(&error),
        ProxyError::Refused { status: 403 }
    ));
    assert_eq!(proxy.connections(), 1);
    assert!(proxy.heads()[0].starts_with(&format!(
        "CONNECT 127.0.0.1:{} HTTP/1.1\r\n",
        server
            .url()
            .split(':')
            .nth(2)
            .unwrap()
            .trim_end_matches("/mcp")
    )));
    assert_eq!(server.handshakes(), 0, "nothing reached the origin");
}

#[tokio::test]
async fn a_407_to_a_connect_is_authentication_required_and_the_credentials_rode_on_it() {
    let fixture = TlsFixture::new();
    let server = fixture.serve(TlsServe::default()).await.unwrap();
    let proxy = AnsweringProxy::start(407).await;
    let url = proxy.url().replace("http://", "http://alice:wrong@");
    let events = Events::new();
    let error = establish(
        through(Proxy::url(&url).unwrap(), &fixture),
        &server.url(),
        &events,
    )
    .await
    .unwrap_err();
    assert_proxy_failure(&error, &events, Some(407));
    assert!(matches!(
        proxy_error(&error),
        ProxyError::AuthenticationRequired { status: 407 }
    ));
    let head = proxy.heads()[0].to_ascii_lowercase();
    // base64("alice:wrong")
    assert!(
        head.contains("proxy-authorization: basic ywxpy2u6d3jvbmc="),
        "{head}"
    );
}

#[tokio::test]
async fn a_407_to_an_http_target_is_typed_and_the_request_was_absolute_form() {
    let origin = DemoServer::start().await.unwrap();
    let proxy = AnsweringProxy::start(407).await;
    let url = proxy.url().replace("http://", "http://alice:wrong@");
    let events = Events::new();
    let client = HttpClient::builder()
        .proxy(Proxy::url(&url).unwrap())
        .build();
    let error = establish(client, &origin.url(), &events).await.unwrap_err();
    assert_proxy_failure(&error, &events, Some(407));
    assert!(matches!(
        proxy_error(&error),
        ProxyError::AuthenticationRequired { status: 407 }
    ));
    let head = &proxy.heads()[0];
    assert!(
        head.starts_with(&format!("POST {} HTTP/1.1\r\n", origin.url())),
        "{head}"
    );
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("proxy-authorization: basic ywxpy2u6d3jvbmc="));
    assert!(
        lower.contains("connection: close"),
        "a forward proxy's connection is never reused: {head}"
    );
    assert_eq!(origin.requests(), 0, "nothing reached the origin");
}

#[tokio::test]
async fn an_unreachable_proxy_is_typed_and_a_broken_one_too() {
    let fixture = TlsFixture::new();
    let server = fixture.serve(TlsServe::default()).await.unwrap();
    let port = crate::support::ClosedPort::new();
    let closed = port.url("");
    let events = Events::new();
    let error = establish(
        through(Proxy::url(&closed).unwrap(), &fixture),
        &server.url(),
        &events,
    )
    .await
    .unwrap_err();
    assert_proxy_failure(&error, &events, None);
    assert!(matches!(proxy_error(&error), ProxyError::Unreachable(_)));

    let silent = AnsweringProxy::start(0).await;
    let events = Events::new();
    let error = establish(
        through(Proxy::url(&silent.url()).unwrap(), &fixture),
        &server.url(),
        &events,
    )
    .await
    .unwrap_err();
    assert_proxy_failure(&error, &events, None);
    assert!(matches!(proxy_error(&error), ProxyError::Broken(_)));
    assert_eq!(server.handshakes(), 0);
}

#[tokio::test]
async fn exceptions_bypass_the_proxy_for_both_schemes() {
    let fixture = TlsFixture::new();
    let tls = fixture.serve(TlsServe::default()).await.unwrap();
    let plain = DemoServer::start().await.unwrap();
    let proxy = AnsweringProxy::start(403).await;
    let client = through(
        Proxy::url(&proxy.url()).unwrap().with_no_proxy("127.0.0.1"),
        &fixture,
    );
    for url in [tls.url(), plain.url()] {
        assert_eq!(client.proxy_for(&url.parse().unwrap()), None);
        let session = watchdog(
            LIMIT,
            Connector::with_client(client.clone()).connect(ConnectRequest::http(&url).unwrap()),
        )
        .await
        .expect("direct");
        let sum = session
            .call_tool("add", &json!({ "a": 1, "b": 2 }))
            .await
            .unwrap();
        assert_eq!(sum.text(), "3");
        session.close().await.unwrap();
    }
    assert_eq!(proxy.connections(), 0, "the proxy saw nothing");
    // Without the exception the same client would have used it.
    let proxied = through(Proxy::url(&proxy.url()).unwrap(), &fixture);
    assert_eq!(
        proxied
            .proxy_for(&tls.url().parse().unwrap())
            .map(|uri| uri.to_string()),
        Some(format!("{}/", proxy.url()))
    );
}

#[tokio::test]
async fn proxy_none_connects_directly() {
    let plain = DemoServer::start().await.unwrap();
    let client = HttpClient::builder().proxy(Proxy::none()).build();
    assert_eq!(client.proxy_for(&plain.url().parse().unwrap()), None);
    let session = watchdog(
        LIMIT,
        Connector::with_client(client).connect(ConnectRequest::http(&plain.url()).unwrap()),
    )
    .await
    .unwrap();
    session.close().await.unwrap();
}

/// Issue 45: a config entry's own `proxy` and `cacert` reach one server
/// behind a private CA (and a proxy) while the connector's client stays as
/// it is: the entry without them is refused by TLS, the one with the CA
/// connects, the one with the proxy too goes to the proxy.
#[tokio::test]
async fn a_config_entrys_own_proxy_and_ca_are_used_for_that_server_only() {
    let fixture = TlsFixture::new();
    let server = fixture.serve(TlsServe::default()).await.unwrap();
    let proxy = AnsweringProxy::start(403).await;
    let ca = std::env::temp_dir().join(format!("mcp-connect-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, fixture.ca_pem()).unwrap();
    let file = json!({ "mcpServers": {
        "plain": { "url": server.url() },
        "trusted": { "url": server.url(), "cacert": ca },
        "proxied": { "url": server.url(), "cacert": ca, "proxy": proxy.url() },
    } });
    let config = mcp_connect::config::ServersConfig::parse(&file.to_string()).unwrap();
    std::fs::remove_file(&ca).unwrap();
    let stack = crate::support::recovering_with(Connector::new(), 1);
    let connect = |name: &str| {
        let request = config.get(name).expect("read").request();
        watchdog(LIMIT, stack.connect(request))
    };

    let untrusted = connect("plain").await.unwrap_err();
    assert_eq!(untrusted.failure().kind, FailureKind::Tls, "{untrusted}");
    let session = connect("trusted").await.expect("the entry's CA is trusted");
    session.close().await.expect("closed");
    let refused = connect("proxied").await.unwrap_err();
    assert_eq!(refused.failure().kind, FailureKind::Proxy, "{refused}");
    assert_eq!(proxy.connections(), 1, "only the proxied entry used it");
    assert_eq!(server.handshakes(), 1, "only the trusted entry got through");
}
