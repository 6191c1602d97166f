//! The ladder itself, on one attempt: probe, `initialize`, the HTTP+SSE
//! fallback, each stage bounded by the clock.

use crate::protocol::methods;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::establish::stage;
use mcp_connect_layers::{CancelSource, Failure, FailureKind, Stage};

use crate::era_cache::RememberedDiscover;
use crate::error::{Error, ErrorKind, VersionError};
use crate::protocol::{
    codes, DiscoverResult, Era, InitializeParams, InitializeResult, Notification, ProtocolVersion,
    Request, RequestId,
};
use crate::request::clock::Clock;
use crate::request::{ConnectRequest, TransportMode};
use crate::session::{ClientIdentity, Negotiated};
use crate::transport::{Transport, TransportKind};

use super::open::Opener;
use super::plan::Plan;
use super::verdict::{
    judge_probe, modern_evidence, sse_fallback_allowed, ProbeVerdict, MAX_PROBES,
};
use crate::response_cache::Context;

pub(super) struct Ladder<'a> {
    request: &'a ConnectRequest,
    clock: &'a Clock,
    opener: &'a Opener,
    /// Who is asking, when the era cache may remember a discover answer
    /// (it keys what is private to an authorization context).
    remembering: Option<Context>,
    next_id: i64,
    transport: Box<dyn Transport>,
    /// The `_meta` envelope of the last probe, encoded once: a modern
    /// session goes on sending the same bytes.
    probe_meta: Option<Arc<RawValue>>,
    /// What the era cache may remember of the last discover answer.
    discovered: Option<RememberedDiscover>,
}

impl<'a> Ladder<'a> {
    /// A ladder for `request` on `transport`, opening any other transport
    /// with `opener`, and remembering discover answers for `remembering`
    /// (when the era cache is on).
    pub(super) fn new(
        request: &'a ConnectRequest,
        clock: &'a Clock,
        opener: &'a Opener,
        remembering: Option<Context>,
        transport: Box<dyn Transport>,
    ) -> Self {
        Ladder {
            request,
            clock,
            opener,
            remembering,
            next_id: 1,
            transport,
            probe_meta: None,
            discovered: None,
        }
    }

    /// The transport the ladder is on.
    pub(super) fn transport(&self) -> &dyn Transport {
        self.transport.as_ref()
    }

    /// The transport, and the id its session's next request takes.
    pub(super) fn into_parts(self) -> (Box<dyn Transport>, i64) {
        (self.transport, self.next_id)
    }

    /// Closes the current transport and opens a fresh one of `kind`.
    async fn reopen(&mut self, kind: TransportKind) -> Result<(), Error> {
        self.dispose().await;
        self.transport = self.opener.open(kind, self.request, self.clock).await?;
        self.next_id = 1;
        Ok(())
    }

    fn id(&mut self) -> RequestId {
        let id = self.next_id;
        self.next_id += 1;
        RequestId::Number(id)
    }

    fn client(&self) -> &ClientIdentity {
        self.request.client()
    }

    pub(super) async fn run(&mut self, plan: Plan) -> Result<Negotiated, Error> {
        let policy = self.request.versions();
        if let (Some(version), Some(result)) = (&plan.probe_at, plan.remembered) {
            if policy.allows(version) {
                // The server said its discover result stays fresh: no
                // probe, the first request is the application's.
                let mut negotiated = modern(version.clone(), result, None);
                negotiated.from_memory = true;
                return Ok(negotiated);
            }
        }
        let mut probe_at = plan.probe_at;
        let mut probes = 0;
        let mut offer = plan.offer.filter(|v| policy.allows(v));
        loop {
            if let Some(version) = probe_at.take().filter(|_| probes < MAX_PROBES) {
                probes += 1;
                match self.probe(&version).await? {
                    ProbeVerdict::Modern(version, result) => {
                        let mut negotiated = modern(version, result, self.probe_meta.take());
                        negotiated.discovered = self.discovered.take();
                        return Ok(negotiated);
                    }
                    ProbeVerdict::RetryAt(next) => {
                        probe_at = Some(next);
                        continue;
                    }
                    ProbeVerdict::Legacy(named, _) => offer = named.or(offer),
                    ProbeVerdict::LegacyOnFreshTransport(_) => {
                        self.reopen(self.transport.kind()).await?;
                    }
                }
            }
            let Some(offer) = offer.clone().or_else(|| policy.newest(Era::Legacy)) else {
                let error = Error::new(stage::PROBE, ErrorKind::Version(VersionError::NoMutual));
                self.clock.fail(&error);
                return Err(error);
            };
            let error = match self.initialize(&offer).await {
                Ok(negotiated) => return Ok(negotiated),
                Err(error) => error,
            };
            if probes < MAX_PROBES {
                if let Some(version) = modern_evidence(&error, policy) {
                    probe_at = Some(version);
                    continue;
                }
            }
            let may_fall_back = self.request.mode() == TransportMode::Auto
                && self.transport.kind() == TransportKind::StreamableHttp
                && sse_fallback_allowed(&error);
            if !may_fall_back {
                return Err(error);
            }
            // The POST endpoint refused initialize: try the 2024 HTTP+SSE transport.
            if let Err(sse_error) = self.reopen(TransportKind::Sse).await {
                return Err(error.with_also(sse_error));
            }
            return self
                .initialize(&offer)
                .await
                .map_err(|sse_error| error.with_also(sse_error));
        }
    }
    async fn probe(&mut self, version: &ProtocolVersion) -> Result<ProbeVerdict, Error> {
        let clock = self.clock;
        clock.begin(stage::PROBE);
        let meta = self.client().encoded_meta(version);
        self.probe_meta = Some(Arc::clone(&meta));
        let request = Request::new(self.id(), methods::SERVER_DISCOVER, None).with_meta(meta);
        let limits = self.request.limits();
        let transport = self.transport.as_ref();
        let outcome = clock
            .limit(
                stage::PROBE,
                limits.probe_timeout,
                CancelSource::ProbeTimeout,
                async {
                    transport
                        .request(&request, Some(version))
                        .await
                        .map_err(|e| Error::transport(stage::PROBE, e))
                },
            )
            .await;
        self.discovered = match (&outcome, &self.remembering) {
            (Ok(Ok(raw)), Some(context)) => RememberedDiscover::of(raw.get(), context),
            _ => None,
        };
        let verdict = judge_probe(
            outcome,
            version,
            self.request.versions(),
            transport.kind(),
            self.request.probe_timeout_is_legacy(),
        );
        match &verdict {
            Ok(ProbeVerdict::Modern(..)) => clock.succeed(stage::PROBE),
            Ok(
                ProbeVerdict::Legacy(_, evidence) | ProbeVerdict::LegacyOnFreshTransport(evidence),
            ) => {
                clock.fail_with(*evidence);
            }
            Ok(ProbeVerdict::RetryAt(_)) => clock.fail_with(
                Failure::new(stage::PROBE, FailureKind::Version)
                    .with_jsonrpc_code(codes::UNSUPPORTED_PROTOCOL_VERSION),
            ),
            Err(error) => clock.fail(error),
        }
        verdict
    }

