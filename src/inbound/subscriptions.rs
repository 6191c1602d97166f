//! The inbound side of `subscriptions/listen` (2026-07-28 era).
//!
//! A server answers every subscription with
//! `notifications/subscriptions/acknowledged` first, tagged with the listen
//! request's id, saying which of the requested notifications it will send.
//! That message is plumbing: it goes to the session waiting for it, never
//! to the application's listener. One without a waiter (late, or for a
//! subscription already replaced) is dropped.
//!
//! Every later notification of a subscription carries the same id. One
//! whose subscription is no longer live (replaced, or ended) is dropped:
//! on stdio all subscriptions share one channel, and the server may still
//! send on a subscription it has not yet seen cancelled.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::oneshot;

use super::{token_key, Inbound};
use crate::protocol::meta_keys;

#[derive(Default)]
pub(super) struct Acks {
    waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    live: Mutex<HashSet<String>>,
}

/// The subscription id a notification is tagged with, as a map key.
pub(super) fn subscription_of(params: Option<&Value>) -> Option<String> {
    params?
        .get("_meta")?
        .get(meta_keys::SUBSCRIPTION_ID)
        .map(token_key)
}

impl Acks {
    fn live(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // Held for one set operation, never across an await.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a notification tagged with subscription `key` may go on.
    pub(super) fn is_live(&self, key: &str) -> bool {
        self.live().contains(key)
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Value>>> {
        // Held for one map operation, never across an await.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands an acknowledgement's `notifications` filter to its waiter.
    pub(super) fn deliver(&self, params: Option<&Value>) {
        let Some(key) = subscription_of(params) else {
            return;
        };
        let waiter = self.waiting().remove(&key);
        match (waiter, params) {
            (Some(waiter), Some(params)) => {
                let filter = params.get("notifications").cloned().unwrap_or_default();
                let _ = waiter.send(filter);
            }
            _ => tracing::trace!("subscription acknowledgement without a waiter dropped"),
        }
    }
}

/// Marks one subscription live for as long as it is held.
pub(crate) struct LiveSubscription {
    inbound: Arc<Inbound>,
    key: String,
}

impl LiveSubscription {
    pub(super) fn new(inbound: &Arc<Inbound>, id: i64) -> Self {
        let key = token_key(&Value::from(id));
        inbound.acks.live().insert(key.clone());
        LiveSubscription {
            inbound: Arc::clone(inbound),
            key,
        }
    }
}

impl Drop for LiveSubscription {
    fn drop(&mut self) {
        self.inbound.acks.live().remove(&self.key);
    }
}

/// Waits for the acknowledgement of one subscription; stops waiting when
/// dropped.
pub(crate) struct AckWaiter {
    inbound: Arc<Inbound>,
    key: String,
    receiver: oneshot::Receiver<Value>,
}

impl AckWaiter {
    pub(super) fn new(inbound: &Arc<Inbound>, id: i64) -> Self {
        let key = token_key(&Value::from(id));
        let (sender, receiver) = oneshot::channel();
        inbound.acks.waiting().insert(key.clone(), sender);
        AckWaiter {
            inbound: Arc::clone(inbound),
            key,
            receiver,
        }
    }

    /// The acknowledged filter (an empty value when the server sent none).
    pub(crate) async fn acknowledged(&mut self) -> Option<Value> {
        (&mut self.receiver).await.ok()
    }
}

impl Drop for AckWaiter {
    fn drop(&mut self) {
        self.inbound.acks.waiting().remove(&self.key);
    }
}
