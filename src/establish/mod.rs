//! Establishment: everything between a [`ConnectRequest`](crate::ConnectRequest)
//! and an owned [`Session`](crate::Session).
//!
//! | part | what it is |
//! |---|---|
//! | [`Connector`] | the make-service: a fresh transport and handshake per call |
//! | [`EstablishBuilder`], [`Establish`], [`EstablishError`] | the connector under the four layers of [`mcp_connect_layers`], erased once (`stack.rs`) |
//! | [`stage`] | MCP's own stage names, and the era signals the recovery layer reads |
//! | `handshake/` | the dual-era ladder on one attempt: plan, open, probe, initialize, judge (crate-private) |
//!
//! The era cache a request may carry is [`era_cache`](crate::era_cache);
//! the request's own time and cancellation context is the request's
//! (`request/clock.rs`). A new transport is opened in `handshake/open.rs`;
//! a new stage of establishment is a step of the ladder there, with its
//! name in [`stage`].

mod connector;
pub(crate) mod handshake;
mod stack;
pub mod stage;

pub use connector::Connector;
pub use stack::{Establish, EstablishBuilder, EstablishError};
