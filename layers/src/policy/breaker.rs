//! A circuit breaker for one server's calls.
//!
//! Closed, it counts consecutive failures the rule says are the server's
//! health ([`server_unwell`](super::server_unwell) by default: never a tool
//! error, which is a successful response, nor an answer naming the
//! request); at the threshold it opens. Open, calls fail at once with
//! [`Refused::CircuitOpen`] until a wait that doubles with every opening
//! (jittered into its upper half) has passed; then one call goes through as
//! the probe (half-open) while the others still fail fast. The probe's
//! success closes the breaker; its failure opens it again for longer. A
//! probe whose caller gave up lets the next call probe.
//!
//! With a [`Probe`] ([`CircuitBreakerLayer::with_probe`]) the half-open
//! call first sends the probe's cheap request (a protocol's ping) on the
//! same service: when that fails, the call itself is refused unsent, so a
//! server still down never sees a real call, and one that is up sees the
//! call right after. A passing probe proves only that the server answers:
//! the call it admits is still the trial, and only the trial's success
//! closes the breaker and forgets the backoff. A trial that fails opens it
//! again for twice as long, whatever the probe said (a server whose health
//! check passes while every call gets a 503 would otherwise be tried in
//! full every few seconds, forever).
//!
//! The state is shared by every clone and every service the layer makes:
//! it is the server's. [`CircuitBreakerLayer::state`] reads it (a group
//! shows it as the server's health).

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::jitter::{jitter, Jitter};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use super::{jittered, server_unwell, BoxFuture, Refused};
use crate::Classify;

/// When a breaker opens and how long it stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerConfig {
    /// Consecutive counted failures that open it (default 5).
    pub threshold: u32,
    /// The first wait before a probe (default 5 s); it doubles with each
    /// failed probe.
    pub open_for: Duration,
    /// The longest wait before a probe (default 60 s).
    pub max_open_for: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            threshold: 5,
            open_for: Duration::from_secs(5),
            max_open_for: Duration::from_secs(60),
        }
    }
}

impl BreakerConfig {
    /// Opens after `threshold` consecutive counted failures (at least one).
    #[must_use]
    pub fn with_threshold(mut self, threshold: u32) -> Self {
        self.threshold = threshold.max(1);
        self
    }

    /// Waits `open_for` before the first probe, doubling up to `max`.
    #[must_use]
    pub fn with_open_for(mut self, open_for: Duration, max: Duration) -> Self {
        self.open_for = open_for;
        self.max_open_for = max.max(open_for);
        self
    }
}

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CircuitState {
    /// Calls go through; this many counted failures in a row so far.
    Closed {
        /// Counted failures since the last success.
        failures: u32,
    },
    /// Calls fail fast until a probe may go.
    Open {
        /// Until then.
        until: Instant,
    },
    /// One probe is in flight; other calls fail fast.
    HalfOpen,
}

struct State {
    circuit: CircuitState,
    /// How many times it opened since it last closed.
    openings: u32,
    rng: Jitter,
}

type Rule<E> = Arc<dyn Fn(&E) -> bool + Send + Sync>;

/// The cheap request a half-open breaker sends before the call it admits
/// (see [`CircuitBreakerLayer::with_probe`]).
pub trait Probe<R>: Clone + Send + Sync + 'static {
    /// The request that tells whether the server is back, sent before
    /// `call`; `None` sends `call` itself as the probe.
    fn probe(&self, call: &R) -> Option<R>;
}

/// No probe of its own: the admitted call is the probe.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProbe;

impl<R> Probe<R> for NoProbe {
    fn probe(&self, _: &R) -> Option<R> {
        None
    }
}

/// Puts a [`CircuitBreaker`] around a service; every service it makes
/// shares one breaker.
pub struct CircuitBreakerLayer<E, P = NoProbe> {
    config: BreakerConfig,
    state: Arc<Mutex<State>>,
    counts: Rule<E>,
    probe: P,
}

impl<E, P: Clone> Clone for CircuitBreakerLayer<E, P> {
    fn clone(&self) -> Self {
        CircuitBreakerLayer {
            config: self.config,
            state: Arc::clone(&self.state),
            counts: Arc::clone(&self.counts),
            probe: self.probe.clone(),
        }
    }
}

impl<E, P> std::fmt::Debug for CircuitBreakerLayer<E, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("config", &self.config)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl<E: Classify + 'static> CircuitBreakerLayer<E> {
    /// A breaker with `config`, counting the failures
    /// [`server_unwell`](super::server_unwell) names.
    pub fn new(config: BreakerConfig) -> Self {
        Self::counting(config, |error: &E| server_unwell(&error.failure()))
    }
}

impl<E> CircuitBreakerLayer<E> {
    /// A breaker with `config` that counts the failures `counts` names.
    pub fn counting(
        config: BreakerConfig,
        counts: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        CircuitBreakerLayer {
            config,
            state: Arc::new(Mutex::new(State {
                circuit: CircuitState::Closed { failures: 0 },
                openings: 0,
                rng: jitter(),
            })),
            counts: Arc::new(counts),
            probe: NoProbe,
        }
    }
}

impl<E, P> CircuitBreakerLayer<E, P> {
    /// Half-open, sends `probe`'s request before the admitted call, and the
    /// call only when the server answered it.
    pub fn with_probe<Q>(self, probe: Q) -> CircuitBreakerLayer<E, Q> {
        CircuitBreakerLayer {
            config: self.config,
            state: self.state,
            counts: self.counts,
            probe,
        }
    }

