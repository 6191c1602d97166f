//! Calls the group routes: a catalogue name to its server and the name
//! that server gave it, then the server's own client. A call that fails on
//! transport degrades its server at once; none is ever replayed.

use std::sync::Arc;

use serde_json::Value;

use mcp_connect_layers::policy::Refused;

use super::in_flight::CallUnderWay;
use super::{GroupError, HealthState, Member, ServerGroup};
use crate::protocol::CallToolResult;
use crate::session::RequestOptions;

impl ServerGroup {
    /// `tools/call` on the server the catalogue routes `name` to, with the
    /// name that server gave the tool.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<CallToolResult, GroupError> {
        self.call_tool_with(name, arguments, &RequestOptions::new())
            .await
    }

    /// [`call_tool`](Self::call_tool) with per-request options.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: &Value,
        options: &RequestOptions,
    ) -> Result<CallToolResult, GroupError> {
        let catalogue = self.catalogue();
        let tool = catalogue
            .tool(name)
            .ok_or_else(|| GroupError::UnknownTool {
                name: name.to_owned(),
            })?;
        let member = self.usable(&tool.server)?;
        let outcome = member
            .client
            .call_tool_with(&tool.item.name, arguments, options)
            .await;
        self.observed(&member, outcome)
    }

    /// `prompts/get` on the server the catalogue routes `name` to.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&Value>,
    ) -> Result<Value, GroupError> {
        let catalogue = self.catalogue();
        let prompt = catalogue
            .prompt(name)
            .ok_or_else(|| GroupError::UnknownPrompt {
                name: name.to_owned(),
            })?;
        let member = self.usable(&prompt.server)?;
        let outcome = member.client.get_prompt(&prompt.item.name, arguments).await;
        self.observed(&member, outcome)
    }

    /// `resources/read` on the one server whose listing has `uri`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, GroupError> {
        let mut servers = self.catalogue().resource_servers(uri);
        let server = match servers.len() {
            0 => return Err(GroupError::UnknownResource),
            1 => servers.remove(0),
            _ => return Err(GroupError::AmbiguousResource { servers }),
        };
        let member = self.usable(&server)?;
        let outcome = member.client.read_resource(uri).await;
        self.observed(&member, outcome)
    }

    fn usable(&self, name: &Arc<str>) -> Result<CallUnderWay, GroupError> {
        let member = self.member(name)?;
        let state = member.health().state;
        if state.is_usable() {
            Ok(CallUnderWay::begin(member))
        } else {
            Err(GroupError::NotUsable {
                server: Arc::clone(name),
                state,
            })
        }
    }

    /// A routed call's outcome; a failure on transport degrades its server
    /// at once (its supervisor then builds a new session); a breaker's
    /// refusal shows as `CircuitOpen` until a call gets through again.
    fn observed<T>(
        &self,
        member: &Member,
        outcome: Result<T, crate::client::ClientError>,
    ) -> Result<T, GroupError> {
        let open = matches!(member.health().state, HealthState::CircuitOpen(_));
        match &outcome {
            Err(error @ crate::client::ClientError::Refused(Refused::CircuitOpen { .. }))
                if !open =>
            {
                let failure = error.failure();
                self.shared
                    .set_health(member, HealthState::CircuitOpen(failure));
            }
            Ok(_) if open => self.shared.set_health(member, HealthState::Ready),
            _ => {}
        }
        outcome.map_err(|error| {
            if let Some(failure) = member.call_failed(&error) {
                self.shared
                    .set_health(member, HealthState::Degraded(failure));
            }
            GroupError::Call {
                server: Arc::clone(&member.name),
                error: Box::new(error),
            }
        })
    }
}
