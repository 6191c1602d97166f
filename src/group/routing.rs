//! Calls the group routes: a catalogue name to its server and the name
//! that server gave it, then the server's own client. A call that fails on
//! transport degrades its server at once; none is ever replayed.

use std::sync::Arc;

use serde_json::Value;

use mcp_connect_layers::policy::Refused;

use super::in_flight::CallUnderWay;
use super::{GroupError, HealthState, Member, ServerGroup};
use crate::protocol::{CallTool, CallToolResult, McpRequest, RequestKind};
use crate::session::Call;

impl ServerGroup {
    /// Sends a request to the server the catalogue routes it to, under the
    /// name that server gave its target: a `tools/call` by its tool's
    /// catalogue name, a `prompts/get` by its prompt's, a
    /// `resources/read` (and a subscription) to the one server whose
    /// listing has the URI. A request that names nothing (a listing, a
    /// `ping`) is [`GroupError::Unroutable`]: the group's
    /// [`catalogue`](Self::catalogue) is its listing.
    ///
    /// ```no_run
    /// # async fn run(group: mcp_connect::group::ServerGroup) -> Result<(), mcp_connect::group::GroupError> {
    /// use mcp_connect::protocol::{GetPrompt, ReadResource};
    ///
    /// let prompt = group.send(GetPrompt::new("docs__summarize")).await?;
    /// let notes = group.send(ReadResource::new("file:///notes.txt")).await?;
    /// # drop((prompt, notes)); Ok(()) }
    /// ```
    pub async fn send<R: McpRequest>(
        &self,
        call: impl Into<Call<R>>,
    ) -> Result<R::Output, GroupError> {
        let (mut request, options) = call.into().into_parts();
        let server = self.route(&mut request)?;
        let member = self.usable(&server)?;
        let outcome = member
            .client
            .send(Call::new(request).with_options(options))
            .await;
        self.observed(&member, outcome)
    }

    /// `tools/call` on the server the catalogue routes `name` to, with the
    /// name that server gave the tool ([`send`](Self::send) with a
    /// [`CallTool`]).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<CallToolResult, GroupError> {
        self.send(CallTool::new(name, arguments)).await
    }

    /// The server `request` goes to, its target renamed as that server
    /// named it.
    fn route<R: McpRequest>(&self, request: &mut R) -> Result<Arc<str>, GroupError> {
        let kind = request.kind();
        let name = || request.target().unwrap_or_default().to_owned();
        let catalogue = self.catalogue();
        let (server, own) = match kind {
            RequestKind::CallTool => {
                let tool = catalogue
                    .tool(&name())
                    .ok_or_else(|| GroupError::UnknownTool { name: name() })?;
                (Arc::clone(&tool.server), tool.item.name.clone())
            }
            RequestKind::GetPrompt => {
                let prompt = catalogue
                    .prompt(&name())
                    .ok_or_else(|| GroupError::UnknownPrompt { name: name() })?;
                (Arc::clone(&prompt.server), prompt.item.name.clone())
            }
            RequestKind::ReadResource | RequestKind::Subscribe | RequestKind::Unsubscribe => {
                let mut servers = catalogue.resource_servers(&name());
                return match servers.len() {
                    0 => Err(GroupError::UnknownResource),
                    1 => Ok(servers.remove(0)),
                    _ => Err(GroupError::AmbiguousResource { servers }),
                };
            }
            _ => {
                return Err(GroupError::Unroutable {
                    operation: kind.operation(),
                })
            }
        };
        request.retarget(&own);
        Ok(server)
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
