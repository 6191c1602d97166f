//! How one call reaches its server: through the server's own `McpClient`
//! (with the opt-in replay, or behind a breaker), or routed by catalogue
//! name through the `ServerGroup` the server is a member of, with the call
//! policies a long-running service puts on its members. And the facts of a
//! failed call the properties read, whichever way it failed.

use std::time::Duration;

use mcp_connect::client::{CallPolicies, ClientError};
use mcp_connect::group::{GroupError, HealthState, ServerGroup};
use mcp_connect::layers::recovery::Backoff;
use mcp_connect::McpClient;
use serde_json::json;

use crate::ledger::CallFailure;

/// Calls in flight to one group member; as many more wait (at most 5 s),
/// the rest are refused at once.
pub const BULKHEAD: usize = 4;
/// How long a group call may go without a word from its server.
pub const IDLE: Duration = Duration::from_secs(2);
/// The longest a group call may wait for a bulkhead slot.
pub const BULKHEAD_WAIT: Duration = Duration::from_secs(5);
/// The delay a throttled answer states (`Retry-After: 1`).
pub const RETRY_AFTER: Duration = Duration::from_secs(1);
/// The group's pace of trying a member again on its own after an outage.
pub const GROUP_RETRY: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(10));

/// The call policies every group member gets: a bulkhead, a breaker that
/// ignores tool errors, the throttled call sent once more after the delay
/// it states, and an idle timeout.
pub fn group_policies(cap: Duration) -> CallPolicies {
    CallPolicies::new()
        .with_max_in_flight(BULKHEAD)
        .with_breaker()
        .with_rate_limit_retry()
        .with_idle_timeout(IDLE, cap)
}

/// Where one call goes.
#[derive(Clone)]
pub enum Target {
    Client(McpClient),
    /// A member of `group`, named `server` there.
    Group {
        group: ServerGroup,
        server: &'static str,
    },
}

impl Target {
    /// `tools/call` of the servers' one tool for `call`.
    pub async fn call(&self, call: u64) -> Result<(), CallFailure> {
        let arguments = json!({ "call": call });
        match self {
            Target::Client(client) => match client.call_tool("work", &arguments).await {
                Ok(_) => Ok(()),
                Err(error) => Err(failure(&error, error.report().to_string())),
            },
            Target::Group { group, server } => {
                let (name, listed) = name(group, server);
                // Read with the catalogue, before any await.
                let ready = group
                    .health(server)
                    .is_some_and(|health| health.state == HealthState::Ready);
                match group.call_tool(&name, &arguments).await {
                    Ok(_) => Ok(()),
                    Err(error) => {
                        let text = error.report().to_string();
                        Err(match &error {
                            GroupError::Call { error, .. } => failure(error, text),
                            _ => CallFailure {
                                unlisted_while_ready: !listed && ready,
                                text,
                                ..CallFailure::default()
                            },
                        })
                    }
                }
            }
        }
    }
}

/// The catalogue's name for `server`'s tool, as a model would be given it
/// (the default naming prefixes it only while another member offers the
/// same name), and whether it is listed; its prefixed form when the
/// catalogue has none.
fn name(group: &ServerGroup, server: &str) -> (String, bool) {
    let catalogue = group.catalogue();
    let listed = catalogue
        .tools()
        .iter()
        .find(|tool| &*tool.server == server);
    match listed {
        Some(tool) => (tool.name.clone(), true),
        None => (format!("{server}__work"), false),
    }
}

/// The facts of a failed call the properties read, and its text: the
/// whole chain, as an application would print it.
fn failure(error: &ClientError, text: String) -> CallFailure {
    CallFailure {
        connect_failed: matches!(error, ClientError::Connect(_)),
        session_lost: error.is_session_lost(),
        http_status: error.call_error().and_then(|e| e.http_status()),
        refused_again: matches!(error, ClientError::RefusedAgain { .. }),
        text,
        ..CallFailure::default()
    }
}
