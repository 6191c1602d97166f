//! The lines `--config` prints of its servers: each as it settles (or
//! why it did not), a reload's difference, and the merged catalogue.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_connect::config::{ServerConfig, ServersConfig};
use mcp_connect::group::{Catalogue, HealthState, ItemKind, LeftOutReason, Server, ServerGroup};
use mcp_connect::layers::Failure;
use serde_json::json;
use tokio::time::Instant;

use super::super::output::{chain, failure_json, shown, Printer};

/// Applies the file read again to the group as a difference, and says
/// what changed by server name (never a URL, a header or a variable). A
/// file that cannot be read now changes nothing.
pub(crate) async fn reload(
    printer: &Printer,
    group: &ServerGroup,
    reloaded: Result<ServersConfig, mcp_connect::config::ConfigFileError>,
    chosen: &dyn Fn(&str) -> bool,
    member: &dyn Fn(&ServerConfig) -> Server,
) {
    let config = match reloaded {
        Ok(config) => config,
        Err(error) => {
            let problem = chain(&error);
            printer.line(
                &format!("reload refused, nothing changed: {}", shown(&problem)),
                json!({ "event": "reload", "outcome": "refused", "error": problem }),
            );
            return;
        }
    };
    let servers = config.servers().filter(|s| chosen(s.name())).map(member);
    match group.reconcile(servers).await {
        Ok(done) => {
            let names = |names: &[Arc<str>]| -> Vec<String> {
                names.iter().map(|name| shown(name).into_owned()).collect()
            };
            let (added, removed, replaced) = (
                names(&done.added),
                names(&done.removed),
                names(&done.replaced),
            );
            printer.line(
                &format!(
                    "reloaded: added [{}], removed [{}], restarted [{}], {} unchanged",
                    added.join(", "),
                    removed.join(", "),
                    replaced.join(", "),
                    done.unchanged.len()
                ),
                json!({ "event": "reload", "outcome": "applied", "added": added,
                        "removed": removed, "restarted": replaced,
                        "unchanged": done.unchanged.len() }),
            );
        }
        Err(error) => {
            let problem = chain(&error);
            printer.line(
                &format!("reload refused: {}", shown(&problem)),
                json!({ "event": "reload", "outcome": "refused", "error": problem }),
            );
        }
    }
}

/// Prints a server's line the first time it settles (ready, failed,
/// needing authorization, or degraded before it was ever ready: its
/// session broke while listing; the group keeps trying, the command
/// reports it).
pub(super) async fn settle(
    printer: &Printer,
    group: &ServerGroup,
    settled: &mut BTreeMap<Arc<str>, bool>,
    name: Arc<str>,
    state: HealthState,
    started: Instant,
) {
    if settled.contains_key(&name) {
        return;
    }
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let ready = match state {
        HealthState::Ready => {
            established(printer, group, &name, elapsed_ms).await;
            true
        }
        HealthState::Idle => {
            let tools = group.listed_tools(&name).unwrap_or(0);
            printer.line(
                &format!(
                    "{}: lazy: not connected, {tools} tools remembered",
                    shown(&name)
                ),
                json!({ "event": "server", "name": &*name, "outcome": "idle",
                        "elapsed_ms": elapsed_ms, "tools": tools }),
            );
            true
        }
        HealthState::Failed(failure)
        | HealthState::NeedsAuthorization(failure)
        | HealthState::Degraded(failure) => {
            not_established(printer, group, &name, &failure, elapsed_ms);
            false
        }
        _ => return,
    };
    settled.insert(name, ready);
}

