//! What a run injects and what the application must then see: the oracle.
//!
//! The expectations are written from the documented rules (README, the
//! guarantees G3, G4, G15 and G16), not read back from the library: a
//! transport failure while establishing is recovered on a fresh transport,
//! and so is an answer to `initialize` that may mean another era (HTTP 400,
//! 404 or 405, or a JSON-RPC error: the era signals of `EraSignals`); auth,
//! throttling, other statuses and malformed answers are not; on an
//! established session a transport failure or a 404 for the
//! session loses the session (the next call gets a new one) and everything
//! else leaves it; a stalled request ends at its own timeout.

use mcp_connect::layers::FailureKind;

use crate::rng::Rng;

/// The transport a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP, 2025-11-25, sessions (testkit `LegacyServer`).
    Http,
    /// HTTP+SSE, 2024-11-05 (testkit `SseServer`).
    Sse,
    /// A stdio child process (the testkit fixture).
    Stdio,
}

/// Where the fault goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// Nowhere: a healthy run.
    Nowhere,
    /// The first `initialize`.
    Initialize,
    /// The first `notifications/initialized`.
    Initialized,
    /// The first `tools/call`.
    Call,
    /// The `DELETE` that ends the session.
    Close,
}

/// What is injected, once (HTTP) or into the first process (stdio), or
/// for the whole server (SSE, whose testkit has per-server faults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    CloseBeforeHeaders,
    ResetBeforeHeaders,
    BreakMidBody,
    BreakMidSse,
    Stall,
    Status(u16),
    Garbage,
    RpcError,
    SessionExpiry,
    /// The server forgets every session, as a restart does, and answers
    /// the old one with 400 and a JSON-RPC error without id (the
    /// TypeScript SDK v1 examples, server-everything).
    SessionRestart,
    /// 400 with a JSON-RPC error naming the request: a handler's refusal.
    RefusedWithId,
    Slow,
    ChildExit,
}

/// One run's plan.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub transport: Transport,
    pub place: Where,
    pub fault: Fault,
    /// Whether the client may replay provably undelivered calls.
    pub replay: bool,
}

