//! Issue 27, items 2 and 5 (in part): real TLS. A private CA made at test
//! time, the demo server over HTTPS with HTTP/2 by ALPN; extra roots,
//! mutual TLS, and TLS failures classified by what they are, never
//! retried.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use mcp_connect::layers::classify::Conservative;
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::Era;
use mcp_connect::testkit::{TlsFixture, TlsServe};
use mcp_connect::transport::{tls_problem, HttpClient, TlsConfigError, TlsProblem};
use mcp_connect::{ConnectRequest, Connector, EstablishError};
use serde_json::json;

use crate::support::watchdog;

fn trusting(fixture: &TlsFixture) -> mcp_connect::transport::HttpClientBuilder {
    HttpClient::builder()
        .add_root_certificates_pem(fixture.ca_pem().as_bytes())
        .expect("the CA parses")
}

/// Three attempts allowed: a TLS failure must still be one.
async fn establish_with_recovery(
    client: HttpClient,
    url: &str,
) -> Result<mcp_connect::Session, EstablishError> {
    crate::support::recovering_with(Connector::with_client(client), 3)
        .connect(ConnectRequest::http(url).unwrap())
        .await
}

fn problem(error: &EstablishError) -> Option<TlsProblem> {
    tls_problem(error.error().expect("an MCP error"))
}

#[tokio::test]
async fn a_private_ca_is_trusted_when_added_and_http2_is_negotiated() {
    watchdog(Duration::from_secs(20), async {
        let fixture = TlsFixture::new();
        let server = fixture.serve(TlsServe::default()).await.unwrap();
        let session = Connector::with_client(trusting(&fixture).build())
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .expect("trusted through the added CA");
        assert_eq!(session.era(), Era::Modern);
        let sum = session
            .call_tool("add", &json!({ "a": 2, "b": 3 }))
            .await
            .unwrap();
        assert_eq!(sum.text(), "5");
        assert_eq!(
            server.negotiated(),
            vec![Some(b"h2".to_vec())],
            "HTTP/2 by ALPN, one connection"
        );
        session.close().await.unwrap();

        // Offered only HTTP/1.1, the client speaks it.
        let http1 = fixture
            .serve(TlsServe::default().http1_only())
            .await
            .unwrap();
        let session = Connector::with_client(trusting(&fixture).build())
            .connect(ConnectRequest::http(&http1.localhost_url()).unwrap())
            .await
            .expect("over HTTP/1.1, by the certificate's DNS name");
        assert_eq!(http1.negotiated(), vec![Some(b"http/1.1".to_vec())]);
        session.close().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn an_unknown_issuer_is_a_tls_failure_never_retried() {
    watchdog(Duration::from_secs(20), async {
        let fixture = TlsFixture::new();
        let server = fixture.serve(TlsServe::default()).await.unwrap();
        let error = establish_with_recovery(HttpClient::default_client(), &server.url())
            .await
            .unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Tls);
        assert_eq!(problem(&error), Some(TlsProblem::UnknownIssuer));
        assert!(error.later().is_empty(), "one attempt: {error}");
        assert_eq!(server.handshakes(), 0);
        // Replacing the roots with the CA alone works as well.
        let only = HttpClient::builder()
            .only_root_certificates_pem(fixture.ca_pem().as_bytes())
            .unwrap()
            .build();
        establish_with_recovery(only, &server.url())
            .await
            .expect("the CA alone");
    })
    .await;
}

#[tokio::test]
async fn an_expired_certificate_is_a_tls_failure_never_retried() {
    watchdog(Duration::from_secs(20), async {
        let fixture = TlsFixture::new();
        let server = fixture
            .serve(TlsServe::default().with_expired_certificate())
            .await
            .unwrap();
        let error = establish_with_recovery(trusting(&fixture).build(), &server.url())
            .await
            .unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Tls);
        assert_eq!(problem(&error), Some(TlsProblem::Expired));
        assert!(error.later().is_empty(), "one attempt: {error}");
        assert_eq!(server.handshakes(), 0);
    })
    .await;
}

#[tokio::test]
async fn a_certificate_for_another_name_is_a_name_mismatch() {
    watchdog(Duration::from_secs(20), async {
        let fixture = TlsFixture::new();
        let server = fixture.serve(TlsServe::default()).await.unwrap();
        let addr: SocketAddr = server
            .url()
            .trim_start_matches("https://")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap();
        // A name the certificate does not carry, resolved here to the
        // fixture: no lookup leaves the machine.
        let resolver =
            tower::service_fn(
                move |_name| async move { Ok::<_, Infallible>(vec![addr].into_iter()) },
            );
        let client = trusting(&fixture).build_with_resolver(resolver);
        let url = format!("https://other.test:{}/mcp", addr.port());
        let error = establish_with_recovery(client, &url).await.unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Tls);
        assert_eq!(problem(&error), Some(TlsProblem::NameMismatch));
        assert!(error.later().is_empty());
    })
    .await;
}