/// A server's line once it is ready: its era, version and transport, the
/// time since the group started, and how many tools it listed.
async fn established(printer: &Printer, group: &ServerGroup, name: &str, elapsed_ms: f64) {
    let Some(client) = group.client(name) else {
        return;
    };
    // Ready: the session exists, so this does not establish.
    let Ok((session, _)) = client.session().await else {
        return;
    };
    let tools = group.listed_tools(name).unwrap_or(0);
    printer.line(
        &format!(
            "{}: established: {} era, protocol {}, over {}, {elapsed_ms:.3} ms, {tools} tools",
            shown(name),
            session.era(),
            session.protocol_version(),
            session.transport_kind().as_str(),
        ),
        json!({
            "event": "server", "name": name, "outcome": "established",
            "era": session.era().to_string(),
            "protocol_version": session.protocol_version().to_string(),
            "transport": session.transport_kind().as_str(),
            "elapsed_ms": elapsed_ms,
            "tools": tools,
        }),
    );
}

pub(super) fn not_established(
    printer: &Printer,
    group: &ServerGroup,
    name: &str,
    failure: &Failure,
    elapsed_ms: f64,
) {
    let why = match group.last_error(name) {
        Some(error) => chain(&*error),
        None => failure.kind.as_str().to_owned(),
    };
    printer.line(
        &format!(
            "{}: failed: {}, {elapsed_ms:.3} ms",
            shown(name),
            shown(&why)
        ),
        json!({
            "event": "server", "name": name, "outcome": "failed", "elapsed_ms": elapsed_ms,
            "failure": failure_json(failure), "error": why,
        }),
    );
}

/// A line for each tool filter pattern that matched none of its server's
/// tools: a warning, not a failure.
pub(super) fn unmatched_patterns(printer: &Printer, catalogue: &Catalogue) {
    for (server, pattern) in catalogue.unmatched_patterns() {
        printer.line(
            &format!(
                "{}: the tool pattern {} matches none of its tools",
                shown(server),
                shown(pattern)
            ),
            json!({ "event": "unmatched_pattern", "name": &**server, "pattern": pattern }),
        );
    }
}

/// The tools that best match `query`, best first: name, server, score and
/// one line about each.
pub(super) fn search_tools(printer: &Printer, group: &ServerGroup, query: &str, limit: usize) {
    for hit in group.search_tools(query, limit) {
        let summary = hit.summary();
        printer.line(
            &format!(
                "tool {} ({}) {:.2}: {}",
                shown(&hit.tool.name),
                shown(&hit.tool.server),
                hit.score,
                shown(&summary)
            ),
            json!({ "event": "search", "name": hit.tool.name, "server": &*hit.tool.server,
                    "score": hit.score, "summary": summary }),
        );
    }
}

/// The merged catalogue: one line per tool under the name a caller uses,
/// then what was left out and why.
pub(super) fn list_tools(printer: &Printer, catalogue: &Catalogue) {
    for tool in catalogue.tools() {
        let original = &tool.item.name;
        let human = if &tool.name == original {
            format!("tool {} ({})", shown(&tool.name), shown(&tool.server))
        } else {
            format!(
                "tool {} ({}: {})",
                shown(&tool.name),
                shown(&tool.server),
                shown(original)
            )
        };
        printer.line(
            &human,
            json!({ "event": "tool", "name": tool.name, "server": &*tool.server,
                    "server_name": original }),
        );
    }
    for left in catalogue
        .left_out()
        .iter()
        .filter(|l| l.kind == ItemKind::Tool)
    {
        let (reason, tried) = match &left.reason {
            LeftOutReason::InvalidName(name) => ("invalid-name", name),
            LeftOutReason::Collision(name) => ("collision", name),
            _ => ("other", &left.name),
        };
        let with: Vec<&str> = left.others.iter().map(|server| &**server).collect();
        let also = match with.is_empty() {
            true => String::new(),
            false => format!(", also offered by {}", shown(&with.join(", "))),
        };
        printer.line(
            &format!(
                "left out: {} ({}): {reason} as {}{also}",
                shown(&left.name),
                shown(&left.server),
                shown(tried)
            ),
            json!({ "event": "left_out", "server": &*left.server, "server_name": left.name,
                    "reason": reason, "name": tried, "with": with }),
        );
    }
}
