//! No reconnect storms. When many servers lose their sessions together (a
//! laptop woke, the network changed, a proxy restarted), every one of them
//! reconnecting on its own pace is a storm: thousands of attempts in
//! seconds that all fail the same way. The group notices the burst (losses
//! within [`WINDOW`], or the wall clock jumping ahead of the monotonic one,
//! which is what a sleep looks like) and holds those reconnects behind one
//! probe: the first member to try goes on with its own backoff, the others
//! wait. Once any member gets a session, the network is back: the others
//! are released, each after a random share of [`SPREAD`], so even the
//! release does not arrive at once (and groups of a fleet stay apart).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use mcp_connect_layers::jitter::Jitter;
use tokio::sync::watch;
use tokio::time::Instant;
use tower::util::rng::Rng;

/// Losses this close together are one event.
pub(super) const WINDOW: Duration = Duration::from_secs(2);

/// Losses within the window that make a storm.
pub(super) const STORM: usize = 3;

/// Released reconnects spread over this.
pub(super) const SPREAD: Duration = Duration::from_secs(1);

/// The longest the gate holds: past it the held go on their own, whatever
/// became of the probe (restarted, failed for good), so no reconnect
/// waits without a bound.
pub(super) const MAX_HOLD: Duration = Duration::from_secs(30);

/// A gap between the wall clock and the monotonic one larger than this
/// means the machine slept.
const SLEPT: Duration = Duration::from_secs(5);

/// The group's storm gate (see the module docs).
pub(super) struct StormGate {
    state: Mutex<Gate>,
    /// Bumped at each release: what held members wait for.
    released: watch::Sender<u64>,
}

struct Gate {
    losses: VecDeque<Instant>,
    /// Since when the gate holds, while it does.
    holding: Option<Instant>,
    /// The member whose reconnects go on while the others are held.
    probe: Option<Arc<str>>,
    /// The clocks when last looked at, to notice a sleep.
    clocks: (Instant, SystemTime),
}

impl Default for StormGate {
    fn default() -> Self {
        StormGate {
            state: Mutex::new(Gate {
                losses: VecDeque::new(),
                holding: None,
                probe: None,
                clocks: (Instant::now(), SystemTime::now()),
            }),
            released: watch::channel(0).0,
        }
    }
}

/// Whether a member may reconnect now.
pub(super) enum Admission {
    /// Yes: no storm, or it is the probe.
    Go,
    /// Not before the next release.
    Held(watch::Receiver<u64>),
}

impl StormGate {
    /// A member lost its session now.
    pub(super) fn lost(&self) {
        let now = Instant::now();
        let mut gate = self.gate();
        let slept = gate.slept(now);
        while gate
            .losses
            .front()
            .is_some_and(|at| now.saturating_duration_since(*at) > WINDOW)
        {
            gate.losses.pop_front();
        }
        gate.losses.push_back(now);
        if gate.holding.is_none() && (slept || gate.losses.len() >= STORM) {
            gate.holding = Some(now);
            gate.probe = None;
        }
    }

    /// Whether `member` may try to reconnect now; the first to ask while
    /// the gate holds becomes the probe.
    pub(super) fn admit(&self, member: &Arc<str>) -> Admission {
        let mut gate = self.gate();
        let Some(since) = gate.holding else {
            return Admission::Go;
        };
        if Instant::now().saturating_duration_since(since) >= MAX_HOLD {
            drop(gate);
            self.reached();
            return Admission::Go;
        }
        match &gate.probe {
            Some(probe) if probe == member => Admission::Go,
            Some(_) => Admission::Held(self.released.subscribe()),
            None => {
                gate.probe = Some(Arc::clone(member));
                Admission::Go
            }
        }
    }

    /// A member got a session: the network is back; the held go.
    pub(super) fn reached(&self) {
        let mut gate = self.gate();
        if gate.holding.is_some() {
            gate.holding = None;
            gate.probe = None;
            gate.losses.clear();
            self.released.send_modify(|n| *n += 1);
        }
    }

    /// The probe stopped trying (it failed for good, or was removed):
    /// the next member to ask becomes the probe.
    pub(super) fn gave_up(&self, member: &Arc<str>) {
        let mut gate = self.gate();
        if gate.probe.as_ref() == Some(member) {
            gate.probe = None;
            // Wake the held, so that one of them takes over.
            self.released.send_modify(|n| *n += 1);
        }
    }

    fn gate(&self) -> std::sync::MutexGuard<'_, Gate> {
        // Held for a few field updates, which cannot panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Gate {
    /// Whether the wall clock moved ahead of the monotonic one by more
    /// than [`SLEPT`] since the last look (monotonic time stops while the
    /// machine sleeps on some platforms); the clocks are read anew.
    fn slept(&mut self, now: Instant) -> bool {
        let wall = SystemTime::now();
        let (then, then_wall) = std::mem::replace(&mut self.clocks, (now, wall));
        let monotonic = now.saturating_duration_since(then);
        let walled = wall.duration_since(then_wall).unwrap_or_default();
        walled.saturating_sub(monotonic) > SLEPT
    }
}

/// Waits for the release after `held` (at most [`MAX_HOLD`]), then a
/// random share of [`SPREAD`].
pub(super) async fn released(mut held: watch::Receiver<u64>, rng: &mut Jitter) {
    let _ = tokio::time::timeout(MAX_HOLD, held.changed()).await;
    let share = rng.next_f64();
    tokio::time::sleep(SPREAD.mul_f64(share)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_losses_holds_all_but_one_probe_until_one_reconnects() {
        let gate = StormGate::default();
        let (a, b, c): (Arc<str>, Arc<str>, Arc<str>) = ("a".into(), "b".into(), "c".into());
        gate.lost();
        gate.lost();
        assert!(matches!(gate.admit(&a), Admission::Go), "two is no storm");
        gate.lost();
        assert!(matches!(gate.admit(&b), Admission::Go), "b is the probe");
        assert!(matches!(gate.admit(&b), Admission::Go));
        let Admission::Held(held) = gate.admit(&c) else {
            panic!("c is held");
        };
        gate.reached();
        assert!(held.has_changed().unwrap(), "released");
        assert!(matches!(gate.admit(&c), Admission::Go));
        // A hold whose probe never gets through ends on its own.
        for _ in 0..STORM {
            gate.lost();
        }
        assert!(matches!(gate.admit(&a), Admission::Go), "a probes");
        assert!(matches!(gate.admit(&c), Admission::Held(_)));
        tokio::time::advance(MAX_HOLD).await;
        assert!(matches!(gate.admit(&c), Admission::Go), "bounded");
        // Losses far apart are no storm.
        for _ in 0..5 {
            tokio::time::advance(WINDOW + Duration::from_millis(1)).await;
            gate.lost();
            assert!(matches!(gate.admit(&c), Admission::Go));
        }
    }

    #[test]
    fn a_probe_that_gives_up_hands_over() {
        let gate = StormGate::default();
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        for _ in 0..STORM {
            gate.lost();
        }
        assert!(matches!(gate.admit(&a), Admission::Go));
        let Admission::Held(held) = gate.admit(&b) else {
            panic!("b is held");
        };
        gate.gave_up(&a);
        assert!(held.has_changed().unwrap());
        assert!(matches!(gate.admit(&b), Admission::Go), "b probes now");
    }
}
