//! The standalone server stream, read by the session that owns it.
//!
//! On the legacy era a Streamable HTTP server sends what belongs to no
//! request (list changes, log messages, requests of its own) on the GET
//! stream. A session whose connection request has a handler or a listener
//! opens that stream once, reads it on one task, and stops it when the
//! session closes or is dropped. A server that offers none (405, 400) is
//! fine: the task ends. A stream that ends is not reopened here (issue 15
//! resumes streams).

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::inbound::Inbound;
use crate::protocol::{Incoming, ProtocolVersion};
use crate::transport::Transport;

/// The reading task; aborted when dropped.
pub(super) struct Listener {
    task: JoinHandle<()>,
}

impl Listener {
    pub(super) fn start(
        transport: Arc<dyn Transport>,
        inbound: Arc<Inbound>,
        version: ProtocolVersion,
    ) -> Self {
        Listener {
            task: tokio::spawn(listen(transport, inbound, version)),
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

async fn listen(transport: Arc<dyn Transport>, inbound: Arc<Inbound>, version: ProtocolVersion) {
    let mut stream = match transport.open_server_stream().await {
        Ok(Some(stream)) => stream,
        Ok(None) => return,
        Err(_) => {
            tracing::debug!("standalone server stream could not be opened");
            return;
        }
    };
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
