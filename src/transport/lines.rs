//! Newline-delimited JSON over any duplex byte stream: the shared core of the
//! stdio and in-memory transports.
//!
//! One reader task per transport matches replies to waiters by id and answers
//! server requests; writers share the write half behind an async mutex. When
//! the stream ends, every pending waiter is failed at once with the closure
//! category and later requests fail fast.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use mcp_connect_layers::Closure;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::{answer_server_request, Reply};
use crate::error::TransportError;
use crate::protocol::{Incoming, Notification, Request, RequestId};

type Waiter = oneshot::Sender<Result<Reply, TransportError>>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

#[derive(Default)]
struct Pending {
    waiters: HashMap<i64, Waiter>,
    closed: Option<Closure>,
}

struct Shared {
    writer: tokio::sync::Mutex<Option<Writer>>,
    pending: Mutex<Pending>,
}

impl Shared {
    /// Marks the stream ended and fails every waiter with `closure`. The first
    /// closure recorded wins.
    fn finish(&self, closure: Closure) {
        let waiters = {
            let mut pending = self.pending.lock().expect("pending lock poisoned");
            pending.closed.get_or_insert(closure);
            std::mem::take(&mut pending.waiters)
        };
        let closure = self.closed().unwrap_or(closure);
        for (_, waiter) in waiters {
            let _ = waiter.send(Err(TransportError::Closed(closure)));
        }
    }

    fn closed(&self) -> Option<Closure> {
        self.pending.lock().expect("pending lock poisoned").closed
    }

    async fn write_line(&self, mut bytes: Vec<u8>) -> Result<(), TransportError> {
        bytes.push(b'\n');
        let mut writer = self.writer.lock().await;
        let Some(writer) = writer.as_mut() else {
            return Err(TransportError::Closed(
                self.closed().unwrap_or(Closure::Local),
            ));
        };
        writer.write_all(&bytes).await.map_err(TransportError::Io)?;
        writer.flush().await.map_err(TransportError::Io)
    }
}

/// A JSON-lines transport over a reader and a writer.
pub(crate) struct LineTransport {
    shared: Arc<Shared>,
    reader: JoinHandle<()>,
}

impl LineTransport {
    /// Starts the reader task. `eof` is the closure reported when the reader
    /// sees end of stream (a process exit for stdio).
    pub(crate) fn new<R, W>(reader: R, writer: W, max_line: usize, eof: Closure) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let shared = Arc::new(Shared {
            writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
            pending: Mutex::new(Pending::default()),
        });
        let lines = FramedRead::new(reader, LinesCodec::new_with_max_length(max_line));
        let reader = tokio::spawn(read_loop(lines, Arc::clone(&shared), eof, max_line));
        LineTransport { shared, reader }
    }

    pub(crate) async fn request(&self, request: &Request) -> Result<Reply, TransportError> {
        let RequestId::Number(id) = request.id else {
            unreachable!("this client only sends numeric ids")
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.shared.pending.lock().expect("pending lock poisoned");
            if let Some(closure) = pending.closed {
                return Err(TransportError::Closed(closure));
            }
            pending.waiters.insert(id, tx);
        }
        // Removes the waiter if this future is dropped or the write fails.
        let guard = WaiterGuard {
            shared: &self.shared,
            id,
        };
        self.shared.write_line(request.to_bytes()).await?;
        let reply = rx.await;
        drop(guard);
        match reply {
            Ok(reply) => reply,
            Err(_) => Err(TransportError::Closed(
                self.shared.closed().unwrap_or(Closure::Local),
            )),
        }
    }

    pub(crate) async fn notify(&self, notification: &Notification) -> Result<(), TransportError> {
        if let Some(closure) = self.shared.closed() {
            return Err(TransportError::Closed(closure));
        }
        self.shared.write_line(notification.to_bytes()).await
    }

    pub(crate) async fn respond(&self, response: Vec<u8>) -> Result<(), TransportError> {
        if let Some(closure) = self.shared.closed() {
            return Err(TransportError::Closed(closure));
        }
        self.shared.write_line(response).await
    }

    /// Closes the write half (the peer sees EOF) without waiting for it.
    pub(crate) async fn shutdown_writer(&self) {
        if let Some(mut writer) = self.shared.writer.lock().await.take() {
            let _ = writer.shutdown().await;
        }
    }

    /// Ends the transport locally: waiters fail with [`Closure::Local`] and
    /// the reader task stops.
    pub(crate) fn finish_local(&self) {
        self.shared.finish(Closure::Local);
        self.reader.abort();
    }

    pub(crate) fn closed(&self) -> Option<Closure> {
        self.shared.closed()
    }

    /// Whether the reader task has stopped.
    #[allow(dead_code)] // used by tests that check no task is left running
    pub(crate) fn reader_finished(&self) -> bool {
        self.reader.is_finished()
    }
}

