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
//! With an [`EraCache`](crate::era_cache::EraCache) the ladder starts where the last
//! connection ended (no probe for a legacy server, no doomed POSTs for an
//! SSE-only one). A failure that may mean the verdict is stale drops it, and
//! the full ladder runs once more on a fresh transport.
//!
//! The path, top to bottom (each step in one place):
//!
//! ```text
//! Connector::connect ── validate (building the authorizer), then establish
//!   establish ──────── builds the AttemptContext (clock, opener,
//!   │                  authorizer); loops while authorizing again can cure
//!   │                  a refusal (auth::Reauthorization, the rule requests
//!   │                  share)
//!   └ AttemptContext::run ── era cache: cached plan, else plan::Plan::full;
//!     │                a stale verdict is dropped and the full plan runs
//!     └ AttemptContext::climb ── opener.open(plan.transport), then the ladder
//!       └ Ladder::run ─ probe / initialize / HTTP+SSE fallback, asking
//!                       the opener (never the connector) for fresh
//!                       transports; verdict:: judges every answer
//! ```
//!
//! The parts: [`verdict`] reads what an answer says about the server's era
//! (pure functions, unit-tested), [`plan`] chooses where the ladder starts
//! and what the next attempt changes, [`open`] opens transports, [`ladder`]
//! climbs it on one attempt, and this module runs the attempt with the era
//! cache, authorization and disposal around it.

mod ladder;
mod open;
mod plan;
mod verdict;

use std::sync::Arc;

use mcp_connect_layers::{CancelSource, FailureKind, Stage};

use crate::auth::{Authorized, Authorizer, Reauthorization, AUTHORIZE};
use crate::era_cache::{EraCache, Verdict};
use crate::error::{ConfigError, Error};
use crate::protocol::Era;
use crate::request::clock::Clock;
use crate::request::Target;
use crate::request::VersionPolicy;
use crate::request::{ConnectRequest, Strategy, TransportMode};
use crate::response_cache::Context;
use crate::session::{Negotiated, Parts, Session};
use crate::transport::{HttpClient, ServerStream, TransportKind};

use ladder::Ladder;
use open::Opener;
use plan::Plan;

/// Everything one attempt works with: the request, its clock, the opener
/// of its transports and, when it authorizes, the authorizer.
pub(crate) struct AttemptContext<'a> {
    request: &'a ConnectRequest,
    clock: Clock,
    opener: Opener,
    authorizer: Option<Authorizer>,
}

/// Establishes one session for a validated `request` over `http` (the
/// connector's client, shared and never shut down here), authorizing with
/// the request's [`authorizer`].
pub(crate) async fn establish(
    request: &ConnectRequest,
    http: &HttpClient,
) -> Result<Session, Error> {
    // Made here, where it is used: before any I/O, so a URL it cannot read
    // fails as configuration.
    let authorizer = authorizer(request, http)?;
    let attempt = AttemptContext::new(request, http, authorizer);
    let mut reauthorization = Reauthorization::default();
    loop {
        let outcome = attempt.run().await;
        let (Err(error), Some(authorizer)) = (&outcome, &attempt.authorizer) else {
            return outcome;
        };
        let failure = error.failure();
        let permit = match failure.kind {
            FailureKind::Auth => reauthorization
                .permit(authorizer, failure.http_status)
                .map_err(Error::authorization)?,
            _ => None,
        };
        let Some(allow_new) = permit else {
            return outcome;
        };
        // Boxed: rare (after a 401 or 403), and the largest future of the
        // handshake; inline it would grow every establishment's future.
        let authorized = Box::pin(attempt.authorize(authorizer, allow_new)).await?;
        reauthorization.record(authorized);
    }
}

