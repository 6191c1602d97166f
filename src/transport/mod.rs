//! Transports: how JSON-RPC messages reach a server and come back.
//!
//! The [`Transport`] trait is request-shaped (send a request, get its reply;
//! send a notification; close) rather than a raw duplex pipe. That is a
//! deliberate difference from SDKs that model every transport as a stream of
//! messages: Streamable HTTP is request/response by nature, and modelling it
//! as a pipe costs a task and a channel per session to re-join each reply to
//! its request. Here an HTTP request simply awaits its own POST; only the
//! duplex transports (stdio, in-memory) run a reader task, and they do the
//! id matching there.
//!
//! What arrives that is not a message for anyone follows one rule on every
//! transport: a line or SSE event that is not a JSON-RPC message (not
//! JSON, not UTF-8, not JSON-RPC) is skipped (a whole HTTP JSON body that
//! is not one is [`TransportError::Malformed`], since nothing else can
//! come on it); a reply naming an id no
//! request is waiting for is dropped, and the request it came beside keeps
//! waiting for its own (bounded by its timeout, and over HTTP by the end of
//! its own reply body or stream, which without a reply is
//! [`TransportError::NoReply`]); an error without an id answers the one
//! waiting request, or is dropped when several wait. Each skipped or
//! dropped message is counted ([`TransportStats::skipped`]) with one debug
//! event that names what it was, never its bytes. A batch (a JSON array)
//! is taken message by message on every transport.
//!
//! Server-initiated requests and notifications, wherever they arrive (a
//! POST reply stream, the legacy SSE stream, a child's stdout), go to the
//! connection's [`Inbound`](crate::inbound) seam: the application's handler
//! answers requests (`ping` always, `-32601` for what it does not take) and
//! its listener gets notifications.

mod chain;
mod connect_error;
pub(crate) mod error;
mod http_client;
mod http_shared;
mod legacy_sse;
mod lines;
mod mcp_headers;
#[cfg(any(test, feature = "testkit"))]
mod memory;
pub(crate) mod origin;
mod proxy;
pub(crate) mod redact;
mod redirect;
pub mod resume;
mod server_stream;
mod sse;
mod stdio;
mod streamable_http;
/// Public as [`crate::request::Target`], where requests name it.
pub(crate) mod target;
#[cfg(feature = "rustls")]
mod tls_alerts;
#[cfg(feature = "rustls")]
pub(crate) mod tls_config;
mod unix_socket;
mod waiters;

use std::fmt;

use futures_util::future::BoxFuture;
use mcp_connect_layers::Closure;
use serde_json::value::RawValue;

#[cfg(feature = "rustls")]
pub use connect_error::tls_problem;
pub use connect_error::{DnsError, TcpConnectError, TlsError, TlsProblem};
pub use error::{MissingProgram, RedirectReason, RedirectRefused};
pub(crate) use http_client::{send_with, Credentials, Presented};
pub use http_client::{HttpBody, HttpClient, HttpClientBuilder};
pub use legacy_sse::LegacySse;
#[cfg(any(test, feature = "testkit"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testkit")))]
pub use memory::MemoryTransport;
pub use proxy::{Proxy, ProxyConfigError, ProxyError, ProxyUrlProblem};
pub use redirect::RedirectPolicy;
pub use server_stream::ServerStream;
pub use sse::SseTooLarge;
pub use stdio::{guardian, kill_server_groups, StdioCommand, StdioTransport};
pub use streamable_http::StreamableHttp;
#[cfg(feature = "rustls")]
pub use tls_alerts::ClientCertificateRefused;
#[cfg(feature = "rustls")]
pub use tls_config::TlsConfigError;
pub use unix_socket::UnixSocketError;

pub(crate) use http_shared::exchange;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use http_shared::retry_after;
pub(crate) use sse::SseParser;

use crate::protocol::{Notification, ProtocolVersion, Request, RpcError};
use error::TransportError;

/// What keeps [`Transport`] the crate's own.
pub(crate) mod sealed {
    /// Implemented by the crate's transports only.
    pub trait Sealed {}
}

/// How long closing a transport may take per step unless told otherwise
/// (the default of [`Limits::close_grace`](crate::request::Limits::close_grace)).
pub(crate) const DEFAULT_CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The reply to one request: its raw `result`, or the server's error.
pub type Reply = Result<Box<RawValue>, RpcError>;

/// What sending a `subscriptions/listen` request gave (2026-07-28 era).
#[derive(Debug)]
#[non_exhaustive]
pub enum Listen {
    /// Its reply stream (Streamable HTTP): the acknowledgement and the
    /// notifications, until the server ends it or the stream is dropped.
    Stream(Box<ServerStream>),
    /// A reply at once instead of a stream: a refusal, or an empty
    /// subscription the server ended immediately.
    Reply(Reply),
    /// Nothing was sent: this transport carries everything on one channel
    /// (stdio, memory), so the request goes through
    /// [`Transport::request`] and stays pending while the subscription
    /// lives; what the server sends for it reaches the inbound seam.
    Shared,
}

