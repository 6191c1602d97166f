//! `subscriptions/listen` (2026-07-28): the stream a client opens to hear
//! what no request of its own causes. Its first event acknowledges which
//! of the asked notifications the gateway will send (the list changes of
//! tools, prompts and resources; not resource updates yet), every event
//! carries the listen request's id as its `subscriptionId`, and the
//! `list_changed` the group's listings cause (`crate::changes`) go to
//! every stream whose filter names them. At most [`MAX_LISTENERS`]
//! streams are open at once; one whose reader went away is let go at the
//! next change or the next listen.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use mcp_connect::protocol::{codes, meta_keys, methods};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::body::event;
use crate::reply::{self, Reply, RpcFailure};

/// How many listen streams may be open at once.
pub(crate) const MAX_LISTENERS: usize = 1024;

/// The filter keys, in the order of `crate::changes`'s notifications.
pub(crate) const FILTER_KEYS: [&str; 3] = [
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
];

/// One open stream: its subscription id, what it asked for, its sender.
struct Listener {
    id: Value,
    wants: [bool; 3],
    sender: mpsc::Sender<Bytes>,
}

/// The open listen streams.
#[derive(Default)]
pub(crate) struct Listeners(Mutex<Vec<Listener>>);

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listeners").finish_non_exhaustive()
    }
}

/// `method` (a notification) tagged with subscription `id`.
fn tagged(method: &str, id: &Value, mut params: Map<String, Value>) -> Bytes {
    params.insert("_meta".into(), json!({ meta_keys::SUBSCRIPTION_ID: id }));
    event(&json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string())
}

impl Listeners {
    fn open(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `method` to every stream that asked for the notification at
    /// `which` (an index of [`FILTER_KEYS`]).
    pub(crate) fn notify(&self, which: usize, method: &str) {
        let mut open = self.open();
        open.retain(|l| !l.sender.is_closed());
        for listener in open.iter().filter(|l| l.wants[which]) {
            let _ = listener
                .sender
                .try_send(tagged(method, &listener.id, Map::new()));
        }
    }

    /// Answers the listen request `id` with `params`: its stream, which
    /// starts with the acknowledgement.
    pub(crate) fn listen(&self, id: &Value, params: Option<&Value>, keepalive: Duration) -> Reply {
        let asked = params.and_then(|p| p.get("notifications"));
        let wants = FILTER_KEYS
            .map(|key| asked.and_then(|a| a.get(key)).and_then(Value::as_bool) == Some(true));
        let honoured: Map<String, Value> = (FILTER_KEYS.iter().zip(wants))
            .filter(|(_, wanted)| *wanted)
            .map(|(key, _)| ((*key).to_owned(), Value::Bool(true)))
            .collect();
        let (sender, events) = mpsc::channel(64);
        let mut open = self.open();
        open.retain(|l| !l.sender.is_closed());
        if open.len() >= MAX_LISTENERS {
            let failure = RpcFailure::new(codes::INTERNAL_ERROR, "too many open subscriptions");
            return reply::error(StatusCode::SERVICE_UNAVAILABLE, Some(id), &failure);
        }
        let mut ack = Map::new();
        ack.insert("notifications".into(), Value::Object(honoured));
        let acknowledged = tagged(methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, id, ack);
        // A fresh channel has room for its first event.
        let _ = sender.try_send(acknowledged);
        open.push(Listener {
            id: id.clone(),
            wants,
            sender,
        });
        reply::events(events, keepalive)
    }
}
