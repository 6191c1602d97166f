//! Every fault of one run, drawn from its seed: the network's (partitions,
//! held links, latency), the servers' lives (killed, restarted with every
//! session gone) and each answer a server gives an `initialize` or a
//! `tools/call`.

use std::time::Duration;

/// SplitMix64: small, fast, and the same numbers on every machine.
#[derive(Clone, Debug)]
pub struct Draw(u64);

impl Draw {
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut draw = Draw(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        draw.next();
        draw
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A duration in `low..high` milliseconds.
    pub fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(low + self.below(high - low))
    }
}

/// What the network and the servers' lives do at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The link between the client and the server drops everything.
    Partition(&'static str),
    /// Traffic on the link is held (delivered on release).
    Hold(&'static str),
    /// The link delivers again (after a partition or a hold).
    Heal(&'static str),
    /// Every message on the link takes up to this long.
    Latency(&'static str, Duration),
    /// The server's process dies: its connections and sessions are gone.
    Kill(&'static str),
    /// The server starts again, knowing no session.
    Restart(&'static str),
}

/// The network and life events of one run, in time order. Each faulty
/// server gets a few episodes (a partition, a held link, a slow link, a
/// kill) within `window`, each healed after at most ten seconds; by the end
/// of `window` every link is healed and every server runs.
pub fn schedule(
    draw: &mut Draw,
    servers: &[&'static str],
    window: Duration,
) -> Vec<(Duration, Action)> {
    let mut events = Vec::new();
    let end = window.as_millis() as u64;
    for &server in servers {
        for _ in 0..draw.below(4) {
            let start = draw.millis(0, end - 10_000);
            let length = draw.millis(200, 10_000);
            let (begin, heal) = match draw.below(4) {
                0 => (Action::Partition(server), Action::Heal(server)),
                1 => (Action::Hold(server), Action::Heal(server)),
                2 => (
                    Action::Latency(server, draw.millis(50, 3_000)),
                    Action::Latency(server, Duration::from_millis(1)),
                ),
                _ => (Action::Kill(server), Action::Restart(server)),
            };
            events.push((start, begin));
            events.push((start + length, heal));
        }
    }
    // Stable: two events at one instant keep their drawn order.
    events.sort_by_key(|(at, _)| *at);
    events
}

/// How a server answers one `tools/call` on a session it knows.
pub fn answer(draw: &mut Draw) -> Planned {
    match draw.below(100) {
        0..=59 => Planned::Execute { tool_error: false },
        60..=67 => Planned::Execute { tool_error: true },
        68..=71 => Planned::Status(500),
        72..=74 => Planned::Status(503),
        75..=77 => Planned::Status(429),
        78..=79 => Planned::Status(400),
        80..=84 => Planned::Slow(draw.millis(100, 2_500)),
        85..=86 => Planned::Stall,
        87..=89 => Planned::DropAfter,
        90..=91 => Planned::DropBefore,
        92..=94 => Planned::ForgetSessions,
        _ => Planned::Execute { tool_error: false },
    }
}

/// A server's plan for one `tools/call`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planned {
    Execute {
        tool_error: bool,
    },
    /// An HTTP status with a JSON-RPC error naming the request.
    Status(u16),
    /// Executed after this delay.
    Slow(Duration),
    Stall,
    DropAfter,
    DropBefore,
    /// Forget every session (as a restart would), then answer this
    /// request as stale.
    ForgetSessions,
}

/// How a faulty server answers one `initialize`.
pub fn opening(draw: &mut Draw) -> Opening {
    match draw.below(100) {
        0..=69 => Opening::Open,
        70..=84 => Opening::Drop(draw.millis(0, 3_500)),
        85..=94 => Opening::Slow(draw.millis(300, 6_000)),
        _ => Opening::Stall,
    }
}

/// A server's plan for one `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    Open,
    /// The connection is dropped unanswered after this delay (a late
    /// failure leaves later attempts little of the deadline).
    Drop(Duration),
    /// Opened after this delay.
    Slow(Duration),
    Stall,
}
