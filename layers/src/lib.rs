//! Establishment middleware for [tower](https://docs.rs/tower): the vocabulary every layer speaks.
//!
//! Connecting to a remote protocol server is a short pipeline of stages
//! (connect, probe, handshake, ...) that can fail in ways a caller must tell
//! apart: a refused connection may be worth a fresh attempt, an HTTP 401 never
//! is, and a caller's own cancellation must never be reported as a timeout.
//! This crate names those facts once, as plain data ([`Failure`], [`Stage`],
//! [`FailureKind`], [`Closure`], [`CancelSource`]), so that classification,
//! recovery and diagnostics can be separate layers that agree on what
//! happened without ever reading an error message.
//!
//! Nothing here knows about MCP: the root crate `mcp-connect` implements
//! [`Classify`] for its own error type. Any other protocol client can do the
//! same.
//!
//! Every value here is payload-free by construction: stages, kinds, status
//! codes and durations only. None of them can carry a header value, a URL, a
//! body or a server message, so printing them cannot leak one.
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

mod failure;
mod observe;

pub use failure::{CancelSource, Classify, Closure, Failure, FailureKind, Stage};
pub use observe::{StageEvent, StageObserver, StageOutcome};
