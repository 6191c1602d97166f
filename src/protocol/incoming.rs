//! What arrives that is not a reply, one kind each: notifications
//! ([`NotificationKind`], a server's and the client's own) and a server's
//! requests to the client ([`ServerRequestKind`]). Like [`RequestKind`](super::RequestKind) for
//! what the client sends, these are the one place an incoming method
//! string is read: every rule after asks the kind.

use super::methods;

/// A notification's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotificationKind {
    /// `notifications/progress`.
    Progress,
    /// `notifications/message`: a log line.
    Message,
    /// `notifications/cancelled`.
    Cancelled,
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated,
    /// `notifications/subscriptions/acknowledged` (2026-07-28 era).
    SubscriptionsAcknowledged,
    /// `notifications/initialized` (the client's, legacy era).
    Initialized,
    /// Any other.
    Other,
}

impl NotificationKind {
    /// The kind of a notification named by its method.
    pub fn of(method: &str) -> NotificationKind {
        match method {
            methods::NOTIFICATION_PROGRESS => NotificationKind::Progress,
            methods::NOTIFICATION_MESSAGE => NotificationKind::Message,
            methods::NOTIFICATION_CANCELLED => NotificationKind::Cancelled,
            methods::NOTIFICATION_TOOLS_LIST_CHANGED => NotificationKind::ToolsListChanged,
            methods::NOTIFICATION_PROMPTS_LIST_CHANGED => NotificationKind::PromptsListChanged,
            methods::NOTIFICATION_RESOURCES_LIST_CHANGED => NotificationKind::ResourcesListChanged,
            methods::NOTIFICATION_RESOURCES_UPDATED => NotificationKind::ResourceUpdated,
            methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => {
                NotificationKind::SubscriptionsAcknowledged
            }
            methods::INITIALIZED => NotificationKind::Initialized,
            _ => NotificationKind::Other,
        }
    }
}

/// A request the server sends the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerRequestKind {
    /// `ping`.
    Ping,
    /// `sampling/createMessage`.
    CreateMessage,
    /// `elicitation/create`.
    Elicit,
    /// `roots/list`.
    ListRoots,
    /// Any other.
    Other,
}

impl ServerRequestKind {
    /// The kind of a server request named by its method.
    pub fn of(method: &str) -> ServerRequestKind {
        match method {
            methods::PING => ServerRequestKind::Ping,
            methods::SAMPLING_CREATE_MESSAGE => ServerRequestKind::CreateMessage,
            methods::ELICITATION_CREATE => ServerRequestKind::Elicit,
            methods::ROOTS_LIST => ServerRequestKind::ListRoots,
            _ => ServerRequestKind::Other,
        }
    }
}
