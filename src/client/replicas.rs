//! One named server behind several URLs: each call goes to one replica,
//! chosen by the power of two choices over each replica's peak-EWMA load
//! (tower's `PeakEwma`, linkerd's balancer's measure); a replica that fails
//! again and again is ejected for a while, as Envoy's outlier detection
//! does, and probed back.
//!
//! Each replica is its own [`McpClient`] with its own session, so a 2025
//! session stays on its replica: a call is sent on the session of the
//! replica it went to. A failed call goes to another replica only when
//! that cannot run it twice: the failure proves it was never sent (the
//! connection was refused, no session could be had, a policy refused it),
//! or it is an idempotent read ([`Call::is_idempotent_read`]). A
//! `tools/call` that failed after it was sent reaches the caller.
//!
//! tower's `Balance` is not used as a whole: it discovers services through
//! a stream, is not `Clone` (a `Buffer` and its task would sit in front),
//! and has no ejection; the p2c choice itself is a few lines.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_connect_layers::jitter::{jitter, Jitter};
use mcp_connect_layers::policy::server_unwell;
use mcp_connect_layers::FailureKind;
use serde_json::value::RawValue;
use tokio::time::Instant;
use tower::load::peak_ewma::Cost;
use tower::load::{CompleteOnResponse, Load, PeakEwma};
use tower::util::rng::Rng;
use tower::{Layer, Service};

use super::{Call, CallService, ClientError, McpClient};

/// How replicas are balanced and ejected.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ReplicaConfig {
    /// Consecutive failures that eject a replica (default 3).
    pub eject_after: u32,
    /// How long the first ejection lasts (default 5 s); it doubles with
    /// each ejection in a row, up to 60 s.
    pub ejected_for: Duration,
    /// The largest share of replicas ejected at once (default 0.5): the
    /// rest keep taking calls even when they fail.
    pub max_ejected: f64,
}

impl Default for ReplicaConfig {
    fn default() -> Self {
        ReplicaConfig {
            eject_after: 3,
            ejected_for: Duration::from_secs(5),
            max_ejected: 0.5,
        }
    }
}

impl ReplicaConfig {
    /// Ejects after `failures` in a row, first for `ejected_for`.
    #[must_use]
    pub fn with_ejection(mut self, failures: u32, ejected_for: Duration) -> Self {
        self.eject_after = failures.max(1);
        self.ejected_for = ejected_for;
        self
    }
}

/// One replica: its call path, its load, its health.
struct Replica {
    calls: Mutex<PeakEwma<CallService, CompleteOnResponse>>,
    health: Mutex<Health>,
}

#[derive(Default)]
struct Health {
    failures: u32,
    ejections: u32,
    ejected_until: Option<Instant>,
}

impl Replica {
    fn load(&self) -> Cost {
        // Held for one read.
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .load()
    }

    fn ejected(&self, now: Instant) -> bool {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.ejected_until.is_some_and(|until| now < until)
    }
}

/// Puts [`Replicas`] innermost on a client's call path: the client's own
/// session and the given clients' sessions, balanced. (A config entry's or
/// [`CallPolicies`](super::CallPolicies)' replicas are made this way, each
/// a lazy client of the same stack.)
///
/// ```no_run
/// use mcp_connect::client::{ReplicaConfig, ReplicasLayer};
/// use mcp_connect::{ConnectRequest, EstablishBuilder, Connector, McpClient};
/// # fn run() -> Result<(), mcp_connect::Error> {
/// let stack = EstablishBuilder::new(Connector::new()).build();
/// let other = McpClient::builder(stack.clone(), ConnectRequest::http("https://b.mcp.example/mcp")?)
///     .build();
/// let client = McpClient::builder(stack, ConnectRequest::http("https://a.mcp.example/mcp")?)
///     .with_call_layer(ReplicasLayer::new([other], ReplicaConfig::default()))
///     .build();
/// # drop(client); Ok(()) }
/// ```
#[derive(Clone)]
pub struct ReplicasLayer {
    others: Vec<McpClient>,
    config: ReplicaConfig,
}

impl std::fmt::Debug for ReplicasLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicasLayer")
            .field("replicas", &(self.others.len() + 1))
            .field("config", &self.config)
            .finish()
    }
}

impl ReplicasLayer {
    /// The client's own server and `others`, each its own client.
    pub fn new(others: impl IntoIterator<Item = McpClient>, config: ReplicaConfig) -> Self {
        ReplicasLayer {
            others: others.into_iter().collect(),
            config,
        }
    }
}

impl Layer<CallService> for ReplicasLayer {
    type Service = Replicas;

