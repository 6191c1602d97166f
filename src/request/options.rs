//! The request's plain-value options: which transport the caller asks for,
//! what an attempt does differently from the one before, and the limits.

use std::time::Duration;

/// Which transport to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TransportMode {
    /// Pick from the target: for URLs Streamable HTTP, falling back to
    /// HTTP+SSE when `initialize` is refused with 400, 404 or 405; stdio for
    /// commands.
    #[default]
    Auto,
    /// Streamable HTTP only (no HTTP+SSE fallback).
    StreamableHttp,
    /// Legacy HTTP+SSE only (the 2024-11-05 transport): GET the URL, wait for
    /// its `endpoint` event, POST there.
    Sse,
    /// A child process over stdio.
    Stdio,
}

/// What an attempt does differently from the one before it. Chosen by
/// the ladder's plan (`handshake::plan`) when recovery asks for another
/// attempt; never changes the caller's version policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Strategy {
    /// As the request is configured.
    #[default]
    AsConfigured,
    /// `initialize` first, skipping the modern probe (when the policy allows
    /// a legacy version at all).
    InitializeFirst,
    /// Legacy HTTP+SSE (for HTTP targets in auto mode).
    Sse,
}

/// The limits of one establishment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long the modern probe may take.
    pub probe_timeout: Duration,
    /// How long each handshake request (`initialize`, `initialized`) may take.
    pub handshake_timeout: Duration,
    /// How long each request on the established session may take.
    pub request_timeout: Duration,
    /// How long closing a transport may take per step (stdio: after closing
    /// stdin, and again after SIGTERM).
    pub close_grace: Duration,
    /// The largest message (body, SSE event, stdio line) accepted, in bytes.
    pub max_message_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            probe_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            close_grace: crate::transport::DEFAULT_CLOSE_GRACE,
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// How long disposing of a transport may take in all: the stdio close
    /// ladder's three steps (stdin EOF, SIGTERM, SIGKILL), each given the
    /// close grace; saturating, so a grace of `Duration::MAX` is a bound
    /// too.
    pub fn close_bound(&self) -> Duration {
        self.close_grace.saturating_mul(3)
    }

    /// Sets the probe limit.
    #[must_use]
    pub fn with_probe_timeout(mut self, limit: Duration) -> Self {
        self.probe_timeout = limit;
        self
    }

    /// Sets the per-handshake-request limit.
    #[must_use]
    pub fn with_handshake_timeout(mut self, limit: Duration) -> Self {
        self.handshake_timeout = limit;
        self
    }

    /// Sets the per-request limit of the established session.
    #[must_use]
    pub fn with_request_timeout(mut self, limit: Duration) -> Self {
        self.request_timeout = limit;
        self
    }

    /// Sets the per-step close grace.
    #[must_use]
    pub fn with_close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// Sets the largest accepted message in bytes.
    #[must_use]
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }
}
