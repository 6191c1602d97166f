//! Opening a fresh transport: the one place that turns a transport kind
//! into a live [`Transport`], with its stage events and bounds.
//!
//! The ladder asks for a kind ([`TransportKind`]) and gets a transport; it
//! never builds one itself, and nothing here knows about eras. The opener
//! holds the HTTP client every transport of the establishment uses: the
//! connector's, with the bearer layer when the request authorizes.

use std::sync::Arc;

use mcp_connect_layers::{CancelSource, Stage};

use crate::error::{ConfigError, Error};
use crate::establish::stage;
use crate::request::clock::Clock;
use crate::request::ConnectRequest;
use crate::request::Target;
use crate::transport::{
    HttpClient, LegacySse, StdioTransport, StreamableHttp, Transport, TransportKind,
};

/// Opens transports for one establishment.
pub(crate) struct Opener {
    /// The client transports send on (with the bearer layer when the
    /// request authorizes).
    http: HttpClient,
}

impl Opener {
    pub(crate) fn new(http: HttpClient) -> Self {
        Opener { http }
    }

    /// A fresh transport of `kind` for `request`'s target, under `clock`.
    ///
    /// Only a stdio spawn is a `connect` stage: a Streamable HTTP transport
    /// is a value until its first request opens (or reuses) a pooled
    /// connection, so reporting `connect ok` for it would claim a
    /// connection that does not exist yet; its connection failures surface
    /// at the stage of that first request. HTTP+SSE is the
    /// `sse_endpoint` stage: the GET, and the wait for its `endpoint` event
    /// within the handshake limit.
    pub(crate) async fn open(
        &self,
        kind: TransportKind,
        request: &ConnectRequest,
        clock: &Clock,
    ) -> Result<Box<dyn Transport>, Error> {
        let limits = request.limits();
        let inbound = Arc::clone(request.inbound());
        match (kind, request.target()) {
            (TransportKind::StreamableHttp, Target::Http { url, headers, .. }) => {
                clock.check(Stage::CONNECT)?;
                let transport = StreamableHttp::new(
                    self.http.clone(),
                    url.clone(),
                    headers.clone(),
                    limits.max_message_bytes,
                )
                .with_close_timeout(limits.close_grace)
                .with_inbound(inbound);
                Ok(Box::new(transport))
            }
            (TransportKind::Sse, Target::Http { url, headers, .. }) => {
                let sse = async {
                    LegacySse::connect_with(
                        self.http.clone(),
                        url.clone(),
                        headers.clone(),
                        limits.max_message_bytes,
                        inbound,
                    )
                    .await
                    .map(|t| Box::new(t) as Box<dyn Transport>)
                    .map_err(|e| Error::transport(stage::SSE_ENDPOINT, e))
                };
                // Boxed: this arm's future is the largest of the three, and
                // inline it would make every establishment's future (moved
                // whole into its box) carry it.
                Box::pin(clock.timed(
                    stage::SSE_ENDPOINT,
                    limits.handshake_timeout,
                    CancelSource::HandshakeTimeout,
                    sse,
                ))
                .await
            }
            (TransportKind::Stdio, Target::Stdio(command)) => {
                clock.check(Stage::CONNECT)?;
                let spawn = async {
                    StdioTransport::spawn_with(
                        command,
                        limits.max_message_bytes,
                        limits.close_grace,
                        inbound,
                    )
                    .map(|t| Box::new(t) as Box<dyn Transport>)
                    .map_err(|e| Error::transport(Stage::CONNECT, e))
                };
                clock.stage(Stage::CONNECT, spawn).await
            }
            // `ConnectRequest::validate` refuses a transport that does not
            // fit the target before any is opened, and the plan never asks
            // for one.
            _ => Err(Error::config(ConfigError::TransportMismatch {
                transport: kind.as_str(),
            })),
        }
    }
}
