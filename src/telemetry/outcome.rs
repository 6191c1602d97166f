//! What callers hand telemetry, read from their own types: which server
//! (every span and metric names it) and what an establishment's result
//! says. This module is shared by the real telemetry and its stand-in
//! without the `otel` feature, and names none of the callers' types.

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

/// Which server a span or metric is about.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct Peer<'a> {
    /// The application's name for it (a group member's name; by default
    /// the URL without secrets, or the stdio program).
    pub(crate) name: &'a str,
    /// Its URL, for an HTTP server.
    pub(crate) http: Option<&'a http::Uri>,
    /// The program's file name, for a stdio server.
    pub(crate) program: Option<&'a str>,
}

impl Peer<'_> {
    /// The same facts, owned (for a caller that moves what they borrow
    /// from).
    pub(crate) fn owned(self) -> OwnedPeer {
        OwnedPeer {
            name: self.name.to_owned(),
            http: self.http.cloned(),
            program: self.program.map(str::to_owned),
        }
    }
}

/// A [`Peer`]'s facts, owned.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct OwnedPeer {
    name: String,
    http: Option<http::Uri>,
    program: Option<String>,
}

impl OwnedPeer {
    /// Borrowed again.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) fn borrowed(&self) -> Peer<'_> {
        Peer {
            name: &self.name,
            http: self.http.as_ref(),
            program: self.program.as_deref(),
        }
    }
}
