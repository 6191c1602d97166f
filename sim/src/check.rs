//! The properties every run is checked against, read from its ledger.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::ledger::{Answer, Outcome};
use crate::server::Path;
use crate::target::{BULKHEAD_WAIT, GROUP_RETRY, RETRY_AFTER};
use crate::workload::{ATTEMPTS, DEADLINE, REQUEST_TIMEOUT};
use crate::world::{Run, SERVERS};

/// Any call ends within one establishment (its deadline covers every
/// attempt and backoff) plus one request's timeout, plus the simulator's
/// own grain; twice that with the opt-in replay (the first server's).
pub const CALL_BOUND: Duration = DEADLINE
    .saturating_add(REQUEST_TIMEOUT)
    .saturating_add(Duration::from_millis(500));

/// A group call may also wait for its member's bulkhead, and a throttled
/// one is sent once more after the delay its answer stated.
pub const GROUP_CALL_BOUND: Duration = CALL_BOUND
    .saturating_add(BULKHEAD_WAIT)
    .saturating_add(RETRY_AFTER)
    .saturating_add(REQUEST_TIMEOUT);

/// A failed establishment ends at its deadline, plus the simulator's grain.
pub const ESTABLISH_BOUND: Duration = DEADLINE.saturating_add(Duration::from_millis(100));

/// One broken property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub property: &'static str,
    pub detail: String,
    /// The call it is about, whose trace lines explain it.
    pub call: Option<u64>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.property, self.detail)
    }
}

/// Every property of `run`, in a fixed order.
pub fn check(run: &Run) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut violation = |property, detail: String, call| {
        found.push(Violation {
            property,
            detail,
            call,
        })
    };
    let ledger = &run.ledger;
    if let Some(failed) = &run.failed {
        violation("simulation", format!("a host failed: {failed}"), None);
    }
    if run.failed.is_none() && !ledger.workload_done {
        violation("simulation", "the workload did not finish".into(), None);
    }
    for (call, times) in &ledger.executions {
        if *times > 1 {
            let detail = format!("c{call} was executed {times} times");
            violation("G8 no replay", detail, Some(*call));
        }
    }
    for (server, attempt, elapsed, started) in &ledger.late_stages {
        let what = match started {
            true => "started",
            false => "ended",
        };
        let detail = format!(
            "an establishment to {server} {what} a stage of attempt {attempt} at {elapsed:?}, after its {DEADLINE:?} deadline"
        );
        violation("G3/G9 deadline", detail, None);
    }
    let mut suppressed: BTreeMap<&'static str, Suppressed> = BTreeMap::new();
    for outcome in &ledger.outcomes {
        suppressed.entry(outcome.server).or_default().after(outcome);
        let call = outcome.call;
        let spec = SERVERS.iter().find(|s| s.name == outcome.server);
        let bound = match spec.map(|s| s.path) {
            // The opt-in replay may establish and send once more.
            Some(Path::Replay) => CALL_BOUND * 2,
            Some(Path::Group) => GROUP_CALL_BOUND,
            _ => CALL_BOUND,
        };
        if outcome.took > bound {
            let detail = format!("c{call} took {:?} (bound {bound:?})", outcome.took);
            violation("bounded call", detail, Some(call));
        }
        // Nothing but the establishment stands before a lone client's
        // call; a breaker's half-open probe may (one request), and a
        // group member's bulkhead.
        let establish_bound = match spec.map(|s| s.path) {
            Some(Path::Breaker) => ESTABLISH_BOUND + REQUEST_TIMEOUT,
            Some(Path::Group) => ESTABLISH_BOUND + REQUEST_TIMEOUT + BULKHEAD_WAIT,
            _ => ESTABLISH_BOUND,
        };
        let failure = outcome.error.as_ref();
        if failure.is_some_and(|f| f.connect_failed) && outcome.took > establish_bound {
            let detail = format!(
                "c{call}: its establishment failed after {:?} (deadline {DEADLINE:?})",
                outcome.took
            );
            violation("G3/G9 deadline", detail, Some(call));
        }
        let faulty = spec.is_some_and(|s| s.faulty);
        let Some(failure) = &outcome.error else {
            continue;
        };
        if !faulty {
            let detail = format!("c{call} to {} failed: {}", outcome.server, failure.text);
            violation("breaker ignores tool errors", detail, Some(call));
            continue;
        }
        let last = ledger.answers.get(&call).and_then(|a| a.last()).copied();
        match (failure.http_status, last) {
            (Some(status), Some(Answer::Status(answered)))
                if status == answered && failure.session_lost =>
            {
                let detail = format!("c{call}: a {status} naming the request dropped the session");
                violation("G16 session loss", detail, Some(call));
            }
            (Some(status), Some(Answer::Stale(answered)))
                if status == answered
                    && !failure.session_lost
                    && !failure.refused_again
                    && !suppressed
                        .get(outcome.server)
                        .is_some_and(|w| w.holds(outcome.ended)) =>
            {
                let detail = format!("c{call}: a stale-session {status} kept the session");
                violation("G16 session loss", detail, Some(call));
            }
            _ => {}
        }
    }
    for spec in SERVERS.iter() {
        let calls = ledger
            .outcomes
            .iter()
            .filter(|o| o.server == spec.name)
            .count() as u32;
        let sessions = ledger.sessions_created.get(spec.name).copied().unwrap_or(0);
        // A lone client establishes for calls only, at most once per call;
        // a group member also at start and on its own after an outage, at
        // the group's pace: at most once per backoff base over the run.
        let establishments = match spec.path {
            Path::Group => {
                1 + calls + (run.simulated.as_millis() / GROUP_RETRY.base().as_millis()) as u32
            }
            _ => calls.max(1),
        };
        if sessions > ATTEMPTS * establishments {
            let detail = format!(
                "{sessions} sessions opened to {} for {calls} calls (at most {ATTEMPTS} per establishment, {establishments} establishments)",
                spec.name
            );
            violation("no reconnect storm", detail, None);
        }
    }
    for leak in &ledger.leaks {
        violation("no leaks", leak.clone(), None);
    }
    found
}

