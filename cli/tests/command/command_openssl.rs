//! Issue 41, item 6: a client certificate made the way most how-tos make
//! one (`openssl x509 -req` without extensions: X.509 v1) is presented, and
//! OpenSSL's own server accepts it. Certificates and the server are
//! OpenSSL's, run as processes; CI installs `openssl` and runs these:
//! `cargo test -p mcp-connect-cli --test command -- --ignored openssl`.
#![cfg(feature = "rustls")]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::support::cli::{json_lines, run_async};
use crate::support::openssl::{certificates, openssl};

/// `openssl s_server` requiring a client certificate from the CA, on a
/// port of its choosing; its output (what it verified) is read back.
struct Server {
    child: Child,
    port: u16,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Server {
    fn start(dir: &Path) -> Self {
        let mut child = Command::new("openssl")
            .args(["s_server", "-accept", "127.0.0.1:0", "-cert", "server.pem"])
            .args([
                "-key",
                "server.key",
                "-CAfile",
                "ca.pem",
                "-Verify",
                "1",
                "-www",
            ])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("openssl is installed (CI: apt-get install openssl)");
        // Where it listens goes to stdout, what it verified to stderr.
        let (send, lines) = std::sync::mpsc::channel();
        let stdout: Box<dyn std::io::Read + Send> = Box::new(child.stdout.take().unwrap());
        let stderr: Box<dyn std::io::Read + Send> = Box::new(child.stderr.take().unwrap());
        for pipe in [stdout, stderr] {
            let send = send.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = send.send(line);
                }
            });
        }
        let port = loop {
            let line = lines
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("s_server says where it listens");
            if let Some(address) = line.strip_prefix("ACCEPT ") {
                break address.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        Server { child, port, lines }
    }

    /// Whether the server verified a client certificate named `client`.
    fn verified_the_client(&self) -> bool {
        let said: Vec<String> = self.lines.try_iter().collect();
        said.windows(2)
            .any(|w| w[0].contains("CN = client") && w[1] == "verify return:1")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
#[ignore = "needs openssl; CI runs it"]
async fn openssl_v1_client_certificate_is_presented_and_accepted() {
    let dir = certificates("s-server");
    let text = openssl(&dir, &["x509", "-in", "client.pem", "-noout", "-text"]);
    assert!(
        text.contains("Version: 1 (0x0)"),
        "the fixture is the v1 certificate the issue is about"
    );
    let server = Server::start(&dir);
    let url = format!("https://127.0.0.1:{}/", server.port);
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (ca, cert, key) = (path("ca.pem"), path("client.pem"), path("client.key"));
    // s_server -www answers only GET, so the MCP probe is left unanswered:
    // past the handshake, the run ends at its deadline.
    let output = run_async(&[
        &url,
        "--cacert",
        &ca,
        "--cert",
        &cert,
        "--key",
        &key,
        "--deadline",
        "1500ms",
        "--json",
    ])
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_ne!(output.status.code(), Some(2), "not a usage error: {stderr}");
    let last = json_lines(&output).last().unwrap().clone();
    assert_ne!(last["failure"]["kind"], "tls", "{last}");
    assert!(
        server.verified_the_client(),
        "the server accepted the certificate"
    );

    // With another key the v1 certificate cannot be checked here, so it
    // is presented and the server refuses the handshake: a TLS failure.
    let other = path("server.key");
    let output = run_async(&[
        &url, "--cacert", &ca, "--cert", &cert, "--key", &other, "--json",
    ])
    .await;
    let last = json_lines(&output).last().unwrap().clone();
    assert_eq!(last["failure"]["kind"], "tls", "{last}");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
