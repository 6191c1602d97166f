//! Issue 27, item 4 (in part): `--cacert FILE`, `--cert FILE --key FILE`
//! against the testkit's TLS fixture. Nothing of the files reaches the
//! output.
#![cfg(feature = "rustls")]

use mcp_connect::testkit::{TlsFixture, TlsServe};

use crate::support::cli::{json_lines, run_async};

fn file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-connect-{name}-{}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn cacert_cert_and_key_reach_a_private_tls_server() {
    let fixture = TlsFixture::new();
    let server = fixture.serve(TlsServe::default()).await.unwrap();
    let ca = file("ca.pem", &fixture.ca_pem());
    let ca = ca.to_str().unwrap();
    let url = server.url();

    let trusted = run_async(&[&url, "--cacert", ca, "--json"]).await;
    let text = String::from_utf8_lossy(&trusted.stdout).into_owned();
    assert_eq!(trusted.status.code(), Some(0), "{text}");
    assert_eq!(
        json_lines(&trusted).last().unwrap()["outcome"],
        "established"
    );

    let untrusted = run_async(&[&url, "--json"]).await;
    let last = json_lines(&untrusted).last().unwrap().clone();
    assert_eq!(last["failure"]["kind"], "tls", "{last}");

    let mutual = fixture
        .serve(TlsServe::default().requiring_client_certificate())
        .await
        .unwrap();
    let cert = file("client.pem", fixture.client_certificate_pem());
    let key = file("client.key", fixture.client_key_pem());
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    // Without the certificate, under TLS 1.3 the refusal comes after the
    // handshake: still `tls`, and never retried (issue 40, item 12: it
    // was `closed`, and recovery made five attempts).
    let refused = run_async(&[
        &mutual.url(),
        "--cacert",
        ca,
        "--json",
        "--recovery",
        "default",
        "--max-attempts",
        "5",
    ])
    .await;
    let last = json_lines(&refused).last().unwrap().clone();
    assert_eq!(last["failure"]["kind"], "tls", "{last}");
    assert_eq!(last["attempts"], 1, "{last}");
    let output = run_async(&[&mutual.url(), "--cacert", ca, "--cert", cert, "--key", key]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let key_body: String = fixture
        .client_key_pem()
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    assert!(!text.contains(&key_body[..40]), "the key never shows");

    // A file that is no PEM: a usage error naming the option, not the file.
    let bad = file("bad.pem", "secret-canary-4410");
    let output = run_async(&[&url, "--cacert", bad.to_str().unwrap()]).await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--cacert"), "{stderr}");
    assert!(!stderr.contains("secret-canary-4410"), "{stderr}");
    // A key that is not one.
    let output = run_async(&[&url, "--cert", cert, "--key", ca]).await;
    assert_eq!(output.status.code(), Some(2));
    for path in [ca, cert, key, bad.to_str().unwrap()] {
        let _ = std::fs::remove_file(path);
    }
}

/// Issue 41, item 7: the command trusts what curl trusts, a CA in
/// `SSL_CERT_FILE` (or `SSL_CERT_DIR`) included, and a certificate from an
/// unknown CA names the options that fix it.
#[tokio::test]
async fn ssl_cert_file_is_trusted_and_an_unknown_issuer_names_cacert() {
    use crate::support::cli::{command, run_command};
    let fixture = TlsFixture::new();
    let server = fixture.serve(TlsServe::default()).await.unwrap();
    let ca = file("ssl-cert-file.pem", &fixture.ca_pem());
    let dir = std::env::temp_dir().join(format!("mcp-connect-cert-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&ca, dir.join("ca.pem")).unwrap();
    let url = server.url();
    for (variable, value) in [("SSL_CERT_FILE", &ca), ("SSL_CERT_DIR", &dir)] {
        let mut trusting = command(&[&url, "--json"]);
        trusting.env(variable, value);
        let output = tokio::task::spawn_blocking(move || run_command(trusting))
            .await
            .unwrap();
        let last = json_lines(&output).last().unwrap().clone();
        assert_eq!(last["outcome"], "established", "{variable}: {last}");
    }

    let untrusted = run_async(&[&url, "--json"]).await;
    let last = json_lines(&untrusted).last().unwrap().clone();
    assert_eq!(last["tls_problem"], "unknown-issuer", "{last}");
    assert!(
        last["hint"].as_str().unwrap().contains("--cacert"),
        "{last}"
    );
    let human = run_async(&[&url]).await;
    let text = String::from_utf8_lossy(&human.stdout).into_owned();
    assert!(
        text.contains("hint: ") && text.contains("SSL_CERT_FILE"),
        "{text}"
    );
    let _ = std::fs::remove_file(&ca);
    let _ = std::fs::remove_dir_all(&dir);
}
