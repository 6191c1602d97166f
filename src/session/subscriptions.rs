//! `subscriptions/listen` (2026-07-28 era): the modern way to hear list
//! changes and resource updates, behind the same API as the legacy era.
//!
//! The modern era has neither the standalone GET stream nor
//! `resources/subscribe`. Instead one `subscriptions/listen` request names
//! everything the client wants to hear (the list changes the server's
//! capabilities offer, when the application listens; the resources it
//! subscribed to), and its reply *is* the stream: an SSE stream on
//! Streamable HTTP, the shared channel on stdio. The server acknowledges
//! first (routed to the waiting session by [`Inbound`]), then tags every
//! notification with the request's id.
//!
//! A session holds at most one subscription. Changing it
//! ([`Session::subscribe`], [`Session::unsubscribe`]) opens the new one,
//! waits for its acknowledgement, then ends the old one, so nothing the
//! server sends in between is missed (a notification may arrive on both).
//! Ending a subscription drops its stream (HTTP) or sends
//! `notifications/cancelled` for it (stdio). A stream that ends on its own
//! is not reopened by the session; an [`McpClient`](crate::McpClient)
//! subscribes again on its next session.

use crate::protocol::methods;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::{CancelSource, Stage};
use serde_json::{json, Map, Value};
use tokio::task::JoinHandle;

use super::{listen, Session};
use crate::error::{Error, ErrorKind, SubscriptionError};
use crate::inbound::{Inbound, LiveSubscription};
use crate::protocol::{EncodedRequest, Notification, ProtocolVersion, Request, RequestKind};
use crate::transport::Listen;

/// Listen request ids are unique in the process (numbers far above any
/// session's own count): acknowledgements and notifications are matched to
/// their subscription by this id alone, on seams that sessions without a
/// handler share.
static NEXT_LISTEN_ID: AtomicI64 = AtomicI64::new(1 << 40);

#[derive(Default)]
pub(super) struct Subscriptions {
    /// One change at a time.
    current: tokio::sync::Mutex<Current>,
}

#[derive(Default)]
struct Current {
    uris: BTreeSet<String>,
    active: Option<Active>,
}

/// The subscription in force: the task that reads its stream (HTTP) or
/// keeps its request pending (stdio, memory).
struct Active {
    id: i64,
    task: JoinHandle<()>,
    shared_channel: bool,
    _live: LiveSubscription,
}

impl Drop for Active {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Subscriptions {
    /// Ends the subscription in force, if any (the session is closing).
    pub(super) fn stop(&self) {
        if let Ok(mut current) = self.current.try_lock() {
            current.active = None;
        }
    }
}

impl Session {
    /// Opens the subscription an application that listens wants from the
    /// start: the list changes the server offers. Called during
    /// establishment; `Ok` when there is nothing to hear.
    pub(crate) async fn listen_from_start(&self) -> Result<(), Error> {
        self.listen_to(BTreeSet::new()).await
    }

    /// `resources/subscribe` of the modern era: the subscription again,
    /// with `uri` added.
    pub(super) async fn subscribe_modern(&self, uri: &str) -> Result<(), Error> {
        let mut uris = self.subscriptions.current.lock().await.uris.clone();
        uris.insert(uri.to_owned());
        self.listen_to(uris).await
    }

    /// `resources/unsubscribe` of the modern era: the subscription again,
    /// without `uri` (or none, when nothing is left to hear).
    pub(super) async fn unsubscribe_modern(&self, uri: &str) -> Result<(), Error> {
        let mut uris = self.subscriptions.current.lock().await.uris.clone();
        uris.remove(uri);
        self.listen_to(uris).await
    }

