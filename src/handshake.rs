//! The dual-era establishment ladder on fresh transports.
//!
//! 1. Modern probe: `server/discover` at the newest modern version allowed.
//!    A `DiscoverResult` naming a version we speak makes the session modern;
//!    `-32022` with `data.supported` means the server is modern and names
//!    its versions, so we retry once at a mutual one (or go legacy if it only
//!    lists legacy ones); `-32020`/`-32021` are fatal rejections.
//! 2. Anything else that proves nothing about the era surfaces as an error:
//!    401/403, 429, 5xx, connection failures, an HTTP probe timeout.
//! 3. Everything else is legacy evidence: any other JSON-RPC error, any other
//!    4xx whatever its body, an unparseable result. The rule is a denylist,
//!    never keyed to one code, because servers answer unknown methods in
//!    every imaginable way.
//! 4. Legacy: `initialize` with the newest allowed legacy version, a check
//!    that the server's answer is one we allow, then
//!    `notifications/initialized`. A `-32022` here is modern evidence and
//!    earns one more probe.
//!
//! 5. HTTP+SSE: when the Streamable HTTP `initialize` POST is refused with
//!    400, 404 or 405 and no modern error body, the 2024 transport is tried:
//!    GET the URL, wait for `endpoint`, initialize there. If that fails too,
//!    the error keeps both, the Streamable HTTP one as primary.
//!
//! A stdio server that dies on the probe (old servers exit on anything but
//! `initialize`) is given a freshly spawned process for `initialize`; the
//! dead one is reaped first.
//!
//! With an [`EraCache`](crate::EraCache) the ladder starts where the last
//! connection ended (no probe for a legacy server, no doomed POSTs for an
//! SSE-only one). A failure that may mean the verdict is stale drops it, and
//! the full ladder runs once more on a fresh transport.

use crate::stage;
use mcp_connect_layers::{CancelSource, Classify, Failure, FailureKind, Stage};

use futures_util::future::BoxFuture;

use crate::clock::Clock;
use crate::era_cache::{LegacyTransport, Verdict};
use crate::error::{Error, ErrorKind, TransportError, VersionError};
use crate::policy::VersionPolicy;
use crate::protocol::{
    codes, DiscoverResult, Era, InitializeParams, InitializeResult, Notification, ProtocolVersion,
    Request, RequestId, UnsupportedVersionData,
};
use crate::request::{ConnectRequest, Strategy, Target, TransportMode};
use crate::session::{ClientIdentity, Negotiated, Session};
use crate::transport::{Reply, Transport, TransportKind};

/// How many `server/discover` requests one establishment sends at most.
const MAX_PROBES: u32 = 2;

/// What a probe's outcome says about the server.
#[derive(Debug)]
pub(crate) enum ProbeVerdict {
    /// Modern, at this version.
    Modern(ProtocolVersion, DiscoverResult),
    /// Modern, but probe again at this mutual version.
    RetryAt(ProtocolVersion),
    /// Legacy; offer this version if the server named one.
    Legacy(Option<ProtocolVersion>, Failure),
    /// Legacy, and the transport died on the probe: use a fresh one.
    LegacyOnFreshTransport(Failure),
}

