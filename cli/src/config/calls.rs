//! `--config --call-tool`: the call goes as soon as the server it is routed
//! to is ready (a stuck server elsewhere delays it no more), saying what it
//! waits for meanwhile; each call prints its progress as it comes.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_connect::group::{HealthState, ServerGroup};
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::CallTool;
use mcp_connect::session::{Call, RequestOptions};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::output::{shown, Printer};
use super::lines::settle;

/// What a `--call-tool` waits for: its tool's server (or `--server`'s).
#[derive(Clone, Copy)]
pub(super) struct Route<'a> {
    pub(super) tool: &'a str,
    pub(super) server: Option<&'a str>,
}

impl Route<'_> {
    /// Whether the call can be routed now: its server is usable (and, by
    /// catalogue name, the tool is listed).
    fn ready(&self, group: &ServerGroup) -> bool {
        let server: Option<Arc<str>> = match self.server {
            Some(server) => Some(server.into()),
            None => (group.catalogue().tool(self.tool)).map(|tool| Arc::clone(&tool.server)),
        };
        (server.and_then(|server| group.health(&server)))
            .is_some_and(|health| health.state.is_usable())
    }
}

/// How the first settle ended.
pub(super) struct Start {
    /// Each server's first settled state (ready or not), as printed.
    pub(super) settled: BTreeMap<Arc<str>, bool>,
    /// The run's deadline or the first signal ended it.
    pub(super) ended: Option<FailureKind>,
}

/// Prints each server's line as it settles, until every server has, or
/// (with a call to make) until the call's server is ready and no required
/// server is still starting; or until `deadline` or the first signal.
#[allow(clippy::too_many_arguments)]
pub(super) async fn wait_for_start(
    printer: &Printer,
    group: &ServerGroup,
    count: usize,
    required: &[Arc<str>],
    started: Instant,
    deadline: Instant,
    cancel: &CancellationToken,
    route: Option<Route<'_>>,
) -> Start {
    let mut changes = group.health_changes();
    let mut settled: BTreeMap<Arc<str>, bool> = BTreeMap::new();
    let mut missed = 0;
    let mut next: Vec<Arc<str>> = group.names();
    let mut told = false;
    let ended = loop {
        for name in next.drain(..) {
            if let Some(health) = group.health(&name) {
                settle(printer, group, &mut settled, name, health.state, started).await;
            }
        }
        if settled.len() >= count {
            break None;
        }
        if let Some(route) = route {
            let starting = |name: &Arc<str>| {
                (group.health(name)).is_some_and(|health| health.state == HealthState::Connecting)
            };
            if route.ready(group) && !required.iter().any(starting) {
                break None;
            }
            if !told {
                told = true;
                waiting(printer, group, route);
            }
        }
        tokio::select! {
            change = changes.recv() => match change {
                Some(change) if changes.missed() == missed => next.push(change.server),
                Some(_) => {
                    missed = changes.missed();
                    next = group.names();
                }
                None => break None,
            },
            () = tokio::time::sleep_until(deadline) => break Some(FailureKind::Timeout),
            () = cancel.cancelled() => break Some(FailureKind::Cancelled),
        }
    };
    Start { settled, ended }
}

/// Says what the call waits for: its server, or the servers still starting
/// when its tool is not listed yet.
fn waiting(printer: &Printer, group: &ServerGroup, route: Route<'_>) {
    let starting: Vec<String> = (group.names().iter())
        .filter(|name| (group.health(name)).is_some_and(|h| h.state == HealthState::Connecting))
        .map(|name| name.to_string())
        .collect();
    let known = (route.server.map(str::to_owned))
        .or_else(|| (group.catalogue().tool(route.tool)).map(|tool| tool.server.to_string()));
    let what = match &known {
        Some(server) => format!("its server {}", shown(server)),
        None => format!(
            "a server to list it (starting: {})",
            (starting.iter().map(|s| shown(s).into_owned()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    printer.line(
        &format!("call {}: waiting for {what}", shown(route.tool)),
        json!({ "event": "waiting", "tool": route.tool, "server": known,
                "starting": starting }),
    );
}

/// `--call-tool NAME` once: routed by catalogue name, or with `--server`
/// by that server's own tool name; its progress printed as it comes; true
/// when the tool answered without error.
pub(super) async fn call_tool(
    printer: &Arc<Printer>,
    group: &ServerGroup,
    route: Route<'_>,
    n: u32,
    arguments: &serde_json::Value,
) -> bool {
    let shown_progress = Arc::clone(printer);
    let options =
        RequestOptions::new().with_progress(move |p| shown_progress.progress(p.progress, p.total));
    let name = route.tool;
    match route.server.and_then(|server| group.client(server)) {
        Some(client) => {
            let call = Call::new(CallTool::new(name, arguments)).with_options(options);
            let result = client.send(call).await;
            let generation = client.generation();
            let ok = matches!(&result, Ok(r) if !r.is_error);
            printer.call(n, name, &result, generation, false);
            ok
        }
        None => {
            let call = Call::new(CallTool::new(name, arguments)).with_options(options);
            let result = group.send(call).await;
            let ok = matches!(&result, Ok(r) if !r.is_error);
            // Where the catalogue routed it, and on which of its sessions.
            let server = (group.catalogue().tool(name)).map(|tool| Arc::clone(&tool.server));
            let generation = (server.as_deref())
                .and_then(|server| group.client(server))
                .map(|client| client.generation());
            let route = server.as_deref().zip(generation);
            printer.routed_call(n, name, route, &result);
            ok
        }
    }
}

/// The line of each server the start did not wait for (a call went first):
/// how it settled since, or that it is still starting.
pub(super) async fn after_the_call(
    printer: &Printer,
    group: &ServerGroup,
    settled: &mut BTreeMap<Arc<str>, bool>,
    started: Instant,
) {
    for name in group.names() {
        let Some(health) = group.health(&name) else {
            continue;
        };
        if settled.contains_key(&name) || health.state != HealthState::Connecting {
            settle(printer, group, settled, name, health.state, started).await;
            continue;
        }
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        printer.line(
            &format!("{}: still starting, {elapsed_ms:.3} ms", shown(&name)),
            json!({ "event": "server", "name": &*name, "outcome": "starting",
                    "elapsed_ms": elapsed_ms }),
        );
    }
}
