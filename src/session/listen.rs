//! The standalone server stream, read by the session that owns it.
//!
//! On the legacy era a Streamable HTTP server sends what belongs to no
//! request (list changes, log messages, requests of its own) on the GET
//! stream. When the connection request has a handler or a listener, the
//! handshake opens that stream before handing the session over (a server
//! may send a request there at once), and the session reads it on one task,
//! stopped when the session closes or is dropped. A stream that ends is not
//! reopened here (resuming streams is issue 15's).

use std::sync::Arc;

use tokio::task::JoinHandle;

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
            task: tokio::spawn(read(stream, transport, inbound, version)),
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

/// Reads a server stream until it ends, handing its notifications and
/// requests to `inbound`.
pub(super) async fn read(
    mut stream: ServerStream,
    transport: Arc<dyn Transport>,
    inbound: Arc<Inbound>,
    version: ProtocolVersion,
) {
    while let Some(message) = stream.next().await {
        match message {
            Ok(Incoming::Notification { method, params }) => inbound.notify(method, params),
            Ok(Incoming::Request { id, method, params }) => {
                // Its own task: the stream keeps being read meanwhile.
                let (transport, inbound, version) = (
                    Arc::clone(&transport),
                    Arc::clone(&inbound),
                    version.clone(),
                );
                tokio::spawn(async move {
                    let response = inbound.answer(&id, &method, params).await;
                    let _ = transport.respond(response, Some(&version)).await;
                });
            }
            Ok(_) => tracing::debug!("reply on the standalone server stream dropped"),
            Err(_) => break,
        }
    }
}