    /// Replaces the subscription with one for `uris` and the offered list
    /// changes. A resource the server does not acknowledge is left out and
    /// reported as [`SubscriptionError::NotAcknowledged`].
    async fn listen_to(&self, uris: BTreeSet<String>) -> Result<(), Error> {
        let mut current = self.subscriptions.current.lock().await;
        let Some(filter) = self.filter(&uris) else {
            if let Some(old) = current.active.take() {
                self.end(old);
            }
            current.uris = uris;
            return Ok(());
        };
        let id = NEXT_LISTEN_ID.fetch_add(1, Ordering::Relaxed);
        let params = json!({ "notifications": filter });
        let body = EncodedRequest::new(RequestKind::Listen, Some(&params), None);
        let request = self.outgoing(id, body);
        let (active, acknowledged) =
            tokio::time::timeout(self.request_timeout, self.open(id, request))
                .await
                .map_err(|_| {
                    Error::new(
                        Stage::REQUEST,
                        ErrorKind::Timeout(CancelSource::RequestTimeout),
                    )
                })??;
        if let Some(old) = current.active.replace(active) {
            self.end(old);
        }
        let honoured: BTreeSet<String> = acknowledged
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|uri| uri.as_str().map(str::to_owned))
            .collect();
        let all_honoured = uris.is_subset(&honoured);
        current.uris = uris.intersection(&honoured).cloned().collect();
        if all_honoured {
            Ok(())
        } else {
            Err(subscription_error(SubscriptionError::NotAcknowledged))
        }
    }

    /// What to ask for: the list changes the server's capabilities offer
    /// (only when the application reads notifications) and `uris`. `None`
    /// when that is nothing.
    fn filter(&self, uris: &BTreeSet<String>) -> Option<Value> {
        let mut filter = Map::new();
        if self.inbound.wants_notifications() {
            let offers = |capability: &str| {
                self.negotiated
                    .capabilities
                    .get(capability)
                    .and_then(|c| c.get("listChanged"))
                    .and_then(Value::as_bool)
                    == Some(true)
            };
            for (capability, key) in [
                ("tools", "toolsListChanged"),
                ("prompts", "promptsListChanged"),
                ("resources", "resourcesListChanged"),
            ] {
                if offers(capability) {
                    filter.insert(key.into(), Value::Bool(true));
                }
            }
        }
        if !uris.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(uris));
        }
        (!filter.is_empty()).then_some(Value::Object(filter))
    }

    /// Sends the listen request and waits for its acknowledgement; the
    /// acknowledged filter and the subscription, once acknowledged.
    async fn open(&self, id: i64, request: Request) -> Result<(Active, Value), Error> {
        let mut ack = self.inbound.expect_ack(id);
        let live = self.inbound.live_subscription(id);
        let version = self.negotiated.version.clone();
        let transport = Arc::clone(&self.transport);
        let inbound: Arc<Inbound> = Arc::clone(&self.inbound);
        let listened = self
            .transport
            .listen(&request, Some(&version))
            .await
            .map_err(|e| Error::transport(Stage::REQUEST, e))?;
        let mut active = match listened {
            Listen::Stream(stream) => Active {
                id,
                task: tokio::spawn(listen::read(
                    *stream,
                    transport,
                    inbound,
                    version,
                    listen::Resume::No,
                )),
                shared_channel: false,
                _live: live,
            },
            Listen::Shared => Active {
                id,
                task: tokio::spawn(async move {
                    let _ = transport.request(&request, Some(&version)).await;
                }),
                shared_channel: true,
                _live: live,
            },
            Listen::Reply(Err(rpc)) => return Err(Error::new(Stage::REQUEST, ErrorKind::Rpc(rpc))),
            Listen::Reply(Ok(_)) => return Err(subscription_error(SubscriptionError::Ended)),
        };
        tokio::select! {
            acknowledged = ack.acknowledged() => match acknowledged {
                Some(filter) => Ok((active, filter)),
                None => Err(subscription_error(SubscriptionError::Ended)),
            },
            _ = &mut active.task => Err(subscription_error(SubscriptionError::Ended)),
        }
    }

    /// Ends a subscription that was replaced: its task stops as it drops;
    /// on a shared channel the server is also told.
    fn end(&self, old: Active) {
        if !old.shared_channel || self.transport.closed().is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let transport = Arc::clone(&self.transport);
        let version: ProtocolVersion = self.negotiated.version.clone();
        let notification = Notification {
            method: methods::NOTIFICATION_CANCELLED.into(),
            params: Some(json!({ "requestId": old.id, "reason": "subscription replaced" })),
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

fn subscription_error(error: SubscriptionError) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::Subscription(error))
}
