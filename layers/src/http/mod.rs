//! The four layers over any tower HTTP client (feature `http`).
//!
//! `http::Request<B>` implements [`Establishment`] and [`Reattempt`], keeping
//! what the layers carry in its extensions, and `http::Response<B>`
//! implements [`ClassifyOutcome`](crate::classify::ClassifyOutcome), so the
//! layers compose over `hyper_util`'s client, reqwest behind a tower adapter,
//! or any `Service<http::Request<B>>`, with no adapter of your own:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use hyper_util::client::legacy::Client;
//! use hyper_util::rt::TokioExecutor;
//! use mcp_connect_layers::classify::FailureClassifierLayer;
//! use mcp_connect_layers::deadline::DeadlineLayer;
//! use mcp_connect_layers::diagnostics::{AttemptDiagnosticsLayer, LifecycleDiagnosticsLayer};
//! use mcp_connect_layers::recovery::{FreshSessionRecoveryLayer, RecoveryPolicy};
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
//! let svc = ServiceBuilder::new()
//!     .layer(DeadlineLayer::new(Duration::from_secs(2)))
//!     .layer(LifecycleDiagnosticsLayer::new())
//!     .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::new()))
//!     .layer(AttemptDiagnosticsLayer::new())
//!     .layer(FailureClassifierLayer::new())
//!     .service(client);
//! let request = http::Request::get("http://127.0.0.1:8080/").body(Full::default())?;
//! let response = svc.oneshot(request).await?;
//! # drop(response);
//! # Ok(()) }
//! ```
//!
//! # The HTTP policy
//!
//! - **Responses.** 1xx-3xx pass through. A 4xx or 5xx becomes an
//!   [`HttpError`] that keeps the whole response
//!   ([`HttpError::into_response`]): 401 and 403 are
//!   [`FailureKind::Auth`](crate::FailureKind::Auth), 429 is `Throttled`, 502,
//!   503 and 504 are `Unavailable`, anything else `HttpStatus`. The
//!   `Retry-After` of a 429, 502, 503 or 504 is kept in the failure.
//! - **Errors.** A refused, reset or timed-out connect is `Connect` at the
//!   connect stage; a connection closed or reset before the response is
//!   `Closed`; a request the client cancelled before sending it (its pooled
//!   connection had closed) is `Closed` at the connect stage, since nothing
//!   was sent. Anything the classifier cannot name for certain (a DNS or TLS
//!   failure, say) is `Other`, which is never re-attempted.
//! - **Fresh attempts** (with the default
//!   [`Conservative`](crate::classify::Conservative) policy): connect
//!   failures always; closed connections and 502/503/504 only for an
//!   idempotent method (`GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT`, `DELETE`) or
//!   a request marked [`ReplaySafe`]; 401, 403, 429 and other 4xx never.
//!   The recovery layer waits at least the `Retry-After` and never past the
//!   deadline.
//! - **Bodies.** Only a body that can be cloned is sent again: `Full<Bytes>`,
//!   `Empty<Bytes>`, `String`, `Vec<u8>`, `Bytes`, `()`, or any body with a
//!   [`ReplayBody`] in the extensions. Otherwise recovery stops with
//!   [`Stop::NotReplayable`] instead of sending a half-empty request.
//!
//! # Extensions
//!
//! The caller may set any of these before sending; the layers set the
//! missing ones: [`DeadlineAt`] (an earlier caller deadline wins), [`Started`],
//! [`Cancellation`] (the caller's token), [`Observers`], [`AttemptNumber`],
//! [`ReplaySafe`], [`ReplayBody`]. Each is a type of this crate's, so none
//! is confused with an extension another layer keeps of the same type (a
//! bare `CancellationToken` could be anyone's).

mod error;
mod replay;

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use error::{retry_after, HttpError};
pub use replay::ReplayBody;

use crate::failure::Stop;
use crate::{Establishment, Reattempt, StageObserver};

/// The absolute deadline of the whole exchange, every attempt included (a
/// request extension; the service that enforces it is
/// [`deadline::Deadline`](crate::deadline::Deadline)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineAt(pub Instant);

/// When the exchange started (the first `poll_ready` of the deadline layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started(pub Instant);

/// The caller's cancellation: cancelling the token ends every attempt and
/// the wait between them.
#[derive(Debug, Clone, Default)]
pub struct Cancellation(pub CancellationToken);

/// The attempt a request is for, starting at 1 (set by the recovery layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptNumber(pub u32);

/// Marks a request whose method is not idempotent as safe to send again
/// (the server deduplicates it, say).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplaySafe;

/// The stage observers of a request (added by the diagnostics layer).
#[derive(Clone, Default)]
pub struct Observers(pub Vec<Arc<dyn StageObserver>>);

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Observers").field(&self.0.len()).finish()
    }
}

impl<B> Establishment for http::Request<B> {
    /// The deadline, moved later by any time spent waiting for a person.
    fn deadline(&self) -> Option<Instant> {
        let deadline = self.extensions().get::<DeadlineAt>().map(|d| d.0)?;
        Some(match self.deadline_pause() {
            Some(pause) => pause.extend(deadline),
            None => deadline,
        })
    }

    fn deadline_pause(&self) -> Option<&crate::deadline::DeadlinePause> {
        self.extensions().get()
    }

    fn set_deadline_pause(&mut self, pause: crate::deadline::DeadlinePause) {
        self.extensions_mut().insert(pause);
    }

    fn set_deadline(&mut self, started: Instant, deadline: Instant) {
        self.extensions_mut().insert(Started(started));
        self.extensions_mut().insert(DeadlineAt(deadline));
    }

    fn started(&self) -> Option<Instant> {
        self.extensions().get::<Started>().map(|s| s.0)
    }

    fn cancellation(&self) -> Option<&CancellationToken> {
        self.extensions().get::<Cancellation>().map(|c| &c.0)
    }

    fn add_observer(&mut self, observer: Arc<dyn StageObserver>) {
        match self.extensions_mut().get_mut::<Observers>() {
            Some(observers) => observers.0.push(observer),
            None => {
                self.extensions_mut().insert(Observers(vec![observer]));
            }
        }
    }

    fn observers(&self) -> &[Arc<dyn StageObserver>] {
        self.extensions()
            .get::<Observers>()
            .map_or(&[], |o| o.0.as_slice())
    }

    fn attempt(&self) -> u32 {
        self.extensions().get::<AttemptNumber>().map_or(1, |a| a.0)
    }

    fn label(&self) -> &'static str {
        match self.uri().scheme_str() {
            Some("https") => "https",
            _ => "http",
        }
    }

    fn is_replay_safe(&self) -> bool {
        self.method().is_idempotent() || self.extensions().get::<ReplaySafe>().is_some()
    }

    /// Dropping an HTTP client's response future closes or returns its
    /// connection: nothing needs time after a cut.
    fn cleanup_bound(&self) -> Duration {
        Duration::ZERO
    }
}

impl<B: Any> Reattempt for http::Request<B> {
    fn next_attempt(&self, attempt: u32) -> Result<Self, Stop> {
        let body = replay::clone_body(self).ok_or(Stop::NotReplayable)?;
        let mut next = http::Request::new(body);
        *next.method_mut() = self.method().clone();
        *next.uri_mut() = self.uri().clone();
        *next.version_mut() = self.version();
        *next.headers_mut() = self.headers().clone();
        *next.extensions_mut() = self.extensions().clone();
        next.extensions_mut().insert(AttemptNumber(attempt));
        Ok(next)
    }
}
