//! Reliable connection establishment to MCP servers of every era.
//!
//! Services talk to MCP servers of every age: 2026 stateless servers that
//! answer `server/discover`, 2025 servers that need `initialize` and a
//! session, stdio servers that exit on the first unknown request, proxies
//! that answer plain-text 400s. `mcp-connect` owns the state machine that
//! gets a usable [`Session`] out of all of them, as a [`tower::Service`]
//! (the [`Connector`]) that the layers of [`mcp_connect_layers`] wrap.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_connect::Error> {
//! use mcp_connect::{ConnectRequest, Connector};
//!
//! let connector = Connector::new();
//! let session = connector
//!     .connect(ConnectRequest::http("http://127.0.0.1:3000/mcp")?)
//!     .await?;
//! println!("{} {}", session.era(), session.protocol_version());
//! let tools = session.list_tools().await?;
//! # drop(tools);
//! session.close().await?;
//! # Ok(()) }
//! ```
//!
//! The root holds what most programs name; everything else is grouped by
//! what it is about:
//!
//! | at the root | what it is |
//! |---|---|
//! | [`ConnectRequest`] | one establishment: target, transport, versions, limits, deadline |
//! | [`Connector`] | the make-service: a fresh transport and handshake per call |
//! | [`EstablishBuilder`], [`Establish`], [`EstablishError`] | the connector under the four layers |
//! | [`Session`] | one established, owned session |
//! | [`McpClient`] | a long-lived client that replaces a lost session |
//! | [`Error`], [`ErrorKind`] | every failure, classified |
//! | [`layers`] | the protocol-free tower layers (`mcp-connect-layers`) |
//!
//! | module | what it holds |
//! |---|---|
//! | [`request`] | the request's parts: [`Target`](request::Target), [`Limits`](request::Limits), [`TransportMode`](request::TransportMode), [`VersionPolicy`](request::VersionPolicy) |
//! | [`protocol`] | JSON-RPC envelopes, versions, messages, and the requests every facade sends ([`McpRequest`](protocol::McpRequest): [`CallTool`](protocol::CallTool), [`ListTools`](protocol::ListTools), ...) |
//! | [`session`] | a request with its options ([`Call`](session::Call)), session state, paging limits |
//! | [`client`] | the long-lived client's builder, errors, generations, call policies, [`session_loss`](client::session_loss) and the opt-in [`replay`](client::replay) |
//! | [`establish`] | the connector, the stack of layers over it, MCP's [`stage`](establish::stage)s |
//! | [`config`] | the `mcpServers` file hosts share, read into requests |
//! | [`group`] | many servers as one: a catalogue, health, routed calls |
//! | [`error`] | the error kinds' own types; [`report`](error::report): any error printed whole in one call, and the server's message |
//! | [`era_cache`] | what each server spoke, to skip the ladder next time |
//! | [`response_cache`] | the 2026-07-28 results a server said may be reused (SEP-2549) |
//! | [`store`] | where tokens, eras, listings and responses are kept: in memory, in files, in Redis |
//! | [`auth`] | OAuth 2.1 authorization |
//! | [`inbound`] | server requests and notifications: handlers, listeners |
//! | [`transport`] | Streamable HTTP, HTTP+SSE, stdio, memory; the HTTP client |
//! | [`extensions`] | the official extensions: tasks, skills |
// One `unsafe` block in the crate, allowed where it is: the stdio child's
// `pre_exec` (transport/stdio), which only makes two system calls.
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]
// A builder whose result is dropped configures nothing: say so.
#![warn(clippy::return_self_not_must_use)]

pub mod auth;
pub mod client;
pub mod config;
#[cfg(feature = "demo")]
#[cfg_attr(docsrs, doc(cfg(feature = "demo")))]
pub mod demo;
pub mod era_cache;
pub mod error;
pub mod establish;
pub mod extensions;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod group;
pub mod inbound;
pub mod protocol;
#[cfg(feature = "registry")]
#[cfg_attr(docsrs, doc(cfg(feature = "registry")))]
pub mod registry;
pub mod request;
pub mod response_cache;
pub mod session;
pub mod store;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod telemetry;
#[cfg(not(feature = "otel"))]
#[path = "telemetry/off.rs"]
mod telemetry;
#[cfg(feature = "testkit")]
#[cfg_attr(docsrs, doc(cfg(feature = "testkit")))]
pub mod testkit;
pub mod transport;

pub use client::McpClient;
pub use error::{Error, ErrorKind};
pub use establish::{Connector, Establish, EstablishBuilder, EstablishError};
pub use mcp_connect_layers as layers;
pub use request::ConnectRequest;
pub use session::Session;

/// The README's examples, compiled as doctests so they stay true (and run
/// by `examples/docs.rs`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// docs/LIBRARY.md's examples, compiled as doctests so they stay true (and
/// run by `examples/docs.rs`).
#[cfg(doctest)]
#[doc = include_str!("../docs/LIBRARY.md")]
pub struct LibraryDoctests;
