//! An in-process duplex transport, for tests of code that sits above a
//! transport (the handshake, sessions) without sockets or processes.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use mcp_connect_layers::Closure;
use tokio::io::DuplexStream;

use super::error::TransportError;
use super::lines::LineTransport;
use super::{Reply, Transport, TransportKind};
use crate::inbound::Inbound;
use crate::protocol::{Notification, ProtocolVersion, Request};

/// JSON lines over a [`tokio::io::duplex`] pipe. The other end is handed to
/// the test, which plays the server.
pub struct MemoryTransport {
    lines: LineTransport,
}

impl MemoryTransport {
    /// A transport and the server's end of its pipe. `max_line` bounds one
    /// message in bytes.
    pub fn pair(max_line: usize) -> (MemoryTransport, DuplexStream) {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(client);
        let lines = LineTransport::new(read, write, max_line, Closure::Eof, Inbound::none());
        (MemoryTransport { lines }, server)
    }
}

impl std::fmt::Debug for MemoryTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTransport").finish_non_exhaustive()
    }
}

impl super::sealed::Sealed for MemoryTransport {}

impl Transport for MemoryTransport {
    fn request<'a>(
        &'a self,
        request: &'a Request,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<Reply, TransportError>> {
        self.lines.request(request).boxed()
    }

    fn notify<'a>(
        &'a self,
        notification: &'a Notification,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.lines.notify(notification).boxed()
    }

    fn respond<'a>(
        &'a self,
        response: Vec<u8>,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.lines.respond(response).boxed()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        async move {
            self.lines.shutdown_writer().await;
            self.lines.finish_local();
            Ok(())
        }
        .boxed()
    }

    fn closed(&self) -> Option<Closure> {
        self.lines.closed()
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Memory
    }
}
