//! Official MCP extensions a client takes part in, negotiated under
//! `capabilities.extensions`: their types and the checks they require,
//! and their requests (`ListSkills`, [`tasks::TaskCall`], ...),
//! which every facade's `send` takes like any other, so an extension adds
//! no transport, handshake or session state.
//!
//! Authorization extensions (DPoP, workload identity, enterprise-managed
//! authorization) are part of [`auth`](crate::auth), where the flow they
//! change lives.

#[cfg(feature = "skills")]
#[cfg_attr(docsrs, doc(cfg(feature = "skills")))]
pub mod skills;
pub mod tasks;
