//! What the application gives the group for one server ([`Server`]) and
//! the opt-in keepalive ([`Keepalive`]) its supervisor pings with.

use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::recovery::Backoff;
use serde_json::value::RawValue;
use tower::{Layer, Service};

use super::filter::ToolFilter;
use crate::client::{Call, CallPolicies, CallService, McpClientBuilder};
use crate::config::ServerConfig;
use crate::establish::Establish;
use crate::request::ConnectRequest;
use crate::transport::error::BoxError;

/// A server to add to a group: its own stack (deadline, recovery,
/// classifier, era cache), its own request (target, limits, auth,
/// handler) and its tool filter. Its name is the request's
/// ([`ConnectRequest::with_name`]).
pub struct Server {
    pub(super) name: Arc<str>,
    pub(super) stack: Establish,
    pub(super) request: ConnectRequest,
    pub(super) filter: ToolFilter,
    /// The call policies its client gets, in order.
    pub(super) call_layers: Vec<CallLayer>,
    /// Its own pace of trying again after an outage.
    pub(super) retry: Option<Backoff>,
    /// What a reload compares: a fingerprint of the target and of what
    /// the application added with [`Server::with_revision`].
    pub(super) revision: [u8; 16],
    /// Its target's own fingerprint (where its listing is remembered).
    pub(super) target: [u8; 16],
    /// Connected on its first call, not at start.
    pub(super) lazy: bool,
    /// The group's start fails without it.
    pub(super) required: bool,
    /// Closed after this long without a routed call.
    pub(super) idle_close: Option<Duration>,
    /// What its tools' and prompts' names are prefixed with, instead of
    /// its name.
    pub(super) prefix: Option<Arc<str>>,
}

/// Sets one thing up on a member's client (a layer of its call path, its
/// cool-down), each time the member's client is made.
pub(super) type CallLayer = Arc<dyn Fn(McpClientBuilder) -> McpClientBuilder + Send + Sync>;

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("stack", &self.stack)
            .field("request", &self.request)
            .field("filter", &self.filter)
            .field("call_layers", &self.call_layers.len())
            .finish()
    }
}

impl Server {
    /// `request` established through `stack`, named as the request is.
    pub fn new(stack: Establish, request: ConnectRequest) -> Self {
        let target = target_revision(&request);
        Server {
            name: Arc::from(request.name()),
            revision: target,
            target,
            stack,
            request,
            filter: ToolFilter::new(),
            call_layers: Vec::new(),
            retry: None,
            lazy: false,
            required: false,
            idle_close: None,
            prefix: None,
        }
    }

    /// Prefixes its tools' and prompts' names with `prefix` instead of
    /// its name, where the group's [`Naming`](super::Naming) prefixes
    /// (`gh__create_issue` for a server named `github`).
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(Arc::from(prefix.into()));
        self
    }

    /// What a config entry says of its server: its request, revision,
    /// `lazy`, `required`, `keepTrying`, `coolDown`, its tool and tag lists
    /// as the filter, and its `policies` block (bulkhead, breaker,
    /// rate-limit retry, idle timeout, hedging, replicas) on its call path,
    /// established through `stack`.
    /// An application that changes the request first (a handler, its own
    /// limits) uses [`Server::new`] and [`Server::configured_by`].
    pub fn from_config(stack: Establish, server: &ServerConfig) -> Self {
        Server::new(stack, server.request()).configured_by(server)
    }

    /// Takes what `server`'s entry says beyond its request: its revision,
    /// and `lazy`, `required`, the tool lists and the call policies added
    /// to what this server already has (a filter set before keeps its
    /// patterns).
    #[must_use]
    pub fn configured_by(mut self, server: &ServerConfig) -> Self {
        self = self.with_revision(server.revision());
        self.filter = std::mem::take(&mut self.filter)
            .include(server.included_tools().iter().cloned())
            .exclude(server.excluded_tools().iter().cloned())
            .include_tags(server.included_tags().iter().cloned())
            .exclude_tags(server.excluded_tags().iter().cloned());
        if server.is_lazy() {
            self = self.lazy();
        }
        if let Some(prefix) = server.prefix() {
            self = self.with_prefix(prefix);
        }
        if let Some(backoff) = server.keep_trying() {
            self = self.with_retry(backoff);
        }
        if let Some(cool_down) = server.cool_down() {
            self = self.with_cool_down(cool_down);
        }
        self.required |= server.is_required();
        let policies = server.policies();
        if !policies.is_empty() {
            self = self.with_policies(policies.clone());
        }
        self
    }

    /// Puts `policies` on this server's call path, after any layer put
    /// there before.
    #[must_use]
    pub fn with_policies(mut self, policies: CallPolicies) -> Self {
        self.call_layers
            .push(Arc::new(move |client: McpClientBuilder| {
                client.with_policies(policies.clone())
            }));
        self
    }

    /// Makes the group's start fail when this server fails it:
    /// [`ServerGroup::settled_required`](super::ServerGroup::settled_required)
    /// names it.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Connects this server on the first call routed to it (one
    /// establishment however many first calls arrive together), not at
    /// start. Until then it is [`Idle`](super::HealthState::Idle), with the
    /// tools the group remembers of it (see
    /// [`ServerGroupBuilder::with_remembered_listings`](super::ServerGroupBuilder::with_remembered_listings))
    /// in the catalogue.
    #[must_use]
    pub fn lazy(mut self) -> Self {
        self.lazy = true;
        self
    }

    /// Closes this server's session after `idle` without a call routed to
    /// it, and leaves it [`Idle`](super::HealthState::Idle), its tools
    /// still in the catalogue, until the next call connects it again.
    #[must_use]
    pub fn with_idle_close(mut self, idle: Duration) -> Self {
        self.idle_close = Some(idle);
        self
    }

    /// Adds `revision` to what [`ServerGroup::reconcile`](super::ServerGroup::reconcile)
    /// compares: by default the target (the URL with its query and
    /// userinfo, every header, the command, its arguments, environment and
    /// working directory), so a change there restarts the server; give
    /// here whatever else should (a config entry's
    /// [`revision`](crate::config::ServerConfig::revision), a description
    /// of the policies put on it).
    #[must_use]
    pub fn with_revision(mut self, revision: impl AsRef<[u8]>) -> Self {
        self.revision = crate::transport::redact::fingerprint(&[&self.revision, revision.as_ref()]);
        self
    }

    /// This server's own pace of trying again on its own after an outage
    /// (see [`ServerGroupBuilder::with_retry`](super::ServerGroupBuilder::with_retry)).
    #[must_use]
    pub fn with_retry(mut self, backoff: Backoff) -> Self {
        self.retry = Some(backoff);
        self
    }

    /// This server's client's cool-down between failed reconnects after
    /// its session died (see [`McpClientBuilder::with_cool_down`]).
    #[must_use]
    pub fn with_cool_down(mut self, cool_down: Backoff) -> Self {
        self.call_layers
            .push(Arc::new(move |client: McpClientBuilder| {
                client.with_cool_down(cool_down)
            }));
        self
    }

    /// Puts `layer` on this server's call path (see
    /// [`McpClientBuilder::with_call_layer`]): a bulkhead, a breaker (the group's
    /// health then shows [`CircuitOpen`](super::HealthState::CircuitOpen)
    /// while it refuses calls), replicas, tower's own.
    #[must_use]
    pub fn with_call_layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<CallService> + Clone + Send + Sync + 'static,
        L::Service: Service<Call, Response = Box<RawValue>> + Clone + Send + Sync + 'static,
        <L::Service as Service<Call>>::Error: Into<BoxError>,
        <L::Service as Service<Call>>::Future: Send + 'static,
    {
        self.call_layers
            .push(Arc::new(move |client: McpClientBuilder| {
                client.with_call_layer(layer.clone())
            }));
        self
    }

    /// Shows only the tools `filter` allows in the catalogue.
    #[must_use]
    pub fn with_filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// The server's name in the group.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The target's fingerprint: its identity and its `Authorization` header
