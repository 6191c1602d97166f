//! What the establishment span records of an establishment's result: the
//! caller reads it from its own types, so this module (shared by the real
//! telemetry and its stand-in without the `otel` feature) names none of
//! them.

use mcp_connect_layers::Failure;

/// What an established session negotiated.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct Established<'a> {
    /// `modern` or `legacy`.
    pub(crate) era: &'static str,
    /// `streamable-http`, `sse` or `stdio`.
    pub(crate) transport: &'static str,
    /// The negotiated protocol version.
    pub(crate) version: &'a str,
}

/// Established, or what failed and after how many attempts (`None`: as
/// many as the stage events counted).
pub(crate) type EstablishOutcome<'a> = Result<Established<'a>, (Failure, Option<u32>)>;