/// What one call must end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Success, on this session generation.
    Ok { generation: u64 },
    /// The establishment fails with one of these kinds.
    NoSession(&'static [FailureKind]),
    /// After an establishment failed on a one-time fault: the client is
    /// still cooling down (with that failure), or the cool-down (full
    /// jitter, so possibly a few milliseconds) has passed and a new
    /// establishment made the first session.
    CoolingDownOrOk(&'static [FailureKind]),
    /// The call fails with one of these kinds; `lost` says whether the
    /// session died with it.
    Fails {
        kinds: &'static [FailureKind],
        lost: bool,
    },
}

const TRANSPORT_BROKE: &[FailureKind] = &[FailureKind::Closed, FailureKind::Io];

const STATUSES: &[u16] = &[400, 401, 403, 429, 500, 502, 503];

impl Plan {
    /// A plan drawn from `rng`.
    pub fn draw(rng: &mut Rng) -> Plan {
        let replay = rng.below(2) == 0;
        let transport = match rng.below(10) {
            0..=6 => Transport::Http,
            7 => Transport::Sse,
            _ => Transport::Stdio,
        };
        let (place, fault) = match transport {
            Transport::Http => {
                let place = match rng.below(9) {
                    0 => Where::Nowhere,
                    1..=3 => Where::Initialize,
                    4 => Where::Initialized,
                    5..=7 => Where::Call,
                    _ => Where::Close,
                };
                let fault = match place {
                    Where::Nowhere => Fault::None,
                    Where::Initialized => pick(
                        rng,
                        &[
                            Fault::CloseBeforeHeaders,
                            Fault::ResetBeforeHeaders,
                            Fault::Stall,
                            Fault::Slow,
                        ],
                    ),
                    Where::Close => pick(
                        rng,
                        &[
                            Fault::ResetBeforeHeaders,
                            Fault::Stall,
                            Fault::Status(500),
                            Fault::Slow,
                        ],
                    ),
                    Where::Initialize | Where::Call => {
                        let mut faults = vec![
                            Fault::CloseBeforeHeaders,
                            Fault::ResetBeforeHeaders,
                            Fault::BreakMidBody,
                            Fault::BreakMidSse,
                            Fault::Stall,
                            Fault::Status(pick(rng, STATUSES)),
                            Fault::Garbage,
                            Fault::RpcError,
                            Fault::Slow,
                        ];
                        if place == Where::Call {
                            faults.extend([
                                Fault::SessionExpiry,
                                Fault::SessionRestart,
                                Fault::RefusedWithId,
                            ]);
                        }
                        pick(rng, &faults)
                    }
                };
                (place, fault)
            }
            Transport::Sse => pick(
                rng,
                &[
                    (Where::Nowhere, Fault::None),
                    (Where::Initialize, Fault::Stall),
                    (Where::Call, Fault::CloseBeforeHeaders),
                ],
            ),
            Transport::Stdio => pick(
                rng,
                &[
                    (Where::Nowhere, Fault::None),
                    (Where::Initialize, Fault::ChildExit),
                    (Where::Initialize, Fault::Stall),
                    (Where::Call, Fault::ChildExit),
                    (Where::Call, Fault::Stall),
                ],
            ),
        };
        Plan {
            transport,
            place,
            fault,
            replay,
        }
    }

    /// A short, payload-free name: `http/call/status-503`.
    pub fn name(&self) -> String {
        let fault = match self.fault {
            Fault::Status(code) => format!("status-{code}"),
            other => format!("{other:?}").to_lowercase(),
        };
        format!(
            "{:?}/{:?}/{fault}{}",
            self.transport,
            self.place,
            if self.replay { "/replay" } else { "" }
        )
        .to_lowercase()
    }

    /// What the first and the second call must end in.
    pub fn expect(&self) -> [Expect; 2] {
        use FailureKind as K;
        let healthy = [Expect::Ok { generation: 1 }, Expect::Ok { generation: 1 }];
        match (self.transport, self.place, self.fault) {
            (_, Where::Nowhere | Where::Close, _) => healthy,
            (_, _, Fault::Slow) => healthy,
            // Establishment: a broken transport or a stalled handshake is
            // recovered on a fresh one; the rest is the server's answer.
            (Transport::Http, Where::Initialize | Where::Initialized, fault) => match fault {
                Fault::CloseBeforeHeaders
                | Fault::ResetBeforeHeaders
                | Fault::BreakMidBody
                | Fault::BreakMidSse
                | Fault::Stall
                | Fault::Status(400)
                | Fault::RpcError => healthy,
                Fault::Status(401 | 403) => no_session(&[K::Auth]),
                Fault::Status(429) => no_session(&[K::Throttled]),
                Fault::Status(_) => no_session(&[K::HttpStatus]),
                Fault::Garbage => no_session(&[K::Protocol]),
                _ => unreachable!("not drawn: {self:?}"),
            },
            (Transport::Http, Where::Call, fault) => {
                let stays = |kinds| {
                    [
                        Expect::Fails { kinds, lost: false },
                        Expect::Ok { generation: 1 },
                    ]
                };
                match fault {
                    Fault::CloseBeforeHeaders
                    | Fault::ResetBeforeHeaders
                    | Fault::BreakMidBody
                    | Fault::BreakMidSse => lost(TRANSPORT_BROKE),
                    Fault::SessionExpiry | Fault::SessionRestart if self.replay => {
                        [Expect::Ok { generation: 2 }, Expect::Ok { generation: 2 }]
                    }
                    Fault::SessionExpiry => lost(&[K::Closed]),
                    Fault::SessionRestart => lost(&[K::Rpc]),
                    Fault::RefusedWithId => stays(&[K::Rpc]),
                    Fault::Stall => stays(&[K::Timeout]),
                    Fault::Status(401 | 403) => stays(&[K::Auth]),
                    Fault::Status(429) => stays(&[K::Throttled]),
                    Fault::Status(_) => stays(&[K::HttpStatus]),
                    Fault::Garbage => stays(&[K::Protocol]),
                    Fault::RpcError => stays(&[K::Rpc]),
                    _ => unreachable!("not drawn: {self:?}"),
                }
            }
            // SSE faults hold for the whole server.
            // The SSE server stalls every initialize: no session, ever.
            (Transport::Sse, Where::Initialize, Fault::Stall) => [
                Expect::NoSession(&[K::Timeout]),
                Expect::NoSession(&[K::Timeout]),
            ],
            (Transport::Sse, Where::Call, _) => [
                Expect::Fails {
                    kinds: TRANSPORT_BROKE,
                    lost: true,
                },
                Expect::Fails {
                    kinds: TRANSPORT_BROKE,
                    lost: true,
                },
            ],
            // Stdio faults hold for the first process only.
            (Transport::Stdio, Where::Initialize, _) => healthy,
            (Transport::Stdio, Where::Call, Fault::ChildExit) => lost(TRANSPORT_BROKE),
            (Transport::Stdio, Where::Call, Fault::Stall) => [
                Expect::Fails {
                    kinds: &[K::Timeout],
                    lost: false,
                },
                Expect::Fails {
                    kinds: &[K::Timeout],
                    lost: false,
                },
            ],
            _ => unreachable!("not drawn: {self:?}"),
        }
    }
}

/// A one-time fault that fails the establishment: the first call fails;
/// the second finds the client cooling down or establishes anew.
fn no_session(kinds: &'static [FailureKind]) -> [Expect; 2] {
    [Expect::NoSession(kinds), Expect::CoolingDownOrOk(kinds)]
}

/// The first call fails and loses the session; the second gets a new one.
fn lost(kinds: &'static [FailureKind]) -> [Expect; 2] {
    [
        Expect::Fails { kinds, lost: true },
        Expect::Ok { generation: 2 },
    ]
}

fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[rng.below(items.len() as u64) as usize]
}
