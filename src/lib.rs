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
//! The pieces, in the order a request flows:
//! - [`ConnectRequest`]: target, transport mode, [`VersionPolicy`], limits,
//!   deadline, cancellation; cloned for every attempt.
//! - [`Connector`]: the make-service; a fresh transport and handshake per call.
//! - the handshake: the dual-era ladder (see the `handshake` module docs).
//! - [`Session`]: the established, owned session.
//! - [`transport`]: Streamable HTTP over any tower HTTP client, stdio, memory.
//! - [`protocol`]: JSON-RPC envelopes, versions, messages.
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

pub mod auth;
mod clock;
mod connector;
#[cfg(feature = "demo")]
#[cfg_attr(docsrs, doc(cfg(feature = "demo")))]
pub mod demo;
mod era_cache;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod handshake;
pub mod inbound;
mod manager;
mod policy;
pub mod protocol;
mod redact;
pub mod replay;
mod request;
mod session;
pub mod session_loss;
mod stack;
pub mod stage;
mod target;
#[cfg(feature = "testkit")]
#[cfg_attr(docsrs, doc(cfg(feature = "testkit")))]
pub mod testkit;
pub mod transport;
mod uri;

pub use connector::Connector;
pub use era_cache::{EraCache, Verdict};
pub use error::{
    BoxError, ConfigError, Error, ErrorKind, InputRequiredError, PaginationError, ResumeError,
    SubscriptionError, TransportError, VersionError,
};
pub use manager::{ClientError, Generation, McpClient, Reconnect};
pub use mcp_connect_layers as layers;
pub use policy::VersionPolicy;
pub use replay::ReplayPolicy;
pub use request::{ConnectRequest, Limits, TransportMode};
pub use session::{RequestOptions, Session, SessionState, MAX_INPUT_ROUNDS, MAX_PAGES};
pub use session_loss::{session_lost, LossReason};
pub use stack::{Establish, EstablishBuilder, EstablishError};
pub use target::Target;

/// The README's examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
