//! Proxies for tests: tinyproxy (a real one, one per test, Basic
//! authentication on), a relay that records every byte a proxy is sent,
//! and a scripted proxy that answers every request with one status.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The Basic credentials every tinyproxy here requires.
pub const USER: &str = "proxy-user";
/// A canary: it must never be printed, logged or sent to an origin.
pub const PASSWORD: &str = "canary-proxy-password";

/// A tinyproxy process on a loopback port, requiring [`USER`] and
/// [`PASSWORD`]. Missing tinyproxy fails the test: CI installs it.
pub struct Tinyproxy {
    child: Child,
    port: u16,
    dir: PathBuf,
}

fn tinyproxy_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("TINYPROXY") {
        return path.into();
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/bin".into(), "/usr/sbin".into()]);
    dirs.into_iter()
        .map(|dir| dir.join("tinyproxy"))
        .find(|path| path.is_file())
        .expect("tinyproxy is not installed (apt-get install tinyproxy); these tests need it")
}

impl Tinyproxy {
    /// Starts one and waits until it accepts connections.
    pub fn start() -> Tinyproxy {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-connect-tinyproxy-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let config = dir.join("tinyproxy.conf");
        let mut file = std::fs::File::create(&config).expect("the config");
        write!(
            file,
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nLogLevel Info\nMaxClients 64\n\
             Allow 127.0.0.1\nDisableViaHeader Yes\nBasicAuth {USER} {PASSWORD}\n"
        )
        .expect("the config is written");
        let log = std::fs::File::create(dir.join("log")).expect("the log");
        let child = Command::new(tinyproxy_binary())
            .arg("-d")
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log"))
            .stderr(log)
            .spawn()
            .expect("tinyproxy starts");
        let proxy = Tinyproxy { child, port, dir };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "tinyproxy did not listen: {}",
                proxy.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        proxy
    }

    /// `http://USER:PASSWORD@127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.url_with(PASSWORD)
    }

    /// The URL with another password.
    pub fn url_with(&self, password: &str) -> String {
        format!("http://{USER}:{password}@127.0.0.1:{}", self.port)
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `http://127.0.0.1:PORT/`: what the client reports, no credentials.
    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Its log, as text.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// The request lines it logged, in order (`CONNECT host:port HTTP/1.1`,
    /// `POST http://host:port/mcp HTTP/1.1`).
    pub fn requests(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|line| line.split_once("Request (file descriptor "))
            .filter_map(|(_, rest)| rest.split_once("): "))
            .map(|(_, request)| request.to_owned())
            .collect()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Forwards every connection to `upstream`, keeping every byte the client
/// sent: what the proxy behind it was shown.
pub struct Relay {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<u8>>>,
    task: JoinHandle<()>,
}

impl Relay {
    /// Starts one in front of `upstream`.
    pub async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let seen = Arc::clone(&seen);
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let seen = Arc::clone(&seen);
                    tokio::spawn(async move {
                        let Ok(server) = TcpStream::connect(upstream).await else {
                            return;
                        };
                        let (mut client_read, mut client_write) = client.into_split();
                        let (mut server_read, mut server_write) = server.into_split();
                        let up = async {
                            let mut buffer = vec![0; 16 * 1024];
                            while let Ok(n @ 1..) = client_read.read(&mut buffer).await {
                                seen.lock().unwrap().extend_from_slice(&buffer[..n]);
                                if server_write.write_all(&buffer[..n]).await.is_err() {
                                    break;
                                }
                            }
                            let _ = server_write.shutdown().await;
                        };
                        let down = async {
                            let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                            let _ = client_write.shutdown().await;
                        };
                        tokio::join!(up, down);
                    });
                }
            }
        });
        Relay { addr, seen, task }
    }

    /// The relay's address, as `host:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every byte clients sent so far.
    pub fn seen(&self) -> Vec<u8> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A proxy that answers every request (a `CONNECT` or an absolute-form
/// one) with one status and closes; status 0 closes without answering.
pub struct AnsweringProxy {
    addr: SocketAddr,
    connections: Arc<AtomicU64>,
    heads: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl AnsweringProxy {
    /// Starts one on a loopback port.
    pub async fn start(status: u16) -> AnsweringProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let connections = Arc::new(AtomicU64::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let (connections, heads) = (Arc::clone(&connections), Arc::clone(&heads));
            async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::Relaxed);
                    let heads = Arc::clone(&heads);
                    tokio::spawn(async move {
                        let mut head = Vec::new();
                        let mut byte = [0; 1];
                        while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                            match stream.read(&mut byte).await {
                                Ok(1) => head.push(byte[0]),
                                _ => return,
                            }
                        }
                        heads
                            .lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&head).into_owned());
                        if status == 0 {
                            return;
                        }
                        let challenge = if status == 407 {
                            "Proxy-Authenticate: Basic realm=\"test\"\r\n"
                        } else {
                            ""
                        };
                        let answer = format!(
                            "HTTP/1.1 {status} Scripted\r\n{challenge}Content-Length: 0\r\nConnection: close\r\n\r\n"
                        );
                        let _ = stream.write_all(answer.as_bytes()).await;
                        let _ = stream.shutdown().await;
                    });
                }
            }
        });
        AnsweringProxy {
            addr,
            connections,
            heads,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// The request heads received, as text.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

impl Drop for AnsweringProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
