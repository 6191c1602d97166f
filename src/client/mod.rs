//! A long-lived client that reconnects for later calls only after the
//! session itself failed.
//!
//! Applications keep one [`McpClient`] per configured server for hours. When
//! its session dies (the transport closed, reset or its process exited, the
//! server answered 404 to a request that carried the session id, or 400
//! with a JSON-RPC error without id: see [`crate::client::session_loss`]) the
//! failed call's error goes to the caller, the dead session is disposed,
//! and the *next* call (or a background task, if asked) builds a new session
//! through the establishment stack. A failed call is never replayed: the
//! client cannot know whether the server acted on it. A session already
//! known to be dead when a call starts (its process exited, its stream saw
//! a 404) is replaced before the call is sent, which is not a replay:
//! nothing was sent on it.
//!
//! Everything else is the server talking, not the session dying: HTTP 500,
//! 429 (its `Retry-After` is in the failure), 401, 403, any other status and
//! any JSON-RPC error naming the request reach the caller with no reconnect
//! and the generation unchanged. A new session cannot fix a 500, and
//! reconnecting on 429 hits a throttled server harder. On the modern era
//! there is no session, so a 404 whose body is a JSON-RPC error (method not
//! found) is an application error too. The application may widen or narrow
//! the rule ([`McpClientBuilder::with_session_loss`]).
//!
//! Reconnects are bounded twice: concurrent callers that hit the same dead
//! session share one reconnect, and after a failed reconnect further calls
//! fail fast with that failure until a backoff has passed, so a server that
//! is down is not stormed. The backoff is the recovery layer's
//! [`Backoff`]: full jitter under a ceiling that doubles from 100 ms to
//! 30 s, drawn per client, so a fleet of clients that lost one server
//! together does not reconnect in lock-step.
//!
//! One exception to "never replayed", opt-in: with
//! [`ReplayPolicy::Undelivered`] a call whose failure proves the server
//! never received it (see [`crate::client::replay`]) is sent once more on the new
//! session.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::AtomicBool;

use arc_swap::ArcSwapOption;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_connect_layers::jitter::Jitter;
use mcp_connect_layers::recovery::Backoff;
use mcp_connect_layers::Failure;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::replay::ReplayPolicy;
use crate::client::session_loss::{SessionLossRule, Suspicion};
use crate::error::Error;
use crate::establish::Establish;
use crate::request::ConnectRequest;
use crate::session::{Session, SessionState};

mod attempt;
mod builder;
mod calls;
mod cool_down;
mod error;
mod hedge;
mod policies;
mod principals;
mod probe;
pub mod replay;
mod replicas;
mod service;
pub mod session_loss;
mod session_service;

pub use builder::McpClientBuilder;
use cool_down::Flaps;
pub use cool_down::STABLE_AFTER;
pub use error::ClientError;
pub use hedge::{HedgeLayer, Hedged};
pub use policies::CallPolicies;
pub use principals::{Closes, PerPrincipal};
pub use probe::{circuit_breaker, LivenessProbe};
pub use replicas::{ReplicaConfig, Replicas, ReplicasLayer};
pub use service::{idle_timeout, result_cap, CallService, ResultCap, ResultCapLayer};
pub use session_service::SessionService;

/// The one request type of a client's call path: a [`Call`](crate::session::Call)
/// whose request is encoded.
pub type Call = crate::session::Call;

/// When the client builds a new session after the old one died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Reconnect {
    /// On the next call (the default).
    #[default]
    OnNextCall,
    /// At once, in a background task, so the next call finds it ready.
    InBackground,
}

enum State {
    /// Nothing to wait for: a session is live (in [`Inner::live`]), none
    /// was built yet, or the last one died.
    Empty,
    /// The last `failures` reconnects failed; calls fail fast until `until`.
    CoolingDown {
        until: Instant,
        failures: u32,
        failure: Failure,
        cause: Option<Arc<crate::establish::EstablishError>>,
    },
}

/// A live session and its generation.
struct Live {
    session: Arc<Session>,
    generation: u64,
}

/// Everything of a client that changes, under its one lock: held for one
/// look or one change, never across an `.await`, so closing or dropping a
/// dead session never waits for a reconnect.
struct Shared {
    /// What the client has now.
    state: State,
    /// The cool-down's randomness, drawn per client.
    jitter: Jitter,
    /// Resource URIs subscribed through this client, renewed on every new
    /// session.
    subscriptions: BTreeSet<String>,
    /// The refusals that replaced sessions, to bound them.
    suspicion: Suspicion,
    /// Sessions that died young, toward the cool-down.
    flaps: Flaps,
    /// The deadline and cancellation the request was given: its first
    /// establishment's only, taken by it.
    first_connect: Option<(Option<Instant>, Option<CancellationToken>)>,
    /// The failed call that lost the last session, for the next
    /// establishment's span to link to; taken by it.
    loss_cause: crate::telemetry::establish::Cause,
}

