//! Established sessions: requests, server traffic, streams and subscriptions, multi-round-trip results, session loss and the opt-in replay.
//!
//! One test binary for the group, so the library links once for all of
//! them; each file is a module of its own.

#[path = "../support/mod.rs"]
mod support;

mod group;
mod multi_round_trip;
mod policies;
mod remembered_discover;
mod replay;
mod response_cache;
mod resumable_streams;
mod server_stream;
mod server_traffic;
mod session;
mod session_loss;
#[cfg(feature = "skills")]
mod skills;
mod subscriptions_listen;
mod tasks;
#[cfg(feature = "otel")]
mod telemetry;
