//! `list_changed`: when the group's listings change (a member settles,
//! reconnects with other tools, is added or removed at a reload), every
//! 2025 session's GET stream, and every 2026-07-28 `subscriptions/listen`
//! stream that asked for it (`crate::listen`), hears
//! `notifications/tools/list_changed` (and the prompts' and resources'
//! own) once.
//!
//! Coalesced: the group publishes a new catalogue at each member's change,
//! and a reload touches many members at once, so the gateway waits
//! [`SETTLE`] after the first change, takes what the listings are then,
//! and says only which of them differ from what it said last. A session
//! without a GET stream hears nothing (the specification puts unrelated
//! notifications there); it lists anew when it wants.

use std::sync::Weak;
use std::time::Duration;

use mcp_connect::group::ServerGroup;
use mcp_connect::protocol::{methods, RequestKind};
use serde_json::json;

use crate::answer::listing;
use crate::body::event;
use crate::inner::Inner;

/// How long after a change the gateway waits for the ones that follow it.
pub(crate) const SETTLE: Duration = Duration::from_millis(200);

/// Each notification and the listings it covers (in the order of
/// `crate::listen::FILTER_KEYS`).
const WATCHED: [(&str, &[RequestKind]); 3] = [
    (
        methods::NOTIFICATION_TOOLS_LIST_CHANGED,
        &[RequestKind::ListTools],
    ),
    (
        methods::NOTIFICATION_PROMPTS_LIST_CHANGED,
        &[RequestKind::ListPrompts],
    ),
    (
        methods::NOTIFICATION_RESOURCES_LIST_CHANGED,
        &[
            RequestKind::ListResources,
            RequestKind::ListResourceTemplates,
        ],
    ),
];

/// What each notification's listings are now (`None` for one that fails).
fn snapshot(group: &ServerGroup) -> Vec<Vec<Option<String>>> {
    (WATCHED.iter())
        .map(|(_, kinds)| {
            (kinds.iter())
                .map(|kind| listing(group, *kind).ok().map(|raw| raw.get().to_owned()))
                .collect()
        })
        .collect()
}

/// Tells the sessions of the gateway `inner` what changed, while it lives.
pub(crate) async fn forward(inner: Weak<Inner>) {
    let (mut changes, mut said) = match inner.upgrade() {
        Some(inner) => (inner.group.catalogue_changes(), snapshot(&inner.group)),
        None => return,
    };
    while changes.changed().await.is_ok() {
        tokio::time::sleep(SETTLE).await;
        changes.borrow_and_update();
        let Some(inner) = inner.upgrade() else { return };
        let now = snapshot(&inner.group);
        let changed = WATCHED.iter().zip(said.iter().zip(&now)).enumerate();
        for (which, ((method, _), (before, after))) in changed {
            if before != after {
                let message = json!({ "jsonrpc": "2.0", "method": method }).to_string();
                for down in inner.sessions.all() {
                    down.notify(event(&message));
                }
                inner.listeners.notify(which, method);
            }
        }
        said = now;
    }
}
