//! Issue 27, item 2 (in part): with `native-roots`, a private CA installed
//! where the platform looks (here `SSL_CERT_FILE`, read by
//! rustls-native-certs) is trusted by the default client, with no code.
//! Its own binary: it sets a process-wide variable before any client is
//! built. CI runs it: `cargo test --features native-roots --test tls_native_roots`.
#![cfg(feature = "native-roots")]

use std::time::Duration;

use mcp_connect::testkit::{TlsFixture, TlsServe};
use mcp_connect::{ConnectRequest, Connector};

#[tokio::test]
async fn a_ca_in_ssl_cert_file_is_trusted_with_native_roots() {
    let fixture = TlsFixture::new();
    let path = std::env::temp_dir().join(format!("mcp-connect-ca-{}.pem", std::process::id()));
    std::fs::write(&path, fixture.ca_pem()).unwrap();
    // The only test in this binary: nothing else reads the environment.
    std::env::set_var("SSL_CERT_FILE", &path);
    let server = fixture.serve(TlsServe::default()).await.unwrap();
    let session = tokio::time::timeout(
        Duration::from_secs(20),
        Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .expect("in time")
    .expect("the platform store has the CA");
    assert_eq!(
        session
            .call_tool("add", &serde_json::json!({ "a": 1, "b": 2 }))
            .await
            .unwrap()
            .text(),
        "3"
    );
    session.close().await.unwrap();
    std::fs::remove_file(&path).unwrap();
}