/// Which kind of transport carries a session: the one type that names a
/// transport inside the crate (the ladder's plan, the opener, the era
/// cache). [`TransportMode`](crate::request::TransportMode) is the caller's request,
/// which may leave the choice to the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TransportKind {
    /// Streamable HTTP (2025-03-26 and later).
    StreamableHttp,
    /// Legacy HTTP+SSE (2024-11-05).
    Sse,
    /// A child process speaking over stdin/stdout.
    Stdio,
    /// An in-process duplex stream (tests).
    Memory,
}

impl TransportKind {
    /// `"streamable-http"`, `"sse"`, `"stdio"` or `"memory"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::StreamableHttp => "streamable-http",
            TransportKind::Sse => "sse",
            TransportKind::Stdio => "stdio",
            TransportKind::Memory => "memory",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Carries JSON-RPC messages to one server and back.
///
/// `version` is the protocol version the message is sent under, when one is
/// known: HTTP transports turn it into the `MCP-Protocol-Version` header and,
/// for modern versions, the `Mcp-Method` and `Mcp-Name` routing headers.
///
/// Sealed: the crate's four transports are the only ones. A session's
/// guarantees (one closure, first wins; a refusal told apart from a loss by
/// whether the request carried a session id; replies matched to their
/// request; a child reaped) are kept by each transport together with the
/// handshake and the session's steps, so a transport from outside could not
/// be held to them, and the trait is free to change with them. An
/// application reaches a concrete transport's own methods through
/// [`Session::transport_as`](crate::Session::transport_as); a server
/// reached some other way (an in-process pipe) is the stdio transport's
/// program, or the memory transport (`testkit`).
pub trait Transport: sealed::Sealed + std::any::Any + Send + Sync + fmt::Debug {
    /// Sends a request and waits for its reply.
    fn request<'a>(
        &'a self,
        request: &'a Request,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<Reply, TransportError>>;

    /// Sends a notification.
    fn notify<'a>(
        &'a self,
        notification: &'a Notification,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Sends a response to a server-initiated request (the bytes of a
    /// JSON-RPC response).
    fn respond<'a>(
        &'a self,
        response: Vec<u8>,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Opens the server-to-client stream, when the transport has one that
    /// must be asked for (the Streamable HTTP GET). `Ok(None)` when the
    /// server offers none (405, or 400 from some servers) or the transport
    /// has no such stream. Never opened unless asked: it costs a connection.
    fn open_server_stream(&self) -> BoxFuture<'_, Result<Option<ServerStream>, TransportError>> {
        Box::pin(async { Ok(None) })
    }

    /// Continues a server-to-client stream that was cut (`cut`: `Eof` or
    /// `Reset`): the Streamable HTTP `GET` with `Last-Event-ID` after the
    /// server's `retry:` delay, within the bounds of [`resume`]. A stream
    /// without an event id, or one the server will not resume, is
    /// [`TransportError::NotResumed`]; so is any stream of a transport that
    /// has none.
    fn resume_server_stream<'a>(
        &'a self,
        stream: &'a mut ServerStream,
        cut: Closure,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        let _ = stream;
        Box::pin(async move {
            Err(TransportError::NotResumed {
                cut,
                reason: error::ResumeError::Refused { status: 405 },
            })
        })
    }

    /// Sends a `subscriptions/listen` request whose reply is a long-lived
    /// stream. The default, for transports with one channel for everything,
    /// sends nothing and answers [`Listen::Shared`].
    fn listen<'a>(
        &'a self,
        request: &'a Request,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<Listen, TransportError>> {
        let _ = (request, version);
        Box::pin(async { Ok(Listen::Shared) })
    }

    /// Closes the transport and releases everything it holds (streams, the
    /// HTTP session, the child process). Idempotent: later calls return
    /// `Ok(())` at once.
    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>>;

    /// `Some` once the transport has ended, with how it ended.
    fn closed(&self) -> Option<Closure>;

    /// Which kind of transport this is.
    fn kind(&self) -> TransportKind;

    /// What it counted and was given (see [`TransportStats`]).
    fn stats(&self) -> TransportStats {
        TransportStats::default()
    }

    /// The session id the server assigned, as text, for telemetry that
    /// was asked to record it (never logged). `None` by default.
    #[doc(hidden)]
    fn session_id_text(&self) -> Option<String> {
        None
    }
}

/// What a transport counted and was given, as one value
/// ([`Session::stats`](crate::Session::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportStats {
    /// HTTP requests sent so far, establishment included (0 for stdio and
    /// memory transports).
    pub http_requests: u64,
    /// Whether every request carries a session id the server assigned
    /// (Streamable HTTP after `initialize` gave one; legacy HTTP+SSE, whose
    /// message endpoint names the session), so a refusal can be about that
    /// session.
    pub session_id: bool,
    /// Incoming lines, events and messages skipped so far: not a JSON-RPC
    /// message, or a reply to an id no request was waiting for (see the
    /// module docs).
    pub skipped: u64,
}
