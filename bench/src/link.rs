//! An emulated network link: a TCP relay on 127.0.0.1 that delays every
//! chunk by a fixed one-way time in each direction, and makes a new
//! connection pay the round trip of a TCP handshake before its first bytes
//! go on (loopback connects at once, a real link does not).
//!
//! Each direction is a reader that stamps what it reads with when it may
//! arrive and a writer that sleeps until then, so order is kept and
//! several chunks can be in flight, as on a real link. With a zero delay
//! it is the same relay without the wait: the baseline the bench
//! subtracts, so that each client's and server's own processing cancels.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A running link in front of one server.
pub struct Link {
    pub addr: SocketAddr,
    connections: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Link {
    /// Relays 127.0.0.1:(a free port) to `upstream`, `one_way` each way.
    pub async fn start(upstream: SocketAddr, one_way: Duration) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind link");
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&connections);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let accepted = Instant::now();
                counted.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    // The handshake's round trip, then the first bytes'
                    // one-way trip.
                    let first = accepted + one_way * 3;
                    tokio::join!(
                        relay(client_read, server_write, one_way, first),
                        relay(server_read, client_write, one_way, accepted),
                    );
                });
            }
        });
        Link {
            addr,
            connections,
            task,
        }
    }

    /// The server's URL through the link, `https` when TLS is behind it.
    pub fn url(&self, tls: bool, path: &str) -> String {
        let scheme = if tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    /// TCP connections opened through the link so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One direction: what is read at `t` is written at `max(t + one_way,
/// not_before)`; end of stream travels the same way.
async fn relay(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    one_way: Duration,
    not_before: Instant,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Option<Vec<u8>>)>();
    let reader = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = from.read(&mut buffer).await.unwrap_or(0);
            let due = (Instant::now() + one_way).max(not_before);
            if n == 0 {
                let _ = tx.send((due, None));
                return;
            }
            if tx.send((due, Some(buffer[..n].to_vec()))).is_err() {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            match chunk {
                Some(bytes) => {
                    if to.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                None => {
                    let _ = to.shutdown().await;
                    return;
                }
            }
        }
    };
    tokio::join!(reader, writer);
}