impl Drop for LineTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

struct WaiterGuard<'a> {
    shared: &'a Shared,
    id: i64,
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.shared.pending.lock() {
            pending.waiters.remove(&self.id);
        }
    }
}

async fn read_loop<R>(
    mut lines: FramedRead<R, LinesCodec>,
    shared: Arc<Shared>,
    eof: Closure,
    max_line: usize,
) where
    R: AsyncRead + Unpin,
{
    let closure = loop {
        let line = match lines.next().await {
            None => break eof,
            Some(Ok(line)) => line,
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                tracing::debug!(limit = max_line, "server line exceeds the size bound");
                fail_all(&shared, || TransportError::TooLarge { limit: max_line });
                break Closure::Reset;
            }
            Some(Err(LinesCodecError::Io(_))) => break Closure::Reset,
        };
        if line.trim().is_empty() {
            continue;
        }
        match Incoming::parse(line.as_bytes()) {
            Ok(Incoming::Response { id, result }) => deliver(&shared, &id, Ok(Ok(result))),
            Ok(Incoming::Error {
                id: Some(id),
                error,
            }) => deliver(&shared, &id, Ok(Err(error))),
            Ok(Incoming::Error { id: None, error }) => deliver_unaddressed(&shared, error),
            Ok(Incoming::Request { id, method, .. }) => {
                if shared
                    .write_line(answer_server_request(&id, &method))
                    .await
                    .is_err()
                {
                    break Closure::Reset;
                }
            }
            Ok(Incoming::Notification { method, .. }) => {
                tracing::trace!(method = %method, "server notification dropped");
            }
            Err(_) => tracing::debug!("server sent a line that is not JSON-RPC; skipped"),
        }
    };
    shared.finish(closure);
}

fn deliver(shared: &Shared, id: &RequestId, reply: Result<Reply, TransportError>) {
    let waiter = match id {
        RequestId::Number(n) => shared
            .pending
            .lock()
            .expect("pending lock poisoned")
            .waiters
            .remove(n),
        RequestId::String(_) => None,
    };
    match waiter {
        Some(waiter) => {
            let _ = waiter.send(reply);
        }
        None => tracing::debug!("reply to an unknown request id dropped"),
    }
}

/// An error with `"id": null` answers the one pending request when there is
/// exactly one; with several it cannot be attributed and is dropped.
fn deliver_unaddressed(shared: &Shared, error: crate::protocol::RpcError) {
    let mut pending = shared.pending.lock().expect("pending lock poisoned");
    if pending.waiters.len() == 1 {
        let id = *pending.waiters.keys().next().expect("one waiter");
        let waiter = pending.waiters.remove(&id).expect("present");
        drop(pending);
        let _ = waiter.send(Ok(Err(error)));
    } else {
        tracing::debug!("error without an id could not be attributed; dropped");
    }
}

fn fail_all(shared: &Shared, error: impl Fn() -> TransportError) {
    let waiters = std::mem::take(
        &mut shared
            .pending
            .lock()
            .expect("pending lock poisoned")
            .waiters,
    );
    for (_, waiter) in waiters {
        let _ = waiter.send(Err(error()));
    }
}