/// The trace lines that explain `violation`: the call's own lines and every
/// network or life event, or the whole trace when it names no call.
pub fn explain<'a>(run: &'a Run, violation: &Violation) -> Vec<&'a str> {
    let trace = run.ledger.trace();
    match violation.call {
        None => trace.iter().map(String::as_str).collect(),
        Some(call) => {
            let mark = format!(" c{call} ");
            trace
                .iter()
                .filter(|line| {
                    line.contains(&mark) || line.contains(" net: ") || line.contains(" starts, ")
                })
                .map(String::as_str)
                .collect()
        }
    }
}

/// When a stale-session refusal may keep the session (the session-loss
/// rule's guard against reconnect loops): after the replacing session was
/// refused again, for 5 s, doubling each time it happens again (at most
/// 5 minutes), until a call succeeds.
#[derive(Default)]
struct Suppressed {
    again: u32,
    until: Option<Duration>,
}

impl Suppressed {
    /// Follows one outcome on the server, in the order calls ended.
    fn after(&mut self, outcome: &Outcome) {
        match &outcome.error {
            None => *self = Suppressed::default(),
            Some(failure) if failure.refused_again => {
                let wait =
                    Duration::from_secs(5 << self.again.min(6)).min(Duration::from_secs(300));
                self.again += 1;
                self.until = Some(outcome.ended + wait);
            }
            Some(_) => {}
        }
    }

    /// Whether a refusal at `at` may keep the session (the client's clock
    /// and the ledger's differ by the simulator's grain at most).
    fn holds(&self, at: Duration) -> bool {
        self.until
            .is_some_and(|until| at <= until + Duration::from_millis(100))
    }
}
