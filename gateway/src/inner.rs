//! What a gateway is made of once built: its group, its sessions and its
//! configuration, shared by every clone of the service and every task a
//! request starts.

use std::sync::OnceLock;
use std::time::Duration;

use mcp_connect::group::ServerGroup;

use crate::checks::{Allowed, BearerTokens};
use crate::modern::CacheHints;
use crate::sessions::Sessions;
use crate::SessionClients;

pub(crate) struct Inner {
    pub(crate) group: ServerGroup,
    pub(crate) sessions: Sessions,
    pub(crate) max_body: usize,
    pub(crate) hosts: Allowed,
    pub(crate) origins: Allowed,
    pub(crate) tokens: BearerTokens,
    #[cfg(feature = "oauth")]
    pub(crate) resource_server: Option<crate::ResourceServer>,
    pub(crate) cache_hints: CacheHints,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) keepalive: Duration,
    pub(crate) session_clients: Option<SessionClients>,
    /// Policy, quotas and audit.
    pub(crate) governance: crate::governance::Governance,
    /// The open 2026-07-28 `subscriptions/listen` streams.
    pub(crate) listeners: crate::listen::Listeners,
    /// 2026-07-28 requests waiting for the client's input.
    pub(crate) rounds: crate::rounds::Rounds,
    /// Set once the idle sweep and the `list_changed` forwarder run (from
    /// the first session on).
    pub(crate) sweeping: OnceLock<()>,
    #[cfg(feature = "otel")]
    pub(crate) telemetry: Option<crate::telemetry::ServerTelemetry>,
}

impl Inner {
    /// Where a request goes: the group, with `session`'s own clients when
    /// the gateway makes them, for `caller`.
    pub(crate) fn upstream<'a>(
        &'a self,
        session: Option<&'a std::sync::Arc<crate::downstream::Downstream>>,
        caller: crate::governance::Caller<'a>,
    ) -> crate::answer::Upstream<'a> {
        crate::answer::Upstream {
            group: &self.group,
            session: session
                .and_then(|down| (self.session_clients.as_ref()).map(|make| (down, make))),
            caller,
            governance: &self.governance,
        }
    }

    /// `answering` with `params` (request `id`'s `method`, in a session of
    /// `version`): with telemetry, in a SERVER span and counted.
    pub(crate) async fn traced<F>(
        &self,
        id: &serde_json::Value,
        method: &str,
        params: &mut Option<serde_json::Value>,
        version: &str,
        answering: impl FnOnce(Option<serde_json::Value>) -> F,
    ) -> crate::answer::Answer
    where
        F: std::future::Future<Output = crate::answer::Answer>,
    {
        #[cfg(feature = "otel")]
        if let Some(telemetry) = &self.telemetry {
            let group = &self.group;
            return (telemetry.traced(group, id, method, params, version, answering)).await;
        }
        let _ = (id, method, version);
        answering(params.take()).await
    }
}
impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("group", &self.group)
            .field("sessions", &self.sessions)
            .field("session_clients", &self.session_clients.is_some())
            .finish_non_exhaustive()
    }
}
