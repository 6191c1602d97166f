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
//!   holds at most a set number (a new one past the cap gets 503). With
//!   [`GatewayBuilder::session_clients`] each session has its own members'
//!   sessions, closed with it.
//! - 2026-07-28: `server/discover`, and every request standing alone, its
//!   version in `_meta` and in `MCP-Protocol-Version`, its method in
//!   `Mcp-Method`, its target in `Mcp-Name`, a tool's mirrored arguments
//!   in `Mcp-Param-*` (each error in the specification's order and code).
//! - The group's catalogue as the listings (tools and prompts under their
//!   catalogue names, resources and templates as their servers list them),
//!   and `tools/call`, `prompts/get`, `resources/read`, completions and
//!   the subscriptions routed to the member the catalogue names, its answer
//!   forwarded as it came. A member that is down never hides another's
//!   tools; with no member usable a listing is a JSON-RPC error, never an
//!   empty success.
//! - What a member says toward the client reaches the client that caused
//!   it: a routed request is answered as a stream of events with its
//!   progress, the member's log messages and its own requests (sampling,
//!   elicitation, roots, answered back); cancellation goes the other way.
//!   Streams start with a priming event a broken connection resumes from
//!   (`Last-Event-ID`), and carry keepalive comments when quiet.
//! - DNS-rebinding protection: a `Host` or an `Origin` outside the allowed
//!   ones (loopback by default) gets 403 before anything is read; with
//!   [`GatewayBuilder::bearer_tokens`], a request without one of them 401.
//!   A client's token never reaches a member.
//! - An OAuth 2.1 resource server (feature `oauth`,
//!   `GatewayBuilder::resource_server`): Protected Resource Metadata,
//!   JWTs checked against the issuer's keys or introspected, each request's
//!   [`Principal`], which owns its 2025 sessions; a session's member
//!   clients can act for it by token exchange ([`SessionRelay::caller_token`]).
//! - Who may call what ([`GatewayBuilder::policy`], [`GatewayBuilder::quotas`],
//!   [`GatewayBuilder::audit`]): one gate before every listing and call, in
//!   both eras and over stdio.
//! - The same over stdio ([`Gateway::serve_stdio`]): the connection is the
//!   session, a member's questions lines to the client and back.
//! - Replicas ([`GatewayBuilder::replicas`]): a 2025 session stays on the
//!   replica that opened it, claimed in a shared
//!   [`OwnerStore`](mcp_connect::store::OwnerStore); another replica hands
//!   it the requests that reach it and relays the answers.
//!
//! - Telemetry (feature `otel`, [`GatewayBuilder::telemetry`]): a SERVER
//!   span per request under the client's trace context, the parent of the
//!   member's CLIENT span; `mcp.server.operation.duration` by tool and
//!   member; the open sessions.
//!
//! - A member's questions to a 2026-07-28 client as `input_required`
//!   rounds (`crate::rounds`), -32021 for a capability it did not declare.
//!
//! - `list_changed` when the listings change: on a 2025 session's GET
//!   stream, on a 2026-07-28 `subscriptions/listen` stream.
//!
//! docs/GATEWAY.md says what it does not do yet.
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

mod admission;
mod answer;
mod audit;
#[cfg(feature = "oauth")]
mod auth;
mod body;
mod builder;
mod changes;
mod checks;
mod discovery;
mod downstream;
mod governance;
mod handoff;
mod inner;
mod listen;
mod modern;
mod modern_call;
pub mod policy;
mod principal;
mod quota;
mod relay;
mod replicas;
mod reply;
mod rounds;
mod service;
mod sessions;
mod stdio;
mod streamed;
#[cfg(feature = "otel")]
mod telemetry;

pub use audit::{AuditRecord, AuditSink, JsonLines, Outcome};
#[cfg(feature = "oauth")]
pub use auth::{FetchError, ResourceServer, TokenRefused};
pub use body::ReplyBody;
pub use builder::GatewayBuilder;
pub use checks::Allowed;
pub use principal::Principal;
pub use quota::{QuotaDecision, Quotas};
pub use relay::SessionRelay;
pub use service::{Gateway, ResponseFuture};
pub use stdio::IN_FLIGHT as STDIO_IN_FLIGHT;
#[cfg(feature = "otel")]
pub use telemetry::{ServerTelemetry, OPERATION_DURATION, SESSIONS};

/// Makes a 2025 session's own client of one member (see
/// [`GatewayBuilder::session_clients`]).
pub type SessionClients =
    std::sync::Arc<dyn Fn(&str, SessionRelay) -> Option<mcp_connect::McpClient> + Send + Sync>;
