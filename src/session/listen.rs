//! The standalone server stream, read by the session that owns it.
//!
//! On the legacy era a Streamable HTTP server sends what belongs to no
//! request (list changes, log messages, requests of its own) on the GET
//! stream. When the connection request has a handler or a listener, the
//! handshake opens that stream before handing the session over (a server
//! may send a request there at once), and the session reads it on one task,
//! stopped when the session closes or is dropped.
//!
//! A stream the server cut (ended or broken) after giving an event id is
//! continued with `GET` and `Last-Event-ID` after its `retry:` delay, within
//! the bounds of [`resume`](crate::transport::resume); one without an id,
//! one the server will not resume, and one cut too often in a row stay
//! ended. The same reader serves a 2026-07-28 subscription stream, which is
//! never resumed (that era has no `GET`; a new subscription replaces it).

use std::sync::Arc;

use mcp_connect_layers::Closure;
use tokio::task::JoinHandle;

use crate::error::TransportError;
use crate::inbound::Inbound;
use crate::protocol::{Incoming, ProtocolVersion};
use crate::transport::{ServerStream, Transport};

/// The reading task; aborted when dropped.
pub(super) struct Listener {
    task: JoinHandle<()>,
}

impl Listener {
    pub(super) fn start(
        stream: ServerStream,
        transport: Arc<dyn Transport>,
        inbound: Arc<Inbound>,
        version: ProtocolVersion,
    ) -> Self {
        Listener {
            task: tokio::spawn(read(stream, transport, inbound, version, Resume::Yes)),
        }
    }

    pub(super) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether a cut stream is continued.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Resume {
    Yes,
    No,
}

/// Reads a server stream until it ends for good, handing its notifications
/// and requests to `inbound`.
pub(super) async fn read(
    mut stream: ServerStream,
    transport: Arc<dyn Transport>,
    inbound: Arc<Inbound>,
    version: ProtocolVersion,
    resume: Resume,
) {
    loop {
        let cut = loop {
            match stream.next().await {
                Some(Ok(message)) => deliver(message, &transport, &inbound, &version),
                None => break Closure::Eof,
                Some(Err(TransportError::Interrupted(_))) => break Closure::Reset,
                // Not MCP, or too large: not worth continuing.
                Some(Err(_)) => return,
            }
        };
        if resume == Resume::No || transport.closed().is_some() {
            return;
        }
        // The transport waits the server's delay and bounds the attempts.
        if transport
            .resume_server_stream(&mut stream, cut)
            .await
            .is_err()
        {
            return;
        }
    }
}

fn deliver(
    message: Incoming,
    transport: &Arc<dyn Transport>,
    inbound: &Arc<Inbound>,
    version: &ProtocolVersion,
) {
    match message {
        Incoming::Notification { method, params } => inbound.notify(method, params),
        Incoming::Request { id, method, params } => {
            // Its own task: the stream keeps being read meanwhile.
            let (transport, inbound, version) =
                (Arc::clone(transport), Arc::clone(inbound), version.clone());
            tokio::spawn(async move {
                let response = inbound.answer(&id, &method, params).await;
                let _ = transport.respond(response, Some(&version)).await;
            });
        }
        _ => tracing::debug!("reply on the standalone server stream dropped"),
    }
}
