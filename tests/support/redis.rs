//! A real redis-server (Debian's) for the fleet tests: one per test, on a
//! loopback port, with a password, nothing on disk. Missing redis-server
//! fails the test: CI installs it.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A canary: the password must never be printed or logged.
pub const PASSWORD: &str = "canary-redis-password";

fn binary(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/bin".into(), "/usr/sbin".into()]);
    dirs.into_iter()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is not installed (apt-get install redis-server); these tests need it")
        })
}

pub struct Redis {
    child: Option<Child>,
    port: u16,
    /// With TLS only: the directory of `support::openssl::certificates`.
    tls: Option<PathBuf>,
}

impl Redis {
    /// Starts one on a free port and waits until it answers.
    pub fn start() -> Redis {
        Self::on_a_free_port(None)
    }

    /// Starts one that speaks only TLS, with the server certificate in
    /// `certificates` (see `support::openssl`), asking no client
    /// certificate.
    pub fn start_tls(certificates: &std::path::Path) -> Redis {
        Self::on_a_free_port(Some(certificates.to_owned()))
    }

    fn on_a_free_port(tls: Option<PathBuf>) -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut redis = Redis {
            child: None,
            port,
            tls,
        };
        redis.restart();
        redis
    }

    /// How to listen: a plain port, or a TLS one and no plain one.
    fn listening(&self) -> Vec<String> {
        let port = self.port.to_string();
        match &self.tls {
            None => vec!["--port".into(), port],
            Some(dir) => {
                let file = |name: &str| dir.join(name).to_string_lossy().into_owned();
                vec![
                    "--port".into(),
                    "0".into(),
                    "--tls-port".into(),
                    port,
                    "--tls-cert-file".into(),
                    file("server.pem"),
                    "--tls-key-file".into(),
                    file("server.key"),
                    "--tls-ca-cert-file".into(),
                    file("ca.pem"),
                    "--tls-auth-clients".into(),
                    "no".into(),
                ]
            }
        }
    }

    /// Starts it again on the same port (after [`kill`](Self::kill)).
    pub fn restart(&mut self) {
        let child = Command::new(binary("redis-server"))
            .args(self.listening())
            .args(["--bind", "127.0.0.1"])
            .args([
                "--requirepass",
                PASSWORD,
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let started = Instant::now();
        while self.cli(&["PING"]).trim() != "PONG" {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Freezes it (SIGSTOP): connections are still accepted by the kernel,
    /// and nothing is answered, as a Redis stalled on a slow disk or a long
    /// script would behave.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen one go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let status = Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Stops it (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://:{PASSWORD}@127.0.0.1:{}/", self.port)
    }

    /// `redis-cli` against it: stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let Output { stdout, .. } = Command::new(binary("redis-cli"))
            .args([
                "-p",
                &self.port.to_string(),
                "-a",
                PASSWORD,
                "--no-auth-warning",
            ])
            .args(self.tls.iter().flat_map(|dir| {
                let ca = dir.join("ca.pem").to_string_lossy().into_owned();
                ["--tls".to_owned(), "--cacert".to_owned(), ca]
            }))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&stdout).into_owned()
    }

    /// Every key and everything under it, as `redis-cli` prints it.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for key in self.cli(&["--scan"]).lines() {
            out.push_str(key);
            out.push('\n');
            let kind = self.cli(&["TYPE", key]);
            let value = match kind.trim() {
                "hash" => self.cli(&["HGETALL", key]),
                _ => self.cli(&["GET", key]),
            };
            out.push_str(&value);
        }
        out
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