#[tokio::test]
async fn mutual_tls_works_with_the_client_certificate_and_fails_typed_without() {
    watchdog(Duration::from_secs(20), async {
        let fixture = TlsFixture::new();
        let server = fixture
            .serve(TlsServe::default().requiring_client_certificate())
            .await
            .unwrap();
        let with = trusting(&fixture)
            .client_certificate_pem(
                fixture.client_certificate_pem().as_bytes(),
                fixture.client_key_pem().as_bytes(),
            )
            .expect("the certificate and key match")
            .build();
        let session = establish_with_recovery(with, &server.url())
            .await
            .expect("the client certificate is accepted");
        session.close().await.unwrap();

        // TLS 1.3: the server refuses the missing certificate after the
        // handshake, with the first read; HTTP/2 keeps only the text of
        // that I/O error, so the client's watched streams keep the rustls
        // error itself (issue 40, item 12: it was `closed` or `other`, and
        // recovery retried it): typed as TLS, one attempt only.
        let error = establish_with_recovery(trusting(&fixture).build(), &server.url())
            .await
            .unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Tls, "{error}");
        assert_eq!(problem(&error), Some(TlsProblem::ClientCertificateRequired));
        assert!(!Conservative::allows(&error.failure()), "{error}");
        assert!(error.later().is_empty());
        // TLS 1.2: the refusal is part of the handshake, and typed.
        let tls12 = fixture
            .serve(
                TlsServe::default()
                    .requiring_client_certificate()
                    .tls12_only(),
            )
            .await
            .unwrap();
        let error = establish_with_recovery(trusting(&fixture).build(), &tls12.url())
            .await
            .unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Tls, "{error}");
        assert_eq!(problem(&error), Some(TlsProblem::ClientCertificateRequired));
        assert!(error.later().is_empty());
    })
    .await;
}

#[test]
fn bad_pem_is_a_typed_error_that_shows_nothing() {
    let fixture = TlsFixture::new();
    let not_pem = HttpClient::builder().add_root_certificates_pem(b"not a certificate");
    assert_eq!(not_pem.unwrap_err(), TlsConfigError::NoCertificate);
    let no_key = HttpClient::builder().client_certificate_pem(
        fixture.client_certificate_pem().as_bytes(),
        fixture.client_certificate_pem().as_bytes(),
    );
    let error = no_key.unwrap_err();
    assert_eq!(error, TlsConfigError::NoKey);
    let other = TlsFixture::new();
    let mismatch = HttpClient::builder().client_certificate_pem(
        fixture.client_certificate_pem().as_bytes(),
        other.client_key_pem().as_bytes(),
    );
    let shown = format!(
        "{:?} {}",
        mismatch.as_ref().err(),
        mismatch
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(!shown.contains("BEGIN"), "{shown}");
    let builder = trusting(&fixture);
    assert!(!format!("{builder:?}").contains("BEGIN"));
}

/// Issue 27, item 2: TLS settings per request. One connector whose own
/// client trusts only the public roots; a request that carries a client
/// with the private CA and the client certificate reaches a server that
/// requires both, and the same request without it does not.
#[tokio::test]
async fn a_request_can_carry_its_own_tls_settings() {
    watchdog(Duration::from_secs(20), async {
        let fixture = TlsFixture::new();
        let server = fixture
            .serve(TlsServe::default().requiring_client_certificate())
            .await
            .unwrap();
        let connector = Connector::new();
        let own = trusting(&fixture)
            .client_certificate_pem(
                fixture.client_certificate_pem().as_bytes(),
                fixture.client_key_pem().as_bytes(),
            )
            .unwrap()
            .build();
        let request = ConnectRequest::http(&server.url()).unwrap();
        let session = connector
            .connect(request.clone().with_http_client(own))
            .await
            .expect("the request's own client");
        session.close().await.unwrap();
        let error = connector.connect(request).await.unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Tls);
        assert_eq!(
            tls_problem(&error),
            Some(TlsProblem::UnknownIssuer),
            "the connector's own client knows no private CA"
        );
    })
    .await;
}

/// Issue 29, item 3: sessions to the same origin share the connector's
/// connections, and over TLS HTTP/2 carries concurrent calls on one.
#[tokio::test]
async fn http2_carries_concurrent_calls_and_sessions_on_one_connection() {
    watchdog(Duration::from_secs(20), async {
        let fixture = TlsFixture::new();
        let server = fixture.serve(TlsServe::default()).await.unwrap();
        let connector = Connector::with_client(trusting(&fixture).build());
        let first = connector
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let second = connector
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let arguments: Vec<_> = (0..20).map(|i| json!({ "a": i, "b": 1 })).collect();
        let calls = arguments.iter().enumerate().map(|(i, arguments)| {
            let session = if i % 2 == 0 { &first } else { &second };
            session.call_tool("add", arguments)
        });
        let results = futures_util::future::join_all(calls).await;
        for (i, result) in results.into_iter().enumerate() {
            assert_eq!(result.unwrap().text(), (i + 1).to_string());
        }
        assert_eq!(
            server.negotiated(),
            vec![Some(b"h2".to_vec())],
            "two sessions and 20 concurrent calls, one connection"
        );
    })
    .await;
}