/// Judges the outcome of one probe (pure: unit-tested branch by branch).
pub(crate) fn judge_probe(
    outcome: Result<Reply, Error>,
    probed: &ProtocolVersion,
    policy: &VersionPolicy,
    kind: TransportKind,
    timeout_is_legacy: bool,
) -> Result<ProbeVerdict, Error> {
    let evidence = |failure: Failure| failure.with_kind(FailureKind::Outdated);
    let rpc = match outcome {
        Ok(Ok(raw)) => {
            let Ok(result) = serde_json::from_str::<DiscoverResult>(raw.get()) else {
                return Ok(ProbeVerdict::Legacy(
                    None,
                    Failure::new(stage::PROBE, FailureKind::Outdated),
                ));
            };
            if result.supported_versions.contains(probed) {
                return Ok(ProbeVerdict::Modern(probed.clone(), result));
            }
            if let Some(version) = policy.best_of(Era::Modern, &result.supported_versions) {
                return Ok(ProbeVerdict::RetryAt(version));
            }
            let offer = policy.best_of(Era::Legacy, &result.supported_versions);
            return Ok(ProbeVerdict::Legacy(
                offer,
                Failure::new(stage::PROBE, FailureKind::Outdated),
            ));
        }
        Ok(Err(rpc)) => rpc,
        Err(error) => {
            let failure = error.failure();
            return match error.kind() {
                ErrorKind::Transport(TransportError::Status { status, .. })
                    if (400..500).contains(status) && !matches!(status, 401 | 403 | 429) =>
                {
                    Ok(ProbeVerdict::Legacy(None, evidence(failure)))
                }
                ErrorKind::Transport(
                    TransportError::Closed(_)
                    | TransportError::Interrupted(_)
                    | TransportError::Io(_),
                ) if kind == TransportKind::Stdio => {
                    Ok(ProbeVerdict::LegacyOnFreshTransport(evidence(failure)))
                }
                ErrorKind::Timeout(CancelSource::ProbeTimeout)
                    if kind == TransportKind::Stdio || timeout_is_legacy =>
                {
                    Ok(ProbeVerdict::Legacy(None, evidence(failure)))
                }
                _ => Err(error),
            };
        }
    };
    let as_error = |rpc| Error::new(stage::PROBE, ErrorKind::Rpc(rpc));
    if let Some(status) = rpc.http_status() {
        if matches!(status, 401 | 403 | 429) || status >= 500 {
            return Err(as_error(rpc));
        }
    }
    let failure = evidence(as_error(rpc.clone()).failure());
    match rpc.code() {
        codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let Some(data) = rpc
                .data()
                .and_then(|d| serde_json::from_value::<UnsupportedVersionData>(d.clone()).ok())
            else {
                return Ok(ProbeVerdict::Legacy(None, failure));
            };
            if let Some(version) = policy.best_of(Era::Modern, &data.supported) {
                Ok(ProbeVerdict::RetryAt(version))
            } else if let Some(version) = policy.best_of(Era::Legacy, &data.supported) {
                Ok(ProbeVerdict::Legacy(Some(version), failure))
            } else {
                Err(Error::new(
                    stage::PROBE,
                    ErrorKind::Version(VersionError::NoMutual),
                ))
            }
        }
        codes::HEADER_MISMATCH | codes::MISSING_REQUIRED_CAPABILITY => {
            Err(Error::new(stage::PROBE, ErrorKind::Rejected(rpc)))
        }
        _ => Ok(ProbeVerdict::Legacy(None, failure)),
    }
}

/// Opens fresh transports for the ladder (implemented by the connector).
pub(crate) trait Open: Sync {
    /// A request/response transport: Streamable HTTP, or a new stdio process.
    fn open(&self, request: &ConnectRequest) -> Result<Box<dyn Transport>, Error>;

    /// A legacy HTTP+SSE stream, once its `endpoint` event has arrived.
    fn open_sse<'a>(
        &'a self,
        request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<Box<dyn Transport>, TransportError>>;
}

/// Where the ladder starts.
#[derive(Debug, Clone)]
struct Plan {
    /// Probe first, at this version.
    probe_at: Option<ProtocolVersion>,
    /// The legacy version to offer, when known in advance.
    offer: Option<ProtocolVersion>,
    /// Go straight to legacy HTTP+SSE.
    sse: bool,
}

impl Plan {
    fn full(request: &ConnectRequest) -> Plan {
        let legacy_allowed = request.versions.newest(Era::Legacy).is_some();
        match request.strategy {
            Strategy::InitializeFirst if legacy_allowed => {
                return Plan {
                    probe_at: None,
                    offer: None,
                    sse: request.mode == TransportMode::Sse,
                }
            }
            Strategy::Sse if legacy_allowed && matches!(request.target, Target::Http { .. }) => {
                return Plan {
                    probe_at: None,
                    offer: None,
                    sse: true,
                }
            }
            _ => {}
        }
        let sse = request.mode == TransportMode::Sse;
        Plan {
            probe_at: if sse {
                None
            } else {
                request.versions.newest(Era::Modern)
            },
            offer: None,
            sse,
        }
    }

    fn cached(verdict: Verdict) -> Plan {
        match verdict {
            Verdict::Modern { version } => Plan {
                probe_at: Some(version),
                offer: None,
                sse: false,
            },
            Verdict::Legacy { transport, version } => Plan {
                probe_at: None,
                offer: Some(version),
                sse: transport == LegacyTransport::Sse,
            },
        }
    }
}