    /// Where the breaker stands now.
    pub fn state(&self) -> CircuitState {
        lock(&self.state).circuit
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // Held for one transition, which cannot panic.
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<S, E, P: Clone> Layer<S> for CircuitBreakerLayer<E, P> {
    type Service = CircuitBreaker<S, E, P>;

    fn layer(&self, inner: S) -> CircuitBreaker<S, E, P> {
        CircuitBreaker {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`CircuitBreakerLayer`].
pub struct CircuitBreaker<S, E, P = NoProbe> {
    inner: S,
    layer: CircuitBreakerLayer<E, P>,
}

impl<S: Clone, E, P: Clone> Clone for CircuitBreaker<S, E, P> {
    fn clone(&self) -> Self {
        CircuitBreaker {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S, E, P> std::fmt::Debug for CircuitBreaker<S, E, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("state", &self.layer.state())
            .finish_non_exhaustive()
    }
}

/// Whether a call may go, and whether it is the probe.
enum Admission {
    Go { probe: bool },
    Refuse(Duration),
}

impl<E, P> CircuitBreakerLayer<E, P> {
    fn admit(&self) -> Admission {
        let mut state = lock(&self.state);
        let now = Instant::now();
        match state.circuit {
            CircuitState::Closed { .. } => Admission::Go { probe: false },
            CircuitState::Open { until } if now >= until => {
                state.circuit = CircuitState::HalfOpen;
                Admission::Go { probe: true }
            }
            CircuitState::Open { until } => Admission::Refuse(until - now),
            // The probe's answer decides; until then, fail fast for a
            // moment rather than pile onto a server that may be down.
            CircuitState::HalfOpen => {
                Admission::Refuse(self.config.open_for.min(Duration::from_secs(1)))
            }
        }
    }

    /// Records a call's end: `counted` when it failed in a way the rule
    /// counts, `None` when it failed in a way the rule ignores.
    fn record(&self, probe: bool, counted: Option<bool>) {
        let mut state = lock(&self.state);
        match counted {
            Some(false) => {
                state.circuit = CircuitState::Closed { failures: 0 };
                state.openings = 0;
            }
            Some(true) => {
                let failures = match state.circuit {
                    CircuitState::Closed { failures } if !probe => failures + 1,
                    _ if probe => self.config.threshold,
                    // A call let through before the breaker opened.
                    _ => return,
                };
                if failures < self.config.threshold {
                    state.circuit = CircuitState::Closed { failures };
                    return;
                }
                let exponent = state.openings;
                state.openings = state.openings.saturating_add(1);
                let wait = jittered(
                    self.config.open_for,
                    self.config.max_open_for,
                    exponent,
                    &mut state.rng,
                );
                state.circuit = CircuitState::Open {
                    until: crate::instant::after(Instant::now(), wait),
                };
            }
            // An ignored failure on the probe: the server answered, so it
            // is up; anywhere else it changes nothing.
            None if probe => state.circuit = CircuitState::Closed { failures: 0 },
            None => {}
        }
    }

    /// How long until the next probe may go (zero when it may now).
    fn retry_in(&self) -> Duration {
        match lock(&self.state).circuit {
            CircuitState::Open { until } => until.saturating_duration_since(Instant::now()),
            _ => Duration::ZERO,
        }
    }

    /// A probe whose caller gave up: the next call probes.
    fn abandon_probe(&self) {
        let mut state = lock(&self.state);
        if state.circuit == CircuitState::HalfOpen {
            state.circuit = CircuitState::Open {
                until: Instant::now(),
            };
        }
    }
}

/// Lets the next call probe when a probe's future is dropped unfinished.
struct ProbeGuard<E, P> {
    layer: Option<CircuitBreakerLayer<E, P>>,
}

impl<E, P> Drop for ProbeGuard<E, P> {
    fn drop(&mut self) {
        if let Some(layer) = self.layer.take() {
            layer.abandon_probe();
        }
    }
}

impl<S, E, P, R> Service<R> for CircuitBreaker<S, E, P>
where
    S: Service<R, Error = E> + Clone + Send + 'static,
    S::Future: Send + 'static,
    E: From<Refused> + Send + 'static,
    P: Probe<R>,
    R: Send + 'static,
{
    type Response = S::Response;
    type Error = E;
    type Future = BoxFuture<Result<S::Response, E>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), E>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> Self::Future {
        let layer = self.layer.clone();
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let probe = match layer.admit() {
                Admission::Go { probe } => probe,
                Admission::Refuse(retry_in) => return Err(Refused::CircuitOpen { retry_in }.into()),
            };
            let mut guard = ProbeGuard {
                layer: probe.then(|| layer.clone()),
            };
            if let Some(cheap) = probe.then(|| layer.probe.probe(&request)).flatten() {
                let failed = match send(&mut inner, cheap).await {
                    Err(error) => (layer.counts)(&error),
                    Ok(_) => false,
                };
                if failed {
                    guard.layer = None;
                    layer.record(true, Some(true));
                    return Err(Refused::CircuitOpen {
                        retry_in: layer.retry_in(),
                    }
                    .into());
                }
                // The server answers: the call is the trial (still
                // half-open), and its own outcome decides.
            }
            let outcome = send(&mut inner, request).await;
            guard.layer = None;
            let counted = match &outcome {
                Ok(_) => Some(false),
                Err(error) if (layer.counts)(error) => Some(true),
                Err(_) => None,
            };
            layer.record(probe, counted);
            outcome
        })
    }
}

/// `request` on `inner` once it is ready.
async fn send<S: Service<R>, R>(inner: &mut S, request: R) -> Result<S::Response, S::Error> {
    std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
    inner.call(request).await
}
