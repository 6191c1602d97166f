//! Newline-delimited JSON over any duplex byte stream: the shared core of the
//! stdio and in-memory transports.
//!
//! One reader task per transport matches replies to waiters by id and answers
//! server requests; writers share the write half behind an async mutex. When
//! the stream ends, every pending waiter is failed at once with the closure
//! category and later requests fail fast.

use std::sync::Arc;

use futures_util::StreamExt;
use mcp_connect_layers::Closure;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};

use tokio_util::sync::CancellationToken;

use super::error::TransportError;
use super::waiters::{Dispatched, Waiters};
use super::Reply;
use crate::inbound::Inbound;
use crate::protocol::{Incoming, Notification, Request};

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

struct Shared {
    writer: tokio::sync::Mutex<Option<Writer>>,
    waiters: Waiters,
    /// How the transport ends when the peer goes away.
    eof: Closure,
    inbound: Arc<Inbound>,
    /// Cancelled when the transport ends: handler tasks stop with it.
    ended: CancellationToken,
}

impl Shared {
    async fn write_line(&self, mut bytes: Vec<u8>) -> Result<(), TransportError> {
        bytes.push(b'\n');
        let mut writer = self.writer.lock().await;
        let Some(writer) = writer.as_mut() else {
            return Err(TransportError::Closed(
                self.waiters.closed().unwrap_or(Closure::Local),
            ));
        };
        let written = match writer.write_all(&bytes).await {
            Ok(()) => writer.flush().await,
            Err(e) => Err(e),
        };
        written.map_err(|e| match e.kind() {
            // The peer closed its end: the transport is over, whether or not
            // the reader has seen the EOF yet.
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                self.waiters.finish(self.eof);
                TransportError::Closed(self.waiters.closed().unwrap_or(self.eof))
            }
            _ => TransportError::Io(e),
        })
    }

    fn check_open(&self) -> Result<(), TransportError> {
        match self.waiters.closed() {
            Some(closure) => Err(TransportError::Closed(closure)),
            None => Ok(()),
        }
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
    pub(crate) fn new<R, W>(
        reader: R,
        writer: W,
        max_line: usize,
        eof: Closure,
        inbound: Arc<Inbound>,
    ) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let shared = Arc::new(Shared {
            writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
            waiters: Waiters::default(),
            eof,
            inbound,
            ended: CancellationToken::new(),
        });
        // Bytes, not text: a line that is not UTF-8 is one more line that is
        // not a message, skipped like any other.
        let codec =
            AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), b"\n".to_vec(), max_line);
        let lines = FramedRead::new(reader, codec);
        let reader = tokio::spawn(read_loop(lines, Arc::clone(&shared), eof, max_line));
        LineTransport { shared, reader }
    }

    pub(crate) async fn request(&self, request: &Request) -> Result<Reply, TransportError> {
        let registration = self.shared.waiters.register(&request.id)?;
        self.shared.write_line(request.to_bytes()).await?;
        registration.reply().await
    }

    pub(crate) async fn notify(&self, notification: &Notification) -> Result<(), TransportError> {
        self.shared.check_open()?;
        self.shared.write_line(notification.to_bytes()).await
    }

    pub(crate) async fn respond(&self, response: Vec<u8>) -> Result<(), TransportError> {
        self.shared.check_open()?;
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
        self.shared.waiters.finish(Closure::Local);
        self.shared.ended.cancel();
        self.reader.abort();
    }

    pub(crate) fn closed(&self) -> Option<Closure> {
        self.shared.waiters.closed()
    }

    /// Lines and messages skipped so far (see [`Transport::skipped`](super::Transport::skipped)).
    pub(crate) fn skipped(&self) -> u64 {
        self.shared.waiters.skipped()
    }
}

impl Drop for LineTransport {
    fn drop(&mut self) {
        self.shared.ended.cancel();
        self.reader.abort();
    }
}

async fn read_loop<R>(
    mut lines: FramedRead<R, AnyDelimiterCodec>,
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
            Some(Err(AnyDelimiterCodecError::MaxChunkLengthExceeded)) => {
                tracing::debug!(limit = max_line, "server line exceeds the size bound");
                shared
                    .waiters
                    .fail_all(|| TransportError::TooLarge { limit: max_line });
                break Closure::Reset;
            }
            Some(Err(AnyDelimiterCodecError::Io(_))) => break Closure::Reset,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(messages) = Incoming::parse_many(&line) else {
            shared.waiters.skip("a line that is not a JSON-RPC message");
            continue;
        };
        for message in messages {
            dispatch(&shared, message);
        }
    };
    shared.waiters.finish(closure);
    shared.ended.cancel();
}

/// Routes one message: replies to their waiters, notifications to the
/// listener, server requests to the handler on a task of their own.
fn dispatch(shared: &Arc<Shared>, message: Incoming) {
    match shared.waiters.dispatch(message) {
        Dispatched::Done => {}
        Dispatched::Notification(method, params) => shared.inbound.notify(method, params),
        // Its own task: a slow handler must not hold up the replies this
        // reader delivers.
        Dispatched::Request(id, method, params) => {
            let shared = Arc::clone(shared);
            tokio::spawn(async move {
                let ended = shared.ended.clone();
                tokio::select! {
                    _ = ended.cancelled() => {}
                    response = shared.inbound.answer(&id, &method, params) => {
                        let _ = shared.write_line(response).await;
                    }
                }
            });
        }
    }
}