    async fn initialize(&mut self, offer: &ProtocolVersion) -> Result<Negotiated, Error> {
        let clock = self.clock;
        let limits = self.request.limits();
        let id = self.id();
        let params = InitializeParams {
            protocol_version: offer,
            capabilities: self.client().capabilities(),
            client_info: self.client().info(),
        };
        let request = Request::new(
            id,
            methods::INITIALIZE,
            Some(serde_json::to_value(params).expect("params serialize")),
        );
        let transport = self.transport.as_ref();
        let policy = self.request.versions();
        let result = clock
            .timed(
                stage::INITIALIZE,
                limits.handshake_timeout,
                CancelSource::HandshakeTimeout,
                async {
                    let reply = transport
                        .request(&request, None)
                        .await
                        .map_err(|e| Error::transport(stage::INITIALIZE, e))?
                        .map_err(|rpc| Error::new(stage::INITIALIZE, ErrorKind::Rpc(rpc)))?;
                    let result: InitializeResult = serde_json::from_str(reply.get())
                        .map_err(|e| Error::new(stage::INITIALIZE, ErrorKind::Result(e.into())))?;
                    if result.protocol_version.era() != Era::Legacy
                        || !policy.allows(&result.protocol_version)
                    {
                        return Err(Error::new(
                            stage::INITIALIZE,
                            ErrorKind::Version(VersionError::NotAllowed {
                                offered: result.protocol_version,
                            }),
                        ));
                    }
                    Ok(result)
                },
            )
            .await?;
        let version = result.protocol_version.clone();
        let notification = Notification {
            method: methods::INITIALIZED.into(),
            params: None,
        };
        clock
            .timed(
                stage::INITIALIZED,
                limits.handshake_timeout,
                CancelSource::HandshakeTimeout,
                async {
                    transport
                        .notify(&notification, Some(&version))
                        .await
                        .map_err(|e| Error::transport(stage::INITIALIZED, e))
                },
            )
            .await?;
        Ok(Negotiated {
            version,
            server_info: result.server_info,
            capabilities: result.capabilities,
            instructions: result.instructions,
            meta: None,
            discovered: None,
            from_memory: false,
        })
    }

    /// Closes the current transport within the close bound. Errors are
    /// logged by category and never replace the establishment's error.
    pub(super) async fn dispose(&self) {
        close_within(self.request.limits().close_bound(), self.transport.as_ref()).await;
    }

    /// Closes the transport of a climb that failed, never keeping the
    /// caller past its deadline: the close has the close bound as ever,
    /// and what of it does not fit before the deadline goes on in the
    /// background. (Found by the simulation in `sim/`: a `DELETE` over a
    /// slow link held a caller 2 s past its 4 s deadline.)
    pub(super) async fn dispose_failed(self) {
        let Some(deadline) = self.clock.deadline() else {
            return self.dispose().await;
        };
        let bound = self.request.limits().close_bound();
        let transport = self.transport;
        let closing = tokio::spawn(async move { close_within(bound, transport.as_ref()).await });
        // Past the deadline the task runs on, detached, and ends within
        // its bound.
        let _ = tokio::time::timeout_at(deadline, closing).await;
    }
}

async fn close_within(bound: std::time::Duration, transport: &dyn Transport) {
    match tokio::time::timeout(bound, transport.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(failure = %e.failure(Stage::CLOSE), "disposal failed"),
        Err(_) => tracing::debug!("disposal exceeded its bound"),
    }
}

fn modern(
    version: ProtocolVersion,
    result: DiscoverResult,
    meta: Option<Arc<RawValue>>,
) -> Negotiated {
    Negotiated {
        server_info: result.server_info().unwrap_or_default(),
        version,
        capabilities: result.capabilities,
        instructions: result.instructions,
        meta,
        discovered: None,
        from_memory: false,
    }
}