/// Runs the ladder, consulting and updating the era cache. On failure every
/// transport it opened is closed before the error is returned; a failing
/// close never replaces the error.
pub(crate) async fn establish(
    request: &ConnectRequest,
    clock: &Clock,
    opener: &dyn Open,
) -> Result<Session, Error> {
    // The request was validated by `Connector::connect`, the only caller.
    // Only unpinned, uncapped, auto-transport first attempts use the cache: a
    // pin wins, and a recovery strategy is a deliberate change of plan.
    let cache = request.era_cache.as_ref().filter(|_| {
        request.versions == VersionPolicy::Auto
            && request.mode == TransportMode::Auto
            && request.strategy == Strategy::AsConfigured
    });
    let cached = cache.and_then(|cache| cache.get(&request.target));
    let outcome = match cached {
        Some(verdict) => match attempt(request, clock, opener, Plan::cached(verdict)).await {
            Err(error) if assumption_failed(&error) => {
                // The cached verdict is stale: forget it, run the full ladder once.
                if let Some(cache) = cache {
                    cache.remove(&request.target);
                }
                attempt(request, clock, opener, Plan::full(request)).await
            }
            outcome => outcome,
        },
        None => attempt(request, clock, opener, Plan::full(request)).await,
    };
    if let (Ok(session), Some(cache)) = (&outcome, cache) {
        if let Some(verdict) = Verdict::of(session.transport_kind(), session.protocol_version()) {
            cache.insert(&request.target, verdict);
        }
    }
    outcome
}

/// Whether a failure under a cached verdict may mean the verdict is stale.
/// Failures that say nothing about the era (auth, throttling, DNS, TLS,
/// connection, cancellation, the overall deadline) do not.
fn assumption_failed(error: &Error) -> bool {
    let failure = error.failure();
    match failure.kind {
        FailureKind::Auth
        | FailureKind::Throttled
        | FailureKind::Cancelled
        | FailureKind::Configuration
        | FailureKind::Dns
        | FailureKind::Tls
        | FailureKind::Connect => false,
        FailureKind::Timeout => failure.cancel_source != Some(CancelSource::Deadline),
        _ => true,
    }
}

async fn attempt(
    request: &ConnectRequest,
    clock: &Clock,
    opener: &dyn Open,
    plan: Plan,
) -> Result<Session, Error> {
    let transport = if plan.sse {
        open_sse(request, clock, opener).await?
    } else {
        open(request, clock, opener)?
    };
    let mut ladder = Ladder {
        request,
        clock,
        opener,
        next_id: 1,
        transport,
    };
    match ladder.run(plan).await {
        Ok(negotiated) => {
            if let Err(error) = clock.check(stage::INITIALIZED) {
                // Cancellation or expiry raced a late success: the session
                // that will not be returned is closed, not leaked.
                ladder.dispose().await;
                clock.fail(&error);
                return Err(error);
            }
            Ok(Session::new(
                ladder.transport,
                negotiated,
                request.client.clone(),
                ladder.next_id,
                request.limits.request_timeout,
            ))
        }
        Err(error) => {
            ladder.dispose().await;
            Err(error)
        }
    }
}

fn open(
    request: &ConnectRequest,
    clock: &Clock,
    opener: &dyn Open,
) -> Result<Box<dyn Transport>, Error> {
    clock.check(Stage::CONNECT)?;
    // Only a stdio spawn does something here. A Streamable HTTP transport is
    // a value until its first request, which opens (or reuses) a pooled
    // connection: reporting `connect ok` for it would claim a connection that
    // does not exist yet, so its connection failures surface at the stage of
    // that first request instead.
    let spawns = matches!(request.target, Target::Stdio(_));
    if spawns {
        clock.begin(Stage::CONNECT);
    }
    let transport = opener.open(request).inspect_err(|e| clock.fail(e))?;
    if spawns {
        clock.succeed(Stage::CONNECT);
    }
    Ok(transport)
}

async fn open_sse(
    request: &ConnectRequest,
    clock: &Clock,
    opener: &dyn Open,
) -> Result<Box<dyn Transport>, Error> {
    clock.begin(stage::SSE_ENDPOINT);
    let transport = clock
        .limit(
            stage::SSE_ENDPOINT,
            request.limits.handshake_timeout,
            CancelSource::HandshakeTimeout,
            async {
                opener
                    .open_sse(request)
                    .await
                    .map_err(|e| Error::transport(stage::SSE_ENDPOINT, e))
            },
        )
        .await
        .inspect_err(|e| clock.fail(e))?;
    clock.succeed(stage::SSE_ENDPOINT);
    Ok(transport)
}

/// Whether a failed Streamable HTTP `initialize` allows the HTTP+SSE
/// fallback: 400, 404 or 405 without a modern JSON-RPC error body.
fn sse_fallback_allowed(error: &Error) -> bool {
    let failure = error.failure();
    let modern_code = matches!(
        failure.jsonrpc_code,
        Some(
            codes::UNSUPPORTED_PROTOCOL_VERSION
                | codes::HEADER_MISMATCH
                | codes::MISSING_REQUIRED_CAPABILITY
        )
    );
    failure.stage == stage::INITIALIZE
        && matches!(failure.http_status, Some(400 | 404 | 405))
        && !modern_code
}

