//! Server notifications, delivered to the application through a bounded
//! channel that never makes a transport wait.

use crate::protocol::NotificationKind;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// A notification the server sent: `notifications/progress`,
/// `notifications/message` (logging), `notifications/*/list_changed`,
/// `notifications/resources/updated`, `notifications/cancelled`, or any
/// other method, with the name of the server that sent it (one channel may
/// serve many servers). [`known`](Self::known) reads the methods the
/// specification defines; everything stays available raw.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerNotification {
    /// The method.
    pub method: String,
    /// The params, as sent.
    pub params: Option<Value>,
    /// The server's name: [`ConnectRequest::with_name`](crate::ConnectRequest::with_name),
    /// or by default the target as printed (no userinfo, query or header).
    pub server: Arc<str>,
}

impl ServerNotification {
    /// What it is.
    pub fn kind(&self) -> NotificationKind {
        NotificationKind::of(&self.method)
    }

    /// The notification typed, when its method is one the specification
    /// defines and its params have that method's shape;
    /// [`Known::Other`] otherwise (read `method` and `params`).
    pub fn known(&self) -> Known {
        let known = match self.kind() {
            NotificationKind::Progress => self.params_as().map(Known::Progress),
            NotificationKind::Message => self.params_as().map(Known::Log),
            NotificationKind::ResourceUpdated => self.params_as().map(Known::ResourceUpdated),
            NotificationKind::Cancelled => self.params_as().map(Known::Cancelled),
            NotificationKind::ToolsListChanged => Some(Known::ListChanged(ListKind::Tools)),
            NotificationKind::PromptsListChanged => Some(Known::ListChanged(ListKind::Prompts)),
            NotificationKind::ResourcesListChanged => Some(Known::ListChanged(ListKind::Resources)),
            _ => None,
        };
        known.unwrap_or(Known::Other)
    }

    /// The params read as `T` (absent params read as `{}`), when they fit.
    fn params_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        let params = self
            .params
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()));
        serde_json::from_value(params).ok()
    }
}

/// The method and the server only: params are the server's words.
impl fmt::Debug for ServerNotification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerNotification")
            .field("method", &self.method)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// A notification the specification defines, typed (see
/// [`ServerNotification::known`]). Each keeps the fields it does not name in
/// `extra`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Known {
    /// `notifications/progress`.
    Progress(ProgressNotification),
    /// `notifications/message`: a log message.
    Log(LogMessage),
    /// `notifications/{tools,prompts,resources}/list_changed`.
    ListChanged(ListKind),
    /// `notifications/resources/updated`.
    ResourceUpdated(ResourceUpdated),
    /// `notifications/cancelled`: the server abandoned a request of ours,
    /// or answers our cancellation.
    Cancelled(Cancelled),
    /// Another method, or params without the method's required fields.
    Other,
}

/// Which listing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
}

/// `notifications/progress` params.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProgressNotification {
    /// The token the request carried.
    pub progress_token: Value,
    /// How far along.
    pub progress: f64,
    /// The total, when known.
    #[serde(default)]
    pub total: Option<f64>,
    /// A message for people, when sent.
    #[serde(default)]
    pub message: Option<String>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `notifications/message` params.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[non_exhaustive]
