//! Without TLS, `https://` is a configuration error before any byte is sent.
//!
//! The default client built without the `rustls` feature, and
//! `HttpClient::http_only()` in every build, must never carry an `https://`
//! request (with its `Authorization` header) as cleartext. A listener on the
//! target port proves that nothing reaches it. CI also runs this file with
//! `--no-default-features`, where `Connector::new()` itself has no TLS.

mod support;

use std::net::TcpListener;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use mcp_connect::error::ConfigError;
use mcp_connect::layers::FailureKind;
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use support::watchdog;
use tower::ServiceExt;

/// A listener that must stay untouched; returns its `https://` URL.
fn untouched_listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    (listener, url)
}

fn assert_nothing_arrived(listener: &TcpListener) {
    std::thread::sleep(Duration::from_millis(100));
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok(_) => panic!("a connection reached the listener"),
        Err(e) => panic!("accept failed: {e}"),
    }
}

async fn refuses_https(connector: Connector) {
    let (listener, url) = untouched_listener();
    let request = ConnectRequest::http(&url)
        .unwrap()
        .with_header("authorization", "Bearer canary-token-7f3a")
        .unwrap();
    let error = connector.connect(request).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Config(ConfigError::TlsUnavailable)),
        "{error:?}"
    );
    assert_eq!(error.failure().kind, FailureKind::Configuration);
    assert_nothing_arrived(&listener);
}

#[tokio::test]
async fn an_http_only_client_refuses_https_before_sending_a_byte() {
    watchdog(Duration::from_secs(10), async {
        let client = HttpClient::http_only();
        assert!(!client.speaks_tls());
        refuses_https(Connector::with_client(client)).await;
    })
    .await;
}

#[tokio::test]
async fn an_http_only_client_used_directly_never_connects_for_https() {
    watchdog(Duration::from_secs(10), async {
        let (listener, url) = untouched_listener();
        let request = http::Request::post(&url)
            .header("authorization", "Bearer canary-token-7f3a")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let outcome = HttpClient::http_only().oneshot(request).await;
        assert!(outcome.is_err(), "an https request went out without TLS");
        assert_nothing_arrived(&listener);
    })
    .await;
}

#[cfg(not(feature = "rustls"))]
#[tokio::test]
async fn the_default_connector_without_the_tls_feature_refuses_https() {
    watchdog(Duration::from_secs(10), async {
        assert!(!HttpClient::default_client().speaks_tls());
        refuses_https(Connector::new()).await;
    })
    .await;
}

#[cfg(feature = "rustls")]
#[test]
fn the_default_client_with_the_tls_feature_speaks_tls() {
    assert!(HttpClient::default_client().speaks_tls());
}