/// A client: its configuration, plain and fixed when it was built, and its
/// state behind one lock (and the tokio lock that serializes building a
/// session).
struct Inner {
    stack: Establish,
    request: ConnectRequest,
    reconnect: Reconnect,
    replay: ReplayPolicy,
    /// Ends every establishment of this client.
    shutdown: Option<CancellationToken>,
    cool_down: Backoff,
    /// The session-loss rule; cloned (an `Arc`) per failed call.
    loss: SessionLossRule,
    /// The call path's layers around the session, when the application
    /// put any; cloned (one box) per call.
    calls: Option<CallService>,
    shared: Mutex<Shared>,
    /// The live session, read by every call without taking a lock; set
    /// and cleared only under [`Inner::shared`], so its changes are ordered
    /// with the state's.
    live: ArcSwapOption<Live>,
    /// Whether the suspicion holds anything a success resets: a call that
    /// succeeds takes the lock for it only then.
    suspicious: AtomicBool,
    /// Held across one establishment: concurrent callers that find no
    /// session wait here and then use the session the first one built.
    building: tokio::sync::Mutex<()>,
    /// The current generation: the one place its number is kept.
    generations: watch::Sender<Generation>,
}

/// A new session of an [`McpClient`], as reported by
/// [`McpClient::generations`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Generation {
    /// The session's number (1 for the first).
    pub number: u64,
    /// Subscriptions renewed on it.
    pub resubscribed: usize,
    /// Subscriptions the new session refused (they are forgotten).
    pub resubscribe_failed: usize,
}

/// A long-lived MCP client. Cheap to clone; clones share the session.
///
/// It reconnects for later calls only after the session itself died:
/// transport closure or I/O failure (no HTTP status), a 404 to a request
/// that carried the session id, or a 400 whose JSON-RPC error has no id
/// (see [`crate::client::session_loss`]). HTTP 500, 429, 401, 403, other statuses
/// and JSON-RPC errors naming the request reach the caller with no
/// reconnect and the generation unchanged. A session found dead before a
/// call is replaced before the call is sent. A failed call is never replayed,
/// unless [`McpClientBuilder::with_replay`] allows it for calls the server
/// provably never received.
/// Concurrent callers on a dead session share one reconnect, and after a
/// failed reconnect calls fail fast during a jittered backoff whose ceiling
/// doubles from 100 ms to 30 s.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
/// use serde_json::json;
///
/// let stack = EstablishBuilder::new(Connector::new()).build();
/// let client = McpClient::builder(stack, ConnectRequest::http("http://127.0.0.1:3000/mcp")?)
///     .build();
/// let sum = client.call_tool("add", &json!({ "a": 1, "b": 2 })).await?;
/// # drop(sum); Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

impl McpClient {
    /// A client of `request` on `stack`, set up by the builder's methods;
    /// it connects on its first call ([`McpClientBuilder::build`]) or now
    /// ([`McpClientBuilder::connect`]).
    pub fn builder(stack: Establish, request: ConnectRequest) -> McpClientBuilder {
        McpClientBuilder::new(stack, request)
    }

    /// The client's state, for one look or one change. A poisoned lock is
    /// taken as it is: nothing under it can panic half-way (the crate's
    /// one policy, docs/ARCHITECTURE.md).
    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.inner
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions have been built (0 before the first).
    pub fn generation(&self) -> u64 {
        self.inner.generations.borrow().number
    }

    /// The live session and its generation, building one if there is none.
    /// Concurrent callers wait for the same build.
    pub async fn session(&self) -> Result<(Arc<Session>, u64), ClientError> {
        if let Some(current) = self.current().await? {
            return Ok(current);
        }
        let _building = self.inner.building.lock().await;
        // Another caller may have built it while this one waited.
        if let Some(current) = self.current().await? {
            return Ok(current);
        }
        if let Some(refusal) = self.after_a_short_life() {
            return Err(refusal);
        }
        let failures = match &self.shared().state {
            State::CoolingDown { failures, .. } => failures.saturating_add(1),
            _ => 1,
        };
        match self.inner.stack.connect(self.next_request()).await {
            Ok(session) => {
                let generation = self.generation() + 1;
                {
                    let mut shared = self.shared();
                    shared.flaps.established = Some(Instant::now());
                    shared.suspicion.on_session(generation);
                    self.note_suspicion(&shared.suspicion);
                }
                let report = self.resubscribe(&session, generation).await;
                let session = Arc::new(session);
                {
                    let mut shared = self.shared();
                    shared.state = State::Empty;
                    self.inner.live.store(Some(Arc::new(Live {
                        session: Arc::clone(&session),
                        generation,
                    })));
                }
                self.inner.generations.send_replace(report);
                Ok((session, generation))
            }
            Err(error) => {
                let error = Arc::new(error);
                self.start_cool_down(failures, error.failure(), Some(Arc::clone(&error)));
                Err(ClientError::Connect(error))
            }
        }
    }