pub struct LogMessage {
    /// The level (`debug` .. `emergency`).
    pub level: String,
    /// The logger's name, when sent.
    #[serde(default)]
    pub logger: Option<String>,
    /// The message: any JSON.
    #[serde(default)]
    pub data: Value,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `notifications/resources/updated` params.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[non_exhaustive]
pub struct ResourceUpdated {
    /// The resource that changed.
    pub uri: String,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `notifications/cancelled` params.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Cancelled {
    /// The request cancelled, when named.
    #[serde(default)]
    pub request_id: Option<Value>,
    /// Why, when said.
    #[serde(default)]
    pub reason: Option<String>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The sending half, given to
/// [`ConnectRequest::with_notifications`](crate::ConnectRequest::with_notifications).
/// Clones share one channel:
/// every session of an [`McpClient`](crate::McpClient) reports into it.
#[derive(Clone)]
pub struct NotificationSender {
    sender: mpsc::Sender<ServerNotification>,
    dropped: Arc<AtomicU64>,
}

/// The receiving half: the application reads notifications from it.
///
/// Overflow policy: when the application has not read `capacity`
/// notifications yet, newer ones are dropped (and counted in
/// [`dropped`](Self::dropped)) rather than making the transport wait: a
/// slow reader never stalls replies.
pub struct Notifications {
    receiver: mpsc::Receiver<ServerNotification>,
    dropped: Arc<AtomicU64>,
}

/// A channel for up to `capacity` unread notifications (at least 1).
pub fn notification_channel(capacity: usize) -> (NotificationSender, Notifications) {
    let (sender, receiver) = mpsc::channel(capacity.max(1));
    let dropped = Arc::new(AtomicU64::new(0));
    (
        NotificationSender {
            sender,
            dropped: Arc::clone(&dropped),
        },
        Notifications { receiver, dropped },
    )
}

impl NotificationSender {
    /// The count of what this channel dropped, shared, for a reader that
    /// holds no receiver.
    pub(crate) fn drop_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.dropped)
    }

    /// Delivers without waiting; a full channel drops and counts.
    pub(crate) fn deliver(&self, notification: ServerNotification) {
        if self.sender.try_send(notification).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Notifications {
    /// The next notification; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<ServerNotification> {
        self.receiver.recv().await
    }

    /// The next notification if one is waiting.
    pub fn try_recv(&mut self) -> Option<ServerNotification> {
        self.receiver.try_recv().ok()
    }

    /// How many notifications were dropped because the channel was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for NotificationSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotificationSender").finish_non_exhaustive()
    }
}

impl fmt::Debug for Notifications {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifications")
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::methods;

    #[test]
    fn a_full_channel_drops_and_counts_without_waiting() {
        let (sender, mut notifications) = notification_channel(2);
        for _ in 0..5 {
            sender.deliver(ServerNotification {
                method: methods::NOTIFICATION_MESSAGE.into(),
                params: None,
                server: "s".into(),
            });
        }
        assert_eq!(notifications.dropped(), 3);
        assert!(notifications.try_recv().is_some());
        assert!(notifications.try_recv().is_some());
        assert!(notifications.try_recv().is_none());
    }

    #[test]
    fn known_methods_are_typed_and_the_rest_stay_raw() {
        let of = |method: &str, params: Value| ServerNotification {
            method: method.into(),
            params: Some(params),
            server: "files".into(),
        };
        let progress = of(
            methods::NOTIFICATION_PROGRESS,
            serde_json::json!({ "progressToken": 7, "progress": 2, "total": 4, "x": 1 }),
        );
        match progress.known() {
            Known::Progress(p) => {
                assert_eq!((p.progress, p.total), (2.0, Some(4.0)));
                assert_eq!(p.extra.get("x"), Some(&serde_json::json!(1)));
            }
            other => panic!("{other:?}"),
        }
        let log = of(
            methods::NOTIFICATION_MESSAGE,
            serde_json::json!({ "level": "info", "data": "d" }),
        );
        assert!(matches!(log.known(), Known::Log(m) if m.level == "info"));
        let changed = of(methods::NOTIFICATION_TOOLS_LIST_CHANGED, Value::Null);
        assert_eq!(changed.known(), Known::ListChanged(ListKind::Tools));
        // A known method without its required fields is not guessed at.
        let bad = of(
            methods::NOTIFICATION_RESOURCES_UPDATED,
            serde_json::json!({}),
        );
        assert_eq!(bad.known(), Known::Other);
        assert_eq!(
            of("notifications/custom", Value::Null).known(),
            Known::Other
        );
        assert!(format!("{progress:?}").contains("files"));
        assert!(!format!("{progress:?}").contains("progressToken"));
    }
}
