//! What one simulation saw, in the order it happened: the event trace that
//! a seed must reproduce byte for byte, and the facts the properties are
//! checked against (what each server executed and answered, what each call
//! got back). Servers and the client write into it directly: the simulator
//! runs every host on one thread, so the ledger is the checker's view of
//! the whole world.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a server answered one `tools/call`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Executed; a result (a tool error when `tool_error`).
    Executed { tool_error: bool },
    /// An HTTP status with a JSON-RPC error naming the request, not executed.
    Status(u16),
    /// The session id is unknown (expired, or the server restarted): the
    /// server's stale-session answer, not executed.
    Stale(u16),
    /// Executed, then the connection was dropped before the answer.
    DroppedAfter,
    /// The connection was dropped before anything was executed.
    DroppedBefore,
    /// Never answered (the exchange stalls until the client gives up).
    Stalled,
}

/// How one call ended, as the client saw it.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub call: u64,
    pub server: &'static str,
    pub took: Duration,
    /// Simulated time the call ended.
    pub ended: Duration,
    /// `None`: the call succeeded.
    pub error: Option<CallFailure>,
}

/// The facts of a failed call that the properties read.
#[derive(Clone, Debug, Default)]
pub struct CallFailure {
    /// No session could be established for it (the establishment failed).
    pub connect_failed: bool,
    pub session_lost: bool,
    pub http_status: Option<u16>,
    /// Refused as a session before it was, so the client kept the session
    /// (the session-loss rule's guard against loops).
    pub refused_again: bool,
    /// Not routed: the group's catalogue had no tool of its member while
    /// the member was ready.
    pub unlisted_while_ready: bool,
    pub text: String,
}

#[derive(Debug, Default)]
pub struct Ledger {
    trace: Vec<String>,
    pub executions: BTreeMap<u64, u32>,
    pub answers: BTreeMap<u64, Vec<Answer>>,
    pub sessions_created: BTreeMap<&'static str, Vec<Duration>>,
    pub outcomes: Vec<Outcome>,
    /// Establishment stages that started after their establishment's
    /// deadline, or ended after it and the simulator's grain: (server,
    /// attempt, elapsed, started).
    pub late_stages: Vec<(&'static str, u32, Duration, bool)>,
    /// Checked at the end of the client's run.
    pub leaks: Vec<String>,
    pub workload_done: bool,
}

pub type Shared = Arc<Mutex<Ledger>>;

/// Simulated time now (zero outside a simulation).
pub fn now() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

impl Ledger {
    /// One line of the trace, stamped with simulated time.
    pub fn note(&mut self, at: Duration, line: impl std::fmt::Display) {
        self.trace
            .push(format!("{:>9.3}s {line}", at.as_secs_f64()));
    }

    pub fn trace(&self) -> &[String] {
        &self.trace
    }

    /// FNV-1a over the trace: equal for equal traces, on every machine.
    pub fn trace_hash(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for line in &self.trace {
            for byte in line.bytes().chain([b'\n']) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        hash
    }
}

/// Writes one trace line.
pub fn note(ledger: &Shared, line: impl std::fmt::Display) {
    ledger.lock().expect("ledger").note(now(), line);
}