    /// The request for the next establishment: the first gets the
    /// deadline and token its request was given, every one the shutdown
    /// token (where the first has none of its own).
    fn next_request(&self) -> ConnectRequest {
        let mut request = self.inner.request.clone();
        let (first, cause) = {
            let mut shared = self.shared();
            (
                shared.first_connect.take(),
                std::mem::take(&mut shared.loss_cause),
            )
        };
        let shutdown = self.inner.shutdown.clone();
        request = request.caused_by(cause);
        let (deadline, cancel) = first.unwrap_or((None, None));
        if let Some(deadline) = deadline {
            request = request.with_deadline(deadline);
        }
        if let Some(token) = cancel.or(shutdown) {
            request = request.with_cancellation(token);
        }
        request
    }

    /// The live session; the cool-down's refusal; or `None` when one must
    /// be built. A live session is read without a lock (the call path
    /// takes none of the client's). A session already known dead is taken
    /// out and disposed first: replacing it before anything is sent is not
    /// a replay.
    async fn current(&self) -> Result<Option<(Arc<Session>, u64)>, ClientError> {
        if let Some(live) = self.inner.live.load_full() {
            let SessionState::Closed(closure) = live.session.state() else {
                return Ok(Some((Arc::clone(&live.session), live.generation)));
            };
            tracing::debug!(
                target: "mcp_connect::client",
                generation = live.generation,
                closure = closure.as_str(),
                "session found closed before a call; replacing it"
            );
            let dead = self.take_live(|current| Arc::ptr_eq(current, &live));
            if let Some(dead) = dead {
                dispose(Arc::clone(&dead.session));
            }
            return Ok(None);
        }
        match &self.shared().state {
            State::CoolingDown {
                until,
                failure,
                cause,
                ..
            } if Instant::now() < *until => Err(ClientError::CoolingDown {
                failure: *failure,
                retry_in: *until - Instant::now(),
                cause: cause.clone(),
            }),
            _ => Ok(None),
        }
    }

    /// Takes the live session out when `which` says it is the one meant
    /// (and not one built since), under the lock; the session loss's
    /// cause is kept for the next establishment.
    fn take_live(&self, which: impl Fn(&Arc<Live>) -> bool) -> Option<Arc<Live>> {
        let mut shared = self.shared();
        let live = self.inner.live.load_full()?;
        if !which(&live) {
            return None;
        }
        self.inner.live.store(None);
        shared.loss_cause = live.session.loss_cause();
        Some(live)
    }

    /// Renews this client's subscriptions on a new session; what the session
    /// refuses is forgotten (and counted).
    async fn resubscribe(&self, session: &Session, number: u64) -> Generation {
        let uris: Vec<String> = self.shared().subscriptions.iter().cloned().collect();
        let mut report = Generation {
            number,
            ..Generation::default()
        };
        for uri in uris {
            match session.subscribe(&uri).await {
                Ok(()) => report.resubscribed += 1,
                Err(_) => {
                    report.resubscribe_failed += 1;
                    self.shared().subscriptions.remove(&uri);
                }
            }
        }
        report
    }

    /// Every new session, as it is made: its number and what became of the
    /// subscriptions renewed on it. The value before the first session has
    /// number 0.
    pub fn generations(&self) -> watch::Receiver<Generation> {
        self.inner.generations.subscribe()
    }

    /// Closes the current session, if any. Later calls build a new one; a
    /// build already under way (another caller's) is not waited for, and
    /// the session it makes serves later calls.
    pub async fn close(&self) -> Result<(), Error> {
        let current = {
            let mut shared = self.shared();
            // Closing is the application's wish: no penalty for the next.
            shared.flaps = Flaps::default();
            self.inner.live.swap(None)
        };
        match current {
            Some(live) => live.session.close().await,
            None => Ok(()),
        }
    }
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("request", &self.inner.request)
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

/// Disposes of a dead session in a task of its own. What is left may
/// still take a round trip (an HTTP session's `DELETE`, which the server
/// may answer late, within the close timeout), and no call waits for that:
/// neither the call that lost the session nor the one that replaces it.
/// Exactly once: the session was taken out of the client's state first,
/// so nothing else closes it; a child process is still reaped.
fn dispose(dead: Arc<Session>) {
    tokio::spawn(async move {
        let _ = dead.close().await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Connector, EstablishBuilder};

    /// Issue 42, item 1: the request each establishment of a long-lived
    /// client gets (the first with its deadline and token, every later one
    /// with the shutdown token), and each attempt's request made from it,
    /// share the client's configuration: nothing of it is copied per
    /// reconnect or per attempt.
    #[test]
    fn reconnects_and_attempts_copy_no_configuration() {
        let stack = EstablishBuilder::new(Connector::new()).build();
        let request = ConnectRequest::http("http://127.0.0.1:9/mcp")
            .expect("valid")
            .with_deadline(tokio::time::Instant::now())
            .with_cancellation(CancellationToken::new());
        let client = McpClient::builder(stack, request)
            .with_shutdown(CancellationToken::new())
            .build();
        for _ in 0..3 {
            let connect = client.next_request();
            assert!(connect.shares_settings_with(&client.inner.request));
            let attempt = connect.for_attempt(2, crate::request::Strategy::AsConfigured);
            assert!(attempt.shares_settings_with(&client.inner.request));
        }
    }
}
