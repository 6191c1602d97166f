//! A [`ServerGroup`](mcp_connect::group::ServerGroup) served as one MCP
//! server over Streamable HTTP: a [`tower_service::Service`] over
//! [`http::Request`] that any Rust HTTP server mounts (hyper, axum, ...).
//!
//! The client half (establishment to servers of every era, the group's
//! names, health, policies and reloads) is `mcp-connect`'s; this crate is
//! the server half, and depends on the library, never the reverse.
//!
//! What it serves, in both eras on one endpoint:
//!
//! - 2025-11-25 and earlier: `initialize` opens a session (`Mcp-Session-Id`,
//!   128 random bits), every later request names it, `DELETE` ends it; a
//!   session idle for longer than its bound is gone (404), and the table
//!   holds at most a set number (a new one past the cap gets 503).
//! - 2026-07-28: `server/discover`, and every request standing alone, its
//!   version in `_meta` and in `MCP-Protocol-Version`, its method in
//!   `Mcp-Method` (a mismatch is 400 with `-32020`).
//! - The group's catalogue as the listings (tools and prompts under their
//!   catalogue names, resources and templates as their servers list them),
//!   and `tools/call`, `prompts/get`, `resources/read` and the
//!   subscriptions routed to the member the catalogue names, its answer
//!   forwarded as it came. A member that is down never hides another's
//!   tools; with no member usable a listing is a JSON-RPC error, never an
//!   empty success.
//! - DNS-rebinding protection: a `Host` or an `Origin` outside the allowed
//!   ones (loopback by default) gets 403 before anything is read; with
//!   [`GatewayBuilder::bearer_tokens`], a request without one of them 401.
//!   A client's token never reaches a member.
//! - The same over stdio ([`Gateway::serve_stdio`]): the connection is the
//!   session.
//!
//! Not yet (issue 66 goes on): answers as SSE streams, the standalone GET
//! stream (GET is 405, which the specification allows), server-to-client
//! requests and notifications relayed downstream, cancellation and
//! progress end to end, sessions shared by replicas.
//!
//! ```no_run
//! # async fn run(group: mcp_connect::group::ServerGroup) {
//! use mcp_connect_gateway::Gateway;
//! use std::time::Duration;
//!
//! let gateway = Gateway::builder(group)
//!     .session_idle_timeout(Duration::from_secs(600))
//!     .max_sessions(10_000)
//!     .build();
//! // `gateway` is a tower Service<http::Request<B>>: mount it at `/mcp`.
//! # drop(gateway); }
//! ```

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod answer;
mod body;
mod builder;
mod checks;
mod downstream;
mod inner;
mod modern;
mod relay;
mod reply;
mod service;
mod sessions;
mod stdio;
mod streamed;

pub use body::ReplyBody;
pub use builder::GatewayBuilder;
pub use checks::Allowed;
pub use relay::SessionRelay;
pub use service::{Gateway, ResponseFuture};
pub use stdio::IN_FLIGHT as STDIO_IN_FLIGHT;

/// Makes a 2025 session's own client of one member (see
/// [`GatewayBuilder::session_clients`]).
pub type SessionClients =
    std::sync::Arc<dyn Fn(&str, SessionRelay) -> Option<mcp_connect::McpClient> + Send + Sync>;