/// The authorizer for `request`, when it authorizes an HTTP target. The
/// server URL is converted here and nowhere else; one `url` cannot read is
/// a configuration error before any I/O.
pub(crate) fn authorizer(
    request: &ConnectRequest,
    http: &HttpClient,
) -> Result<Option<Authorizer>, Error> {
    let (Some(auth), Target::Http { url, .. }) = (request.auth(), request.target()) else {
        return Ok(None);
    };
    let server = crate::auth::server_url(url).map_err(|_| Error::config(ConfigError::Url))?;
    Ok(Some(Authorizer::new(
        auth.clone(),
        server,
        http.clone(),
        request.limits().handshake_timeout,
    )))
}

impl<'a> AttemptContext<'a> {
    fn new(request: &'a ConnectRequest, http: &HttpClient, authorizer: Option<Authorizer>) -> Self {
        let transports = match &authorizer {
            Some(authorizer) => authorizer.bearer(http.clone()),
            None => http.clone(),
        };
        AttemptContext {
            request,
            clock: request.clock(),
            opener: Opener::new(transports),
            authorizer,
        }
    }

    /// The authorization stage, under the establishment's clock: each of
    /// its requests has the handshake limit; the wait for the person has
    /// its own, and pauses the deadline.
    async fn authorize(
        &self,
        authorizer: &Authorizer,
        allow_new: bool,
    ) -> Result<Authorized, Error> {
        let clock = &self.clock;
        let work = async {
            (authorizer.run(Some(clock.pause()), allow_new).await).map_err(Error::authorization)
        };
        clock
            .stage(AUTHORIZE, clock.pausable(AUTHORIZE, work))
            .await
    }

    /// The era cache, when this attempt may use it: only unpinned,
    /// uncapped, auto-transport first attempts do. A pin wins, and a
    /// recovery strategy is a deliberate change of plan.
    fn era_cache(&self) -> Option<&EraCache> {
        let request = self.request;
        request.era_cache().filter(|_| {
            *request.versions() == VersionPolicy::Auto
                && request.mode() == TransportMode::Auto
                && request.strategy() == Strategy::AsConfigured
        })
    }

    /// Who is asking, for what a server says is private to an
    /// authorization context.
    fn context(&self) -> Context {
        let token = self.authorizer.as_ref().and_then(Authorizer::access_token);
        Context::of(self.request.target().headers(), token.as_deref())
    }

    /// Runs the ladder, consulting and updating the era cache. On failure
    /// every transport it opened is closed before the error is returned; a
    /// failing close never replaces the error.
    async fn run(&self) -> Result<Session, Error> {
        let target = self.request.target();
        let cache = self.era_cache();
        let verdict = match cache {
            Some(cache) => cache.lookup(target).await,
            None => None,
        };
        let cached = verdict.and_then(|verdict| {
            let context = self.context();
            Plan::cached(verdict, self.request, &context)
        });
        let outcome = match cached {
            Some(plan) => match self.climb(plan).await {
                Err(error) if assumption_failed(&error) => {
                    // The cached verdict is stale: forget it, run the full
                    // ladder once.
                    if let Some(cache) = cache {
                        cache.remove(target);
                    }
                    self.climb(Plan::full(self.request)).await
                }
                outcome => outcome,
            },
            None => self.climb(Plan::full(self.request)).await,
        };
        match (outcome, cache) {
            // A session from a remembered discover leaves the entry as it
            // is, until the server confirms or refuses it.
            (Ok(session), Some(cache)) if session.started_from_memory() => {
                let (cache, target) = (cache.clone(), target.clone());
                Ok(session.forgetting_on_refusal(Box::new(move || cache.remove(&target))))
            }
            (Ok(mut session), Some(cache)) => {
                let discovered = session.take_discovered();
                let kind = session.transport_kind();
                if let Some(verdict) = Verdict::of(kind, session.protocol_version(), discovered) {
                    cache.insert(target, verdict);
                }
                Ok(session)
            }
            (outcome, _) => outcome,
        }
    }

