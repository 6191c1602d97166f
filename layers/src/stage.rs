//! Where something happened: an open set of named stages.
//!
//! A protocol client defines the stages of its own establishment (a version
//! probe, a handshake, a side-channel that must open first, ...). This crate
//! cannot list them all, so a [`Stage`] is a name plus the [`Phase`] it
//! belongs to: policies reason about phases ("was this while establishing?"),
//! people and logs read names. The constants here are the neutral ones every
//! client shares; a protocol crate adds its own with [`Stage::new`].

use std::fmt;

/// The part of a connection's life a stage belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Checking the configuration; nothing has been sent.
    Configure,
    /// Opening the connection and running the handshake.
    Establish,
    /// Using an established connection or session.
    Session,
    /// Ending it.
    Close,
}

/// What a stage is: its name and phase. [`Stage`] refers to one of these,
/// so that errors carrying a stage stay a pointer wide.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StageInfo {
    /// A stable, lower-case name for logs and machine-readable output.
    pub name: &'static str,
    /// The phase it belongs to.
    pub phase: Phase,
}

/// A named stage and its [`Phase`]. Two stages are equal when both match.
///
/// ```
/// use mcp_connect_layers::{Phase, Stage, StageInfo};
///
/// // A protocol crate's own stage: a version probe before the handshake.
/// const PROBE: Stage = Stage::new(&StageInfo { name: "probe", phase: Phase::Establish });
/// assert_eq!(PROBE.to_string(), "probe");
/// assert!(PROBE.is_establishing());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stage(&'static StageInfo);

macro_rules! neutral {
    ($name:literal, $phase:ident) => {
        Stage::new(&StageInfo {
            name: $name,
            phase: Phase::$phase,
        })
    };
}

impl Stage {
    /// Checking the configuration before any I/O.
    pub const CONFIGURE: Stage = neutral!("configure", Configure);
    /// Opening the transport: TCP and TLS connect, spawning a process.
    pub const CONNECT: Stage = neutral!("connect", Establish);
    /// Opening a side channel or finding an endpoint before the handshake.
    pub const DISCOVER: Stage = neutral!("discover", Establish);
    /// The handshake request.
    pub const HANDSHAKE: Stage = neutral!("handshake", Establish);
    /// The handshake's acknowledgement.
    pub const ACKNOWLEDGE: Stage = neutral!("acknowledge", Establish);
    /// One request: on an established session, or a plain request/response
    /// exchange such as an HTTP call.
    pub const REQUEST: Stage = neutral!("request", Session);
    /// Closing a session or transport.
    pub const CLOSE: Stage = neutral!("close", Close);

    /// A stage of its own (see the type's example).
    pub const fn new(info: &'static StageInfo) -> Stage {
        Stage(info)
    }

    /// The name.
    pub const fn as_str(self) -> &'static str {
        self.0.name
    }

    /// The phase.
    pub const fn phase(self) -> Phase {
        self.0.phase
    }

    /// Whether it belongs to establishment.
    pub fn is_establishing(self) -> bool {
        self.0.phase == Phase::Establish
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}
