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
//!
//! The parts: [`verdict`] reads what an answer says about the server's era
//! (pure functions, unit-tested), [`plan`] chooses where the ladder starts,
//! [`ladder`] climbs it on one attempt, and this module runs the attempt
//! with the era cache and disposal around it.

mod ladder;
mod plan;
mod verdict;

use crate::stage;
use mcp_connect_layers::{CancelSource, Classify, FailureKind, Stage};

use futures_util::future::BoxFuture;

use crate::clock::Clock;
use crate::era_cache::Verdict;
use crate::error::{Error, TransportError};
use crate::policy::VersionPolicy;
use crate::protocol::Era;
use crate::request::{ConnectRequest, Strategy, TransportMode};
use crate::session::{Negotiated, Session};
use crate::target::Target;
use crate::transport::{ServerStream, Transport, TransportKind};

use ladder::Ladder;
use plan::Plan;

/// Opens fresh transports for the ladder (implemented by the connector).
pub(crate) trait Open: Sync {
    /// A request/response transport: Streamable HTTP, or a new stdio process.
    fn open(&self, request: &ConnectRequest) -> Result<Box<dyn Transport>, Error>;

    /// The HTTP client without per-connection layers (for the authorization
    /// stage's own requests, which must never carry a token).
    fn http_client(&self) -> &crate::transport::HttpClient;

    /// A legacy HTTP+SSE stream, once its `endpoint` event has arrived.
    fn open_sse<'a>(
        &'a self,
        request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<Box<dyn Transport>, TransportError>>;
}

/// Runs the ladder, consulting and updating the era cache. On failure every
/// transport it opened is closed before the error is returned; a failing
/// close never replaces the error.
pub(crate) async fn establish(
    request: &ConnectRequest,
    clock: &Clock,
    opener: &dyn Open,
) -> Result<Session, Error> {
    let mut authorizations = 0;
    // At most one new authorization per establishment: after it, a refused
    // token gets a refresh or more scope, never the person again.
    let mut new_done = false;
    loop {
        let outcome = establish_once(request, clock, opener).await;
        let Some(auth) = &request.auth else {
            return outcome;
        };
        match outcome {
            Err(error)
                if authorizations < MAX_AUTHORIZATIONS
                    && error.failure().kind == FailureKind::Auth
                    && auth.can_answer(error.failure().http_status) =>
            {
                authorizations += 1;
                let authorized = authorize(request, clock, opener, auth, !new_done).await?;
                new_done |= authorized == crate::auth::Authorized::New;
            }
            outcome => return outcome,
        }
    }
}

/// What the session needs to authorize again, when the request authorizes.
fn session_auth(
    request: &ConnectRequest,
    opener: &dyn Open,
) -> Option<crate::session::SessionAuth> {
    let (Some(auth), Target::Http { url, .. }) = (&request.auth, &request.target) else {
        return None;
    };
    Some(crate::session::SessionAuth {
        auth: auth.clone(),
        server: url::Url::parse(&url.to_string()).ok()?,
        client: opener.http_client().clone(),
        limit: request.limits.handshake_timeout,
    })
}

/// Authorizations one establishment runs at most: the first, a refresh of
/// a token the server refused, one step-up to more scope.
const MAX_AUTHORIZATIONS: u32 = 3;

/// The authorization stage, under the establishment's clock.
async fn authorize(
    request: &ConnectRequest,
    clock: &Clock,
    opener: &dyn Open,
    auth: &crate::auth::Authorization,
    allow_new: bool,
) -> Result<crate::auth::Authorized, Error> {
    let Target::Http { url, .. } = &request.target else {
        return Err(Error::new(
            crate::auth::AUTHORIZE,
            crate::error::ErrorKind::Auth(crate::auth::AuthError::Unsupported(
                "authorization needs an HTTP target",
            )),
        ));
    };
    let stage = crate::auth::AUTHORIZE;
    let server = url::Url::parse(&url.to_string()).map_err(|_| {
        Error::new(
            stage,
            crate::error::ErrorKind::Auth(crate::auth::AuthError::BadUrl),
        )
    })?;
    clock.begin(stage);
    // Each request of the stage has the handshake limit; the wait for the
    // person has its own, and pauses the deadline.
    let outcome = clock
        .pausable(stage, async {
            auth.run(
                &server,
                opener.http_client().clone(),
                request.limits.handshake_timeout,
                Some(clock.pause()),
                allow_new,
            )
            .await
            .map_err(|e| Error::new(stage, crate::error::ErrorKind::Auth(e)))
        })
        .await;
    match &outcome {
        Ok(_) => clock.succeed(stage),
        Err(error) => clock.fail(error),
    }
    outcome
}

async fn establish_once(
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
        probe_meta: None,
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
            let server_stream = open_server_stream(request, clock, &ladder, &negotiated).await;
            let session = Session::new(
                ladder.transport,
                negotiated,
                request.client.clone(),
                ladder.next_id,
                request.limits.request_timeout,
                std::sync::Arc::clone(&request.inbound),
                server_stream,
            );
            subscribe_from_start(request, clock, &session).await;
            Ok(session.with_auth(session_auth(request, opener)))
        }
        Err(error) => {
            ladder.dispose().await;
            Err(error)
        }
    }
}

/// The standalone server stream, opened before the session is handed over
/// when the application listens (a handler or a notification listener) on
/// the legacy era over Streamable HTTP: a server that sends a request there
/// right after `initialize` must find it open. It is not a stage that can
/// fail the establishment: a server that offers none (405, 400), an error or
/// the handshake limit leave the session without one.
async fn open_server_stream(
    request: &ConnectRequest,
    clock: &Clock,
    ladder: &Ladder<'_>,
    negotiated: &Negotiated,
) -> Option<ServerStream> {
    let wanted = request.inbound.is_listening()
        && negotiated.version.era() == Era::Legacy
        && ladder.transport.kind() == TransportKind::StreamableHttp;
    if !wanted {
        return None;
    }
    let transport = ladder.transport.as_ref();
    clock
        .limit(
            Stage::REQUEST,
            request.limits.handshake_timeout,
            CancelSource::HandshakeTimeout,
            async {
                transport
                    .open_server_stream()
                    .await
                    .map_err(|e| Error::transport(Stage::REQUEST, e))
            },
        )
        .await
        .ok()
        .flatten()
}

/// The 2026-07-28 counterpart of the server stream: when the application
/// reads notifications, the `subscriptions/listen` for the list changes the
/// server offers, acknowledged before the session is handed over. Like the
/// server stream it cannot fail the establishment.
async fn subscribe_from_start(request: &ConnectRequest, clock: &Clock, session: &Session) {
    if session.era() != Era::Modern || !request.inbound.wants_notifications() {
        return;
    }
    let subscribed = clock
        .limit(
            Stage::REQUEST,
            request.limits.handshake_timeout,
            CancelSource::HandshakeTimeout,
            session.listen_from_start(),
        )
        .await;
    if let Err(error) = subscribed {
        tracing::debug!(error = %error, "no subscription at establishment");
    }
}

pub(super) fn open(
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

pub(super) async fn open_sse(
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
