//! Fault-injecting loopback MCP servers, for this crate's tests and for
//! applications that want to test their own handling of broken servers.
//!
//! Enabled by the `testkit` feature. Everything binds `127.0.0.1` on an
//! ephemeral port and stops when dropped.
//!
//! - [`ScriptServer`]: an HTTP server whose every answer is chosen by a
//!   closure over the [`Recorded`] request: a normal reply, any status, body
//!   and content type, an SSE stream, a stall, a connection closed or reset
//!   before the headers or in the middle of a body or stream. It records
//!   every request and counts connections.
//! - [`LegacyServer`]: a ready-made closure for [`ScriptServer`] that behaves
//!   like a 2025 Streamable HTTP server with sessions, and can expire them.
//! - [`SseServer`]: a 2024 HTTP+SSE server with scripted faults.
//! - [`ResumableServer`]: a 2025-11-25 server that cuts its SSE streams
//!   (after N events, by ending or breaking them, with a chosen `retry:`)
//!   and resumes them from `Last-Event-ID`, or refuses to.
//! - [`TokenIssuer`]: an OAuth authorization server that issues ES256 JWT
//!   access tokens (authorization code with PKCE, client credentials,
//!   token exchange, introspection) and mints any token a test asks for.
//! - [`TasksServer`]: a 2026-07-28 server with the Tasks extension whose
//!   tasks run, ask for input, fail or get cancelled as a [`TaskPlan`] says.
//! - [`assert_published_server_json`] (with the `schema` feature): a
//!   registry stub's `server.json` checked against the MCP Registry's
//!   published schema.
//! - the `mcp-connect-stdio-fixture` binary (built with this feature): a
//!   legacy stdio server that exits, stalls or ignores signals on command.
//!
//! ```
//! # async fn run() {
//! use mcp_connect::testkit::{LegacyServer, Script, ScriptServer};
//!
//! let legacy = LegacyServer::new();
//! let responder = legacy.clone();
//! let server = ScriptServer::start(move |request| match request.rpc_method() {
//!     // The first initialize is cut off before any header is sent.
//!     "initialize" if responder.sessions_created() == 0 && request.seq() == 1 => Script::ResetBeforeHeaders,
//!     _ => responder.respond(request),
//! })
//! .await;
//! # drop(server);
//! # }
//! ```

mod auth;
mod http;
mod issuer;
mod legacy;
#[cfg(feature = "schema")]
mod registry;
mod resumable;
mod script;
mod sse;
mod tasks;
#[cfg(feature = "rustls")]
mod tls;

pub use auth::{AutoApprove, NoRedirect};
pub use http::{error, result, Recorded, Script, ScriptServer};
pub use issuer::TokenIssuer;
pub use legacy::{LegacyServer, UnknownSession};
#[cfg(feature = "schema")]
pub use registry::assert_published_server_json;
pub use resumable::{Resumable, ResumableServer};
pub use sse::{SseBehaviour, SseServer};
pub use tasks::{TaskPlan, TasksServer};
#[cfg(feature = "rustls")]
pub use tls::{TlsFixture, TlsFront, TlsServe, TlsServer};
