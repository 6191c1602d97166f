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
    let mut waits: BTreeMap<&'static str, RefusalWait> = BTreeMap::new();
    for outcome in &ledger.outcomes {
        let made = ledger.sessions_created.get(outcome.server);
        let wait = waits.entry(outcome.server).or_default();
        if let Some(past) = wait.after(outcome, made.map_or(&[][..], Vec::as_slice)) {
            let detail = format!(
                "c{}: refused again at {:?} with no session made since {past:?}, past the rule's wait",
                outcome.call, outcome.ended
            );
            violation("G16 session loss", detail, Some(outcome.call));
        }
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
        if failure.unlisted_while_ready {
            let detail = format!(
                "c{call}: {} was ready without its tool in the catalogue",
                outcome.server
            );
            violation("a ready member is listed", detail, Some(call));
        }
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
            // Kept only as the rule's guard against loops, which says so.
            (Some(status), Some(Answer::Stale(answered)))
                if status == answered && !failure.session_lost && !failure.refused_again =>
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
        let sessions = ledger.sessions_created.get(spec.name).map_or(0, Vec::len) as u32;
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

/// How long a refusal the client keeps (`RefusedAgain`) may go on without
/// a new session: the session-loss rule's guard against loops waits 5 s,
/// doubling each time a replacing session is refused again (at most
/// 5 minutes), until a request succeeds. A wait opens at the first such
/// refusal on a session; one after its end is a session held for good.
///
/// The check cannot see every request (the group's listings are not
/// calls), so it errs toward allowing: a wait opens at the first refusal
/// it sees, and doubles once for each session made since the last call
/// that succeeded.
#[derive(Default)]
struct RefusalWait {
    /// Sessions made by the last success.
    at_success: usize,
    /// The first refusal seen since the last session was made, and the
    /// number of sessions made by then.
    opened: Option<(Duration, usize)>,
}

impl RefusalWait {
    /// Follows one outcome on the server, in the order calls ended; the
    /// opening of the wait a refusal outlasted, if one did.
    fn after(&mut self, outcome: &Outcome, made: &[Duration]) -> Option<Duration> {
        let sessions = made.iter().filter(|at| **at <= outcome.ended).count();
        match &outcome.error {
            None => {
                *self = RefusalWait {
                    at_success: sessions,
                    opened: None,
                };
                None
            }
            Some(failure) if failure.refused_again => match self.opened {
                Some((opened, by)) if by == sessions => {
                    let doublings = (sessions - self.at_success).min(6) as u32;
                    let wait = Duration::from_secs(5 << doublings).min(Duration::from_secs(300));
                    let grain = Duration::from_millis(100);
                    (outcome.ended > opened + wait + grain).then_some(opened)
                }
                _ => {
                    self.opened = Some((outcome.ended, sessions));
                    None
                }
            },
            Some(_) => None,
        }
    }
}