struct Ladder<'a> {
    request: &'a ConnectRequest,
    clock: &'a Clock,
    opener: &'a dyn Open,
    next_id: i64,
    transport: Box<dyn Transport>,
}

impl Ladder<'_> {
    fn id(&mut self) -> RequestId {
        let id = self.next_id;
        self.next_id += 1;
        RequestId::Number(id)
    }

    fn client(&self) -> &ClientIdentity {
        &self.request.client
    }

    async fn run(&mut self, plan: Plan) -> Result<Negotiated, Error> {
        let policy = &self.request.versions;
        let mut probe_at = plan.probe_at;
        let mut probes = 0;
        let mut offer = plan.offer.filter(|v| policy.allows(v));
        loop {
            if let Some(version) = probe_at.take().filter(|_| probes < MAX_PROBES) {
                probes += 1;
                match self.probe(&version).await? {
                    ProbeVerdict::Modern(version, result) => return Ok(modern(version, result)),
                    ProbeVerdict::RetryAt(next) => {
                        probe_at = Some(next);
                        continue;
                    }
                    ProbeVerdict::Legacy(named, _) => offer = named.or(offer),
                    ProbeVerdict::LegacyOnFreshTransport(_) => {
                        self.dispose().await;
                        self.transport = open(self.request, self.clock, self.opener)?;
                        self.next_id = 1;
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
            let may_fall_back = self.request.mode == TransportMode::Auto
                && self.transport.kind() == TransportKind::StreamableHttp
                && sse_fallback_allowed(&error);
            if !may_fall_back {
                return Err(error);
            }
            // The POST endpoint refused initialize: try the 2024 HTTP+SSE transport.
            self.dispose().await;
            self.transport = match open_sse(self.request, self.clock, self.opener).await {
                Ok(transport) => transport,
                Err(sse_error) => return Err(error.with_also(sse_error)),
            };
            self.next_id = 1;
            return self
                .initialize(&offer)
                .await
                .map_err(|sse_error| error.with_also(sse_error));
        }
    }
    async fn probe(&mut self, version: &ProtocolVersion) -> Result<ProbeVerdict, Error> {
        let clock = self.clock;
        clock.begin(stage::PROBE);
        let request = Request {
            id: self.id(),
            method: "server/discover".into(),
            params: Some(self.client().stamp(version, None)),
        };
        let limits = &self.request.limits;
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
        let verdict = judge_probe(
            outcome,
            version,
            &self.request.versions,
            transport.kind(),
            self.request.probe_timeout_is_legacy,
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
        let limits = &self.request.limits;
        clock.begin(stage::INITIALIZE);
        let id = self.id();
        let params = InitializeParams {
            protocol_version: offer,
            capabilities: &self.client().capabilities,
            client_info: &self.client().info,
        };
        let request = Request {
            id,
            method: "initialize".into(),
            params: Some(serde_json::to_value(params).expect("params serialize")),
        };
        let transport = self.transport.as_ref();
        let policy = &self.request.versions;
        let result = clock
            .limit(
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
            .await
            .inspect_err(|e| clock.fail(e))?;
        clock.succeed(stage::INITIALIZE);

        clock.begin(stage::INITIALIZED);
        let version = result.protocol_version.clone();
        let notification = Notification {
            method: "notifications/initialized".into(),
            params: None,
        };
        clock
            .limit(
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
            .await
            .inspect_err(|e| clock.fail(e))?;
        clock.succeed(stage::INITIALIZED);
        Ok(Negotiated {
            version,
            server_info: result.server_info,
            capabilities: result.capabilities,
            instructions: result.instructions,
        })
    }

    /// Closes the current transport within the close bound. Errors are
    /// logged by category and never replace the establishment's error.
    async fn dispose(&self) {
        let bound = self.request.limits.close_grace * 3;
        match tokio::time::timeout(bound, self.transport.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(failure = %e.failure(Stage::CLOSE), "disposal failed"),
            Err(_) => tracing::debug!("disposal exceeded its bound"),
        }
    }
}

/// A `-32022` answer to `initialize` naming a mutual modern version.
fn modern_evidence(error: &Error, policy: &VersionPolicy) -> Option<ProtocolVersion> {
    let rpc = error.rpc_error()?;
    if rpc.code() != codes::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    let data: UnsupportedVersionData = serde_json::from_value(rpc.data()?.clone()).ok()?;
    policy.best_of(Era::Modern, &data.supported)
}

fn modern(version: ProtocolVersion, result: DiscoverResult) -> Negotiated {
    Negotiated {
        server_info: result.server_info().unwrap_or_default(),
        version,
        capabilities: result.capabilities,
        instructions: result.instructions,
    }
}
