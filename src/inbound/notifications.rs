//! Server notifications, delivered to the application through a bounded
//! channel that never makes a transport wait.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

/// A notification the server sent: `notifications/progress`,
/// `notifications/message` (logging), `notifications/*/list_changed`,
/// `notifications/resources/updated`, `notifications/cancelled`, or any
/// other method.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerNotification {
    /// The method.
    pub method: String,
    /// The params, as sent.
    pub params: Option<Value>,
}

/// The method only: params are the server's words.
impl fmt::Debug for ServerNotification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerNotification")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
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

    #[test]
    fn a_full_channel_drops_and_counts_without_waiting() {
        let (sender, mut notifications) = notification_channel(2);
        for _ in 0..5 {
            sender.deliver(ServerNotification {
                method: "notifications/message".into(),
                params: None,
            });
        }
        assert_eq!(notifications.dropped(), 3);
        assert!(notifications.try_recv().is_some());
        assert!(notifications.try_recv().is_some());
        assert!(notifications.try_recv().is_none());
    }
}
