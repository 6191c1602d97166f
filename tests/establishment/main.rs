//! Establishment against loopback servers: the dual-era ladder, the era cache, HTTP+SSE, stdio, authorization, bad input and how errors read.
//!
//! One test binary for the group, so the library links once for all of
//! them; each file is a module of its own.

#[path = "../support/mod.rs"]
mod support;

mod handshake_ladder;
mod era_cache;
mod legacy_sse;
mod stdio;
mod bad_input;
mod error_display;
mod param_headers;
mod session_ids;
mod authorization;