    fn layer(&self, own: CallService) -> Replicas {
        let paths = std::iter::once(own).chain(self.others.iter().map(McpClient::session_calls));
        let replicas = paths
            .map(|calls| Replica {
                calls: Mutex::new(PeakEwma::new(
                    calls,
                    Duration::from_millis(30),
                    Duration::from_secs(10).as_nanos() as f64,
                    CompleteOnResponse::default(),
                )),
                health: Mutex::new(Health::default()),
            })
            .collect();
        Replicas {
            shared: Arc::new(Shared {
                replicas,
                config: self.config,
                rng: Mutex::new(jitter()),
            }),
            // Keeps the other clients alive: their call paths hold them weakly.
            _others: Arc::new(self.others.clone()),
        }
    }
}

struct Shared {
    replicas: Vec<Replica>,
    config: ReplicaConfig,
    rng: Mutex<Jitter>,
}

/// The service made by [`ReplicasLayer`]; clones share the replicas.
#[derive(Clone)]
pub struct Replicas {
    shared: Arc<Shared>,
    _others: Arc<Vec<McpClient>>,
}

impl std::fmt::Debug for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replicas")
            .field("replicas", &self.shared.replicas.len())
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The replica for the next call, other than `not`: the less loaded of
    /// two drawn at random among those not ejected (all, when every one is).
    fn choose(&self, not: Option<usize>) -> Option<usize> {
        let now = Instant::now();
        let mut live: Vec<usize> = (0..self.replicas.len())
            .filter(|&i| Some(i) != not && !self.replicas[i].ejected(now))
            .collect();
        if live.is_empty() {
            live = (0..self.replicas.len())
                .filter(|&i| Some(i) != not)
                .collect();
        }
        let (a, b) = {
            let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
            let n = live.len() as u64;
            if n == 0 {
                return None;
            }
            (
                live[(rng.next_u64() % n) as usize],
                live[(rng.next_u64() % n) as usize],
            )
        };
        Some(if self.replicas[b].load() < self.replicas[a].load() {
            b
        } else {
            a
        })
    }

    /// Counts a call's end on replica `i`, ejecting it when it failed often
    /// enough and few enough others are ejected.
    fn record(&self, i: usize, failed: bool) {
        let now = Instant::now();
        let ejected_now = self.replicas.iter().filter(|r| r.ejected(now)).count();
        let mut health = self.replicas[i]
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !failed {
            *health = Health::default();
            return;
        }
        health.failures += 1;
        let room = ((self.replicas.len() as f64) * self.config.max_ejected).floor() as usize;
        if health.failures >= self.config.eject_after
            && ejected_now < room.max(1).min(self.replicas.len() - 1)
        {
            let wait = self
                .config
                .ejected_for
                .checked_mul(1 << health.ejections.min(4))
                .unwrap_or(Duration::from_secs(60))
                .min(Duration::from_secs(60));
            health.ejected_until = Some(mcp_connect_layers::instant::after(now, wait));
            health.ejections += 1;
            health.failures = 0;
        }
    }

    async fn send(&self, i: usize, call: Call) -> Result<Box<RawValue>, ClientError> {
        let future = {
            let mut calls = self.replicas[i]
                .calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Every call path under a client is always ready.
            calls.call(call)
        };
        let outcome = future.await;
        let failed = outcome.as_ref().err().is_some_and(counts_against);
        self.record(i, failed);
        outcome
    }
}

/// Whether a failure counts against the replica: it is unwell or its
/// session died.
fn counts_against(error: &ClientError) -> bool {
    error.is_session_lost()
        || server_unwell(&error.failure())
        || matches!(
            error,
            ClientError::Connect(_) | ClientError::CoolingDown { .. }
        )
}

/// Whether the call provably never reached the replica.
fn never_sent(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::Connect(_) | ClientError::CoolingDown { .. } | ClientError::Refused(_)
    ) || matches!(
        error.failure().kind,
        FailureKind::Connect | FailureKind::Dns
    )
}

impl Service<Call> for Replicas {
    type Response = Box<RawValue>;
    type Error = ClientError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ClientError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let Some(first) = shared.choose(None) else {
                return Err(ClientError::Gone);
            };
            let again = call.clone();
            let error = match shared.send(first, call).await {
                Ok(result) => return Ok(result),
                Err(error) => error,
            };
            let may_fail_over = never_sent(&error)
                || (again.request().is_idempotent_read() && counts_against(&error));
            match shared.choose(Some(first)) {
                Some(next) if may_fail_over => shared.send(next, again).await,
                _ => Err(error),
            }
        })
    }
}
