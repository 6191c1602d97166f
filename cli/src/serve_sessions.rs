//! Each downstream session's own clients of the members `serve` fronts:
//! made from the config file's entries as the latest reload left them,
//! with the gateway's relaying handler and listener on the request, and
//! the entry's call policies. A member's session is then one client's,
//! ended with it, and a member's questions reach that client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_connect::client::CallPolicies;
use mcp_connect::config::ServersConfig;
use mcp_connect::{ConnectRequest, Establish, McpClient};
use mcp_connect_gateway::SessionRelay;

use super::config::Members;

/// What a member is reached with: its request and call policies.
type Entry = (ConnectRequest, CallPolicies);

/// The entries by server name, replaced at each reload.
#[derive(Clone, Default)]
pub(super) struct Entries(Arc<Mutex<HashMap<String, Entry>>>);

impl Entries {
    /// Takes the file's servers (after a start or a reload).
    pub(super) fn refresh(&self, config: &ServersConfig, members: &Members<'_>) {
        let entries = (config.servers())
            .map(|server| {
                let entry = (members.request(server), server.policies().clone());
                (server.name().to_owned(), entry)
            })
            .collect();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = entries;
    }

    /// The function the gateway makes a session's clients with.
    pub(super) fn maker(
        &self,
        stack: Establish,
    ) -> impl Fn(&str, SessionRelay) -> Option<McpClient> + Send + Sync + 'static {
        let entries = self.clone();
        move |name, relay| {
            let (request, policies) = (entries.0.lock())
                .unwrap_or_else(PoisonError::into_inner)
                .get(name)?
                .clone();
            let request = relay.apply(request);
            let mut client = McpClient::builder(stack.clone(), request);
            if !policies.is_empty() {
                client = client.with_policies(policies);
            }
            Some(client.build())
        }
    }
}
