//! Requests waiting for replies that arrive on a separate stream (stdio
//! stdout, an in-memory pipe, a legacy SSE stream): the one place where
//! replies are matched to requests by id, and where a closing stream fails
//! every waiter at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use mcp_connect_layers::Closure;
use tokio::sync::oneshot;

use super::error::TransportError;
use super::Reply;
use crate::protocol::{Incoming, RequestId, RpcError};

type Waiter = oneshot::Sender<Result<Reply, TransportError>>;

#[derive(Default)]
struct Pending {
    waiters: HashMap<RequestId, Waiter>,
    closed: Option<Closure>,
}

/// The pending requests of one transport.
#[derive(Default)]
pub(crate) struct Waiters {
    pending: Mutex<Pending>,
    /// Messages that were skipped (see [`skip`](Self::skip)).
    skipped: Skipped,
}

/// A count of incoming lines, events and messages a transport skipped
/// (see the [transport module docs](super)), each told once as a
/// payload-free debug event.
#[derive(Debug, Default)]
pub(crate) struct Skipped(AtomicU64);

impl Skipped {
    /// Counts one, with an event naming `what` (never its bytes).
    pub(crate) fn skip(&self, what: &'static str) {
        let skipped = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(target: "mcp_connect::transport", what, skipped, "skipped");
    }

    /// How many so far.
    pub(crate) fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A registered request; dropping it (on cancellation or a failed send)
/// forgets the waiter.
pub(crate) struct Registration<'a> {
    waiters: &'a Waiters,
    id: RequestId,
    reply: oneshot::Receiver<Result<Reply, TransportError>>,
}

impl Registration<'_> {
    /// Waits for the reply, or for the stream to close.
    pub(crate) async fn reply(mut self) -> Result<Reply, TransportError> {
        match (&mut self.reply).await {
            Ok(reply) => reply,
            Err(_) => Err(TransportError::Closed(
                self.waiters.closed().unwrap_or(Closure::Local),
            )),
        }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.waiters.pending.lock() {
            pending.waiters.remove(&self.id);
        }
    }
}

/// What the reader must do after [`Waiters::dispatch`].
pub(crate) enum Dispatched {
    /// Nothing more.
    Done,
    /// Answer this server request.
    Request(RequestId, String, Option<serde_json::Value>),
    /// Hand on this notification.
    Notification(String, Option<serde_json::Value>),
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // Poisoning needs a panic while the lock is held; nothing in these
        // short sections can panic, so this cannot fire.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request id, unless the stream already ended or the id is
    /// already awaiting a reply (its reply could not be told apart).
    pub(crate) fn register(&self, id: &RequestId) -> Result<Registration<'_>, TransportError> {
        let (tx, rx) = oneshot::channel();
        let mut pending = self.lock();
        if let Some(closure) = pending.closed {
            return Err(TransportError::Closed(closure));
        }
        if pending.waiters.contains_key(id) {
            return Err(TransportError::DuplicateId);
        }
        pending.waiters.insert(id.clone(), tx);
        Ok(Registration {
            waiters: self,
            id: id.clone(),
            reply: rx,
        })
    }

    /// How the stream ended, once it has.
    pub(crate) fn closed(&self) -> Option<Closure> {
        self.lock().closed
    }

    /// Delivers a reply (or a failure) to the waiter of `id`.
    pub(crate) fn deliver(&self, id: &RequestId, reply: Result<Reply, TransportError>) {
        let waiter = self.lock().waiters.remove(id);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(reply);
            }
            None => self.skip("a reply to an id no request is waiting for"),
        }
    }

    /// Counts one incoming line, event or message that was skipped, with
    /// one diagnostic event naming `what` (never its bytes).
    pub(crate) fn skip(&self, what: &'static str) {
        self.skipped.skip(what);
    }

    /// How many were skipped so far.
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped.count()
    }

    /// Routes one incoming message: replies to their waiters; server
    /// requests and notifications back to the reader, for the connection's
    /// inbound handler.
    pub(crate) fn dispatch(&self, message: Incoming) -> Dispatched {
        match message {
            Incoming::Response { id, result } => self.deliver(&id, Ok(Ok(result))),
            Incoming::Error {
                id: Some(id),
                error,
            } => self.deliver(&id, Ok(Err(error))),
            Incoming::Error { id: None, error } => self.deliver_unaddressed(error),
            Incoming::Request { id, method, params } => {
                return Dispatched::Request(id, method, params)
            }
            Incoming::Notification { method, params } => {
                return Dispatched::Notification(method, params)
            }
        }
        Dispatched::Done
    }

    /// An error with `"id": null` answers the one pending request when there
    /// is exactly one; with several it cannot be attributed and is dropped.
    fn deliver_unaddressed(&self, error: RpcError) {
        let mut pending = self.lock();
        if pending.waiters.len() == 1 {
            let only = std::mem::take(&mut pending.waiters).into_values().next();
            drop(pending);
            if let Some(waiter) = only {
                let _ = waiter.send(Ok(Err(error)));
            }
        } else {
            drop(pending);
            self.skip("an error without an id, with several requests waiting");
        }
    }

    /// Fails every current waiter with `error` (the stream stays open).
    pub(crate) fn fail_all(&self, error: impl Fn() -> TransportError) {
        let waiters = std::mem::take(&mut self.lock().waiters);
        for (_, waiter) in waiters {
            let _ = waiter.send(Err(error()));
        }
    }

    /// Marks the stream ended and fails every waiter with the closure. The
    /// first closure recorded wins.
    pub(crate) fn finish(&self, closure: Closure) {
        let (waiters, closure) = {
            let mut pending = self.lock();
            let closure = *pending.closed.get_or_insert(closure);
            (std::mem::take(&mut pending.waiters), closure)
        };
        for (_, waiter) in waiters {
            let _ = waiter.send(Err(TransportError::Closed(closure)));
        }
    }
}
