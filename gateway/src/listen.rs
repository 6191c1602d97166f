//! `subscriptions/listen` (2026-07-28): the stream a client opens to hear
//! what no request of its own causes. Its first event acknowledges which
//! of the asked notifications the gateway will send, every event carries
//! the listen request's id as its `subscriptionId`, and the
//! `list_changed` the group's listings cause (`crate::changes`) go to
//! every stream whose filter names them. A resource the client subscribes
//! to (`resourceSubscriptions`, at most [`MAX_RESOURCES`]) is subscribed
//! to at the member that offers it, on a member client of the stream's
//! own per member (with `session_clients`), before the acknowledgement,
//! which names the ones subscribed; the member's `notifications/resources/updated`
//! for it go out on the stream, and the member client ends with the
//! stream. At most [`MAX_LISTENERS`] streams are open at once; one whose
//! reader went away is let go at the next change or the next listen.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::join_all;
use http::StatusCode;
use mcp_connect::group::ServerGroup;
use mcp_connect::inbound::{notification_channel, ClientHandler};
use mcp_connect::protocol::{codes, meta_keys, methods, NotificationKind, ProtocolVersion};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::body::event;
use crate::relay::SessionRelay;
use crate::reply::{self, Reply, RpcFailure};
use crate::SessionClients;

/// How many listen streams may be open at once.
pub(crate) const MAX_LISTENERS: usize = 1024;

/// How many resources one stream may subscribe to.
pub(crate) const MAX_RESOURCES: usize = 64;

/// How long the member subscriptions of one listen may take.
const SUBSCRIBE_BOUND: Duration = Duration::from_secs(10);

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
    /// starts with the acknowledgement (`members`: where its resource
    /// subscriptions are made, when the gateway makes clients).
    pub(crate) async fn listen(
        &self,
        id: &Value,
        params: Option<&Value>,
        keepalive: Duration,
        members: Option<(&ServerGroup, &SessionClients)>,
    ) -> Reply {
        let asked = params.and_then(|p| p.get("notifications"));
        let wants = FILTER_KEYS
            .map(|key| asked.and_then(|a| a.get(key)).and_then(Value::as_bool) == Some(true));
        let mut honoured: Map<String, Value> = (FILTER_KEYS.iter().zip(wants))
            .filter(|(_, wanted)| *wanted)
            .map(|(key, _)| ((*key).to_owned(), Value::Bool(true)))
            .collect();
        {
            let mut open = self.open();
            open.retain(|l| !l.sender.is_closed());
            if open.len() >= MAX_LISTENERS {
                let failure = RpcFailure::new(codes::INTERNAL_ERROR, "too many open subscriptions");
                return reply::error(StatusCode::SERVICE_UNAVAILABLE, Some(id), &failure);
            }
        }
        let (sender, events) = mpsc::channel(64);
        let uris: Vec<&str> = (asked.and_then(|a| a.get("resourceSubscriptions")))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .take(MAX_RESOURCES)
            .collect();
        if let (Some((group, make)), false) = (members, uris.is_empty()) {
            // One member client per member the stream subscribes at.
            let catalogue = group.catalogue();
            let mut by_member: BTreeMap<Arc<str>, Vec<String>> = BTreeMap::new();
            for uri in uris {
                if let [server] = catalogue.resource_servers(uri).as_slice() {
                    by_member
                        .entry(Arc::clone(server))
                        .or_default()
                        .push(uri.to_owned());
                }
            }
            let subscribing = (by_member.into_iter())
                .map(|(server, uris)| subscribe(make, server, uris, id, &sender));
            let subscribed = tokio::time::timeout(SUBSCRIBE_BOUND, join_all(subscribing)).await;
            let subscribed: Vec<String> = subscribed.unwrap_or_default().concat();
            honoured.insert("resourceSubscriptions".into(), json!(subscribed));
        }
        let mut ack = Map::new();
        ack.insert("notifications".into(), Value::Object(honoured));
        let acknowledged = tagged(methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, id, ack);
        // A fresh channel has room for its first event.
        let _ = sender.try_send(acknowledged);
        self.open().push(Listener {
            id: id.clone(),
            wants,
            sender,
        });
        reply::events(events, keepalive)
    }
}

/// Subscribes to `uris` at `server`, the member that offers them, on a
/// member client of the stream's own, and relays their updates tagged
/// with `id` on `stream` until the stream's reader is gone; the ones it
/// subscribed to.
async fn subscribe(
    make: &SessionClients,
    server: Arc<str>,
    uris: Vec<String>,
    id: &Value,
    stream: &mpsc::Sender<Bytes>,
) -> Vec<String> {
    let (notifications, mut heard) = notification_channel(16);
    let relay = SessionRelay::new(
        ClientHandler::new(),
        notifications,
        ProtocolVersion::LATEST_MODERN,
    );
    let Some(client) = make(&server, relay) else {
        return Vec::new();
    };
    let mut subscribed = Vec::new();
    for uri in uris {
        if client.subscribe(&uri).await.is_ok() {
            subscribed.push(uri);
        }
    }
    if subscribed.is_empty() {
        let _ = client.close().await;
        return subscribed;
    }
    let (watched, id, stream) = (subscribed.clone(), id.clone(), stream.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stream.closed() => break,
                heard = heard.recv() => {
                    let Some(notification) = heard else { break };
                    let uri = (notification.params.as_ref())
                        .and_then(|p| p.get("uri"))
                        .and_then(Value::as_str)
                        .filter(|uri| watched.iter().any(|w| w == uri));
                    if let (NotificationKind::ResourceUpdated, Some(uri)) = (notification.kind(), uri) {
                        let mut params = Map::new();
                        params.insert("uri".into(), Value::String(uri.to_owned()));
                        let update = tagged(methods::NOTIFICATION_RESOURCES_UPDATED, &id, params);
                        let _ = stream.try_send(update);
                    }
                }
            }
        }
        let _ = client.close().await;
    });
    subscribed
}
