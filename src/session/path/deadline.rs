//! The request's own bound: its timeout (the session's unless the request
//! sets one), the caller's cancellation, and progress.
//!
//! Cancelling the token, an expired timeout or dropping the future all end
//! the request the same way: the rest of the path is dropped (its waiter
//! removed) and, on the legacy era, the server is told with
//! `notifications/cancelled` naming the id it has (on the modern era the
//! POST the request rode on is simply closed, which is that era's
//! cancellation). A request that asks for progress carries a
//! `progressToken`; each report reaches its callback and, when asked,
//! restarts the timeout, never past a maximum total.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::instant::after;
use mcp_connect_layers::{CancelSource, Stage};
use serde_json::{json, Map, Value};
use tokio::time::{Instant, Sleep};

use super::Context;
use crate::error::{Error, ErrorKind};
use crate::inbound::ProgressGuard;
use crate::protocol::{methods, Era, Notification, ProtocolVersion, Request};
use crate::session::{RequestOptions, Session};
use crate::transport::Transport;

/// Progress tokens are unique in the process, so one listener can serve
/// every session.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// One request's bound, set before anything is sent. The request's work
/// runs beside [`Deadline::expired`], not inside it, so the work's future
/// is not nested one level deeper (see the module `path`).
pub(super) struct Deadline<'a> {
    options: &'a RequestOptions,
    /// Where the request's progress reports arrive, when it asked for them.
    watch: Option<ProgressGuard>,
    limit: Duration,
    ceiling: Instant,
    first: Instant,
    /// Armed until the work ends on its own.
    guard: CancelOnDrop<'a>,
}

impl<'a> Deadline<'a> {
    /// Starts the clock, and gives the request a progress token when it
    /// wants progress.
    pub(super) fn start(session: &'a Session, cx: &'a Context<'a>, request: &mut Request) -> Self {
        let options = cx.options;
        let watch = options.wants_progress().then(|| {
            let token = Value::from(format!(
                "mcp-connect-{}",
                NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
            ));
            let mut fields = Map::new();
            fields.insert("progressToken".into(), token.clone());
            request.add_meta(fields);
            session
                .inbound
                .watch_progress(&token, options.progress.clone())
        });
        let started = Instant::now();
        let limit = options.timeout.unwrap_or(session.request_timeout);
        let ceiling = after(
            started,
            options.max_total.map_or(limit, |total| total.max(limit)),
        );
        Deadline {
            options,
            watch,
            limit,
            ceiling,
            first: after(started, limit).min(ceiling),
            guard: CancelOnDrop {
                session,
                cx,
                reason: "the client abandoned the request",
                armed: true,
            },
        }
    }

    /// The request's timer, to pin where the request runs (a timer is not
    /// `Unpin`, and boxing it would cost an allocation per request).
    pub(super) fn timer(&self) -> Sleep {
        tokio::time::sleep_until(self.first)
    }

    /// Ends when the request must stop: `timer` (restarted by progress
    /// when asked, never past the ceiling) or its cancellation. The
    /// server is told when the `Deadline` drops.
    pub(super) async fn expired(&mut self, mut timer: Pin<&mut Sleep>) -> Error {
        let options = self.options;
        let cancelled = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        loop {
            let progressed = async {
                match (&self.watch, options.max_total) {
                    (Some(watch), Some(_)) => watch.reported().await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = &mut cancelled => {
                    self.guard.reason = "the client cancelled the request";
                    return Error::new(Stage::REQUEST, ErrorKind::Cancelled);
                }
                _ = timer.as_mut() => {
                    self.guard.reason = "timeout";
                    return Error::new(
                        Stage::REQUEST,
                        ErrorKind::Timeout(CancelSource::RequestTimeout),
                    );
                }
                _ = progressed => {
                    let next = after(Instant::now(), self.limit).min(self.ceiling);
                    timer.as_mut().reset(next);
                }
            }
        }
    }

    /// The work ended on its own: nothing to tell the server.
    pub(super) fn done(mut self) {
        self.guard.armed = false;
    }
}

/// Tells the server a request is abandoned, unless disarmed: dropping the
/// request future mid-flight cancels it on the wire too. It borrows the
/// session, so a request that completes (the common case) clones nothing.
struct CancelOnDrop<'a> {
    session: &'a Session,
    cx: &'a Context<'a>,
    reason: &'static str,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let session = self.session;
        if !self.armed || session.era() != Era::Legacy || session.transport.closed().is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let transport: Arc<dyn Transport> = Arc::clone(&session.transport);
        let version: ProtocolVersion = session.negotiated.version.clone();
        let notification = Notification {
            method: methods::NOTIFICATION_CANCELLED.into(),
            params: Some(json!({ "requestId": self.cx.on_wire(), "reason": self.reason })),
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                transport.notify(&notification, Some(&version)),
            )
            .await;
        });
    }
}
