//! Establishment middleware for [tower](https://docs.rs/tower).
//!
//! Connecting to a remote protocol server is a short pipeline of stages
//! (connect, probe, handshake, ...) that can fail in ways a caller must tell
//! apart: a refused connection may be worth a fresh attempt, an HTTP 401 never
//! is, and a caller's own cancellation must never be reported as a timeout.
//! This crate names those facts once, as plain data ([`Failure`], [`Stage`],
//! [`FailureKind`], [`Closure`], [`CancelSource`]), and builds layers that
//! agree on them without ever reading an error message:
//!
//! - the [`classify`] module's
//!   [`FailureClassifierLayer`](classify::FailureClassifierLayer) decides,
//!   for every error, whether a fresh attempt may follow;
//! - the [`recovery`] module's
//!   [`FreshSessionRecoveryLayer`](recovery::FreshSessionRecoveryLayer)
//!   makes bounded fresh attempts through a make-service;
//! - the [`deadline`] module's [`DeadlineLayer`](deadline::DeadlineLayer)
//!   bounds the whole establishment by one absolute deadline;
//! - the [`diagnostics`] module's
//!   [`LifecycleDiagnosticsLayer`](diagnostics::LifecycleDiagnosticsLayer)
//!   records it, payload-free, through `tracing` and a metrics callback.
//!
//! Nothing here knows any particular protocol. A request type implements
//! [`Establishment`] (and [`Reattempt`] for recovery), its error type
//! implements [`Classify`], and its response type
//! [`ClassifyOutcome`](classify::ClassifyOutcome); a protocol crate does that
//! for its own types and names its own [`Stage`]s. With the `http` feature
//! all of it is done for `http::Request<B>` and `http::Response<B>`, so the
//! four layers drop onto any tower HTTP client (see [`http`]).
//!
//! Every value here is payload-free by construction: stages, kinds, status
//! codes and durations only. None of them can carry a header value, a URL, a
//! body or a server message, so printing them cannot leak one.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]
// A builder whose result is dropped configures nothing: say so.
#![warn(clippy::return_self_not_must_use)]

pub mod classify;
pub mod deadline;
mod decision;
pub mod diagnostics;
mod envelope;
mod failure;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod instant;
pub mod jitter;
mod observe;
mod pause;
pub mod policy;
pub mod recovery;
mod request;
mod stage;

pub use envelope::Envelope;
pub use failure::{CancelSource, Child, Classify, Closure, Failure, FailureKind};
pub use observe::{StageEvent, StageObserver, StageOutcome};
pub use request::{Establishment, Reattempt};
pub use stage::{Phase, Stage, StageInfo};

/// The README's example, compiled as a doctest so it stays true.
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