    /// One climb of the ladder from `plan` on a fresh transport.
    async fn climb(&self, plan: Plan) -> Result<Session, Error> {
        let clock = &self.clock;
        let transport = self
            .opener
            .open(plan.transport, self.request, clock)
            .await?;
        let remembering = self.era_cache().map(|_| self.context());
        let mut ladder = Ladder::new(self.request, clock, &self.opener, remembering, transport);
        let negotiated = match ladder.run(plan).await {
            Ok(negotiated) => negotiated,
            Err(error) => {
                ladder.dispose_failed().await;
                return Err(error);
            }
        };
        if let Err(error) = clock.check(crate::establish::stage::INITIALIZED) {
            // Cancellation or expiry raced a late success: the session
            // that will not be returned is closed, not leaked.
            ladder.dispose_failed().await;
            clock.fail(&error);
            return Err(error);
        }
        let server_stream = self.open_server_stream(&ladder, &negotiated).await;
        let request = self.request;
        let (transport, next_id) = ladder.into_parts();
        let session = Session::new(Parts {
            transport,
            negotiated,
            first_id: next_id,
            server_stream,
            client: Arc::clone(request.client()),
            request_timeout: request.limits().request_timeout,
            inbound: Arc::clone(request.inbound()),
            auth: self.authorizer.clone(),
            response_cache: request.response_cache(),
            target: request.target(),
            telemetry: request.instruments(),
            peer: request.peer(),
        });
        self.subscribe_from_start(&session).await;
        Ok(session)
    }

    /// The standalone server stream, opened before the session is handed
    /// over when the application listens (a handler or a notification
    /// listener) on the legacy era over Streamable HTTP: a server that
    /// sends a request there right after `initialize` must find it open. It
    /// is not a stage that can fail the establishment: a server that offers
    /// none (405, 400), an error or the handshake limit leave the session
    /// without one.
    async fn open_server_stream(
        &self,
        ladder: &Ladder<'_>,
        negotiated: &Negotiated,
    ) -> Option<ServerStream> {
        let transport = ladder.transport();
        let wanted = self.request.inbound().is_listening()
            && negotiated.version.era() == Era::Legacy
            && transport.kind() == TransportKind::StreamableHttp;
        if !wanted {
            return None;
        }
        let open = async {
            transport
                .open_server_stream()
                .await
                .map_err(|e| Error::transport(Stage::REQUEST, e))
        };
        self.clock
            .limit(
                Stage::REQUEST,
                self.request.limits().handshake_timeout,
                CancelSource::HandshakeTimeout,
                open,
            )
            .await
            .ok()
            .flatten()
    }

    /// The 2026-07-28 counterpart of the server stream: when the
    /// application reads notifications, the `subscriptions/listen` for the
    /// list changes the server offers, acknowledged before the session is
    /// handed over. Like the server stream it cannot fail the
    /// establishment.
    async fn subscribe_from_start(&self, session: &Session) {
        if session.era() != Era::Modern || !self.request.inbound().wants_notifications() {
            return;
        }
        // Boxed: only a modern session whose application listens waits
        // here; inline, every establishment's future would carry this one.
        let subscribed = Box::pin(self.clock.limit(
            Stage::REQUEST,
            self.request.limits().handshake_timeout,
            CancelSource::HandshakeTimeout,
            session.listen_from_start(),
        ))
        .await;
        if let Err(error) = subscribed {
            tracing::debug!(error = %error, "no subscription at establishment");
        }
    }
}

/// Whether a failure under a cached verdict may mean the verdict is stale.
/// Failures that say nothing about the era (auth, throttling, DNS, TLS,
/// a proxy, connection, cancellation, the overall deadline) do not.
fn assumption_failed(error: &Error) -> bool {
    let failure = error.failure();
    match failure.kind {
        FailureKind::Auth
        | FailureKind::Throttled
        | FailureKind::Cancelled
        | FailureKind::Configuration
        | FailureKind::Dns
        | FailureKind::Tls
        | FailureKind::Proxy
        | FailureKind::Connect => false,
        FailureKind::Timeout => failure.cancel_source != Some(CancelSource::Deadline),
        _ => true,
    }
}