/// (which the identity leaves to the authorization context).
fn target_revision(request: &ConnectRequest) -> [u8; 16] {
    let target = request.target();
    let authorization = target
        .headers()
        .and_then(|headers| headers.get(http::header::AUTHORIZATION))
        .map_or(&[][..], |value| value.as_bytes());
    crate::transport::redact::fingerprint(&[target.identity().as_bytes(), authorization])
}

/// A `ping` keepalive for long-idle legacy sessions: off unless asked for
/// ([`ServerGroupBuilder::with_keepalive`](super::ServerGroupBuilder::with_keepalive)).
///
/// Every `interval` each ready legacy session is pinged (each ping bounded
/// by the interval); after `failures` failed pings in a row, or at once
/// when a ping shows the session gone, the server is degraded and a new
/// session built. Sessions of the 2026-07-28 era are never pinged: that
/// era has no `ping`, and no session to keep alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub(super) interval: Duration,
    pub(super) failures: u32,
}

impl Keepalive {
    /// A ping every `interval`, degrading after 3 failures in a row.
    pub fn every(interval: Duration) -> Self {
        Keepalive {
            interval,
            failures: 3,
        }
    }

    /// Degrades after `failures` failed pings in a row (at least 1).
    #[must_use]
    pub fn failing_after(mut self, failures: u32) -> Self {
        self.failures = failures.max(1);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServersConfig;

    #[tokio::test]
    async fn an_entry_adds_to_what_the_server_already_has() {
        let config = ServersConfig::parse(
            r#"{ "mcpServers": { "a": { "url": "http://127.0.0.1:1/", "excludeTools": ["rm"],
                "exclude_tags": ["admin"], "keepTrying": { "baseMs": 200, "maxMs": 5000 } } } }"#,
        )
        .unwrap();
        let entry = config.get("a").unwrap();
        let stack = crate::EstablishBuilder::new(crate::Connector::new()).build();
        let server = Server::new(stack, entry.request())
            .with_filter(ToolFilter::new().exclude(["x"]))
            .required()
            .configured_by(entry);
        assert!(server.required, "the entry does not say required: kept");
        assert!(!server.filter.allows("x") && !server.filter.allows("rm"));
        assert!(server.filter.allows("read"));
        let tagged: crate::protocol::Tool = serde_json::from_value(
            serde_json::json!({ "name": "read", "_meta": { "fastmcp": { "tags": ["admin"] } } }),
        )
        .unwrap();
        assert!(
            !server.filter.allows_tool(&tagged),
            "the entry's tag filter"
        );
        let pace = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
        assert_eq!(server.retry, Some(pace), "the entry's keepTrying");
    }
}
