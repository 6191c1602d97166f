//! Establishment against loopback servers: the dual-era ladder, the era cache, HTTP+SSE, stdio, authorization, bad input and how errors read.
//!
//! One test binary for the group, so the library links once for all of
//! them; each file is a module of its own.

#[path = "../support/mod.rs"]
mod support;

mod authorization;
mod bad_input;
mod connector_seam;
mod dpop;
mod era_cache;
mod error_display;
mod handshake_ladder;
mod jwt_bearer;
mod legacy_sse;
mod param_headers;
#[cfg(feature = "rustls")]
mod proxy;
mod redirects;
mod session_ids;
mod shared_refresh;
mod stdio;
#[cfg(feature = "rustls")]
mod tls;
mod unix_socket;
