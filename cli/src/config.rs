//! `--config FILE`: every server of an `mcpServers` file in one
//! [`ServerGroup`], each through its own copy of the stack (its own
//! deadline, its own classified failure, its own recovery), a line for each
//! as it settles, then, with `--list-tools`, the merged catalogue, then a
//! summary. A slow or stalled server delays no other line, only the
//! summary, and never past its own deadline.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_connect::config::{ServerConfig, ServersConfig};
use mcp_connect::group::{
    Catalogue, GroupError, HealthState, ItemKind, LeftOutReason, Server, ServerGroup,
};
use mcp_connect::layers::{CancelSource, Failure, FailureKind, Stage};
use mcp_connect::{Connector, EstablishBuilder};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::output::{chain, failure_json, shown, Printer};
use super::prompt::Answers;
use super::reload::ReloadTriggers;
use super::request::{handler_from, http_client, recovery_from, with_limits_and_versions};
use super::signals::{Received, Signals};
use super::{usage, CLOSE_BOUND};

/// Runs `--config`; the exit code as the option's help says.
pub(super) async fn run(
    args: &Args,
    path: &Path,
    printer: &Printer,
    cancel: &CancellationToken,
    signals: &Signals,
    tool_args: &serde_json::Value,
) -> ExitCode {
    // One connector (one pooled HTTP client) for all, the registry too;
    // the stack's deadline starts anew for every server it establishes.
    let client = match http_client(args, false) {
        Ok(client) => client,
        Err(message) => return usage(&message),
    };
    let options = match super::request::registry_options(args) {
        Ok(options) => options,
        Err(message) => return usage(&message),
    };
    let bound = super::prompt::Bounded {
        cancel: cancel.clone(),
        limit: args.deadline,
    };
    let mut answers = Answers::new(path, args.standard, bound);
    let config = match answers.read_asking(&client, &options).await {
        Ok(config) => config,
        // The first signal ended the read: exit as a signal does.
        Err(_) if signals.received().is_some() => {
            let signal = signals.received().expect("received");
            return ExitCode::from(signal.exit_code());
        }
        Err(error) => return usage(&format!("--config: {}", chain(&error))),
    };
    if args.check {
        return super::check::run(&config, printer);
    }
    let mut triggers = match ReloadTriggers::new(path, args.watch_config) {
        Ok(triggers) => triggers,
        Err(error) => return usage(&format!("--watch-config: {}", chain(&error))),
    };
    let chosen = |name: &str| args.server.as_deref().is_none_or(|wanted| wanted == name);
    let invalid: Vec<_> = config.errors().filter(|e| chosen(e.name())).collect();
    let servers: Vec<_> = config.servers().filter(|s| chosen(s.name())).collect();
    let disabled: Vec<_> = config.disabled().filter(|s| chosen(s.name())).collect();
    if args.server.is_some() && invalid.is_empty() && servers.is_empty() && disabled.is_empty() {
        return usage("--server: the config file has no server of that name");
    }
    let handler = match handler_from(args) {
        Ok(handler) => handler,
        Err(message) => return usage(&message),
    };
    for error in &invalid {
        let problem = chain(error.problem());
        printer.line(
            &format!("{}: not usable: {}", shown(error.name()), shown(&problem)),
            json!({ "event": "server", "name": error.name(), "outcome": "invalid",
                    "error": problem }),
        );
    }
    for server in &disabled {
        printer.line(
            &format!("{}: disabled in the config file", shown(server.name())),
            json!({ "event": "server", "name": server.name(), "outcome": "disabled" }),
        );
    }
    let stack = EstablishBuilder::new(Connector::with_client(client.clone()))
        .with_recovery(recovery_from(args))
        .with_deadline(args.deadline)
        .build();
    let remembered = match super::stores::remembered_listings(args).await {
        Ok(listings) => listings,
        Err(message) => return usage(&message),
    };
    let group = match &remembered {
        Some(listings) => ServerGroup::builder()
            .with_remembered_listings(listings.clone())
            .build(),
        None => ServerGroup::new(),
    };
    let mut changes = group.health_changes();
    let started = Instant::now();
    // What the file says of a server, as the group gets it: the same on a
    // reload, so an entry that did not change is the same revision.
    let member = |server: &ServerConfig| {
        let mut request = with_limits_and_versions(server.request(), args);
        if let Some(oauth) = server.oauth() {
            request = super::authorize::with_oauth(request, server.name(), oauth);
        }
        let limits = server.limits_over(*request.limits());
        let request = request
            .with_limits(limits)
            .with_handler(handler.clone())
            .with_cancellation(cancel.clone());
        Server::new(stack.clone(), request).configured_by(server)
    };
    for server in &servers {
        // Names in a config file are unique: this cannot be a duplicate.
        let _ = group.add(member(server));
    }
    // Each server's first settled state, printed as it comes. A change
    // names its server, so each costs one look, whatever the number of
    // servers; only a reader that fell behind the stream looks at every
    // server again. Everything ends at the run's deadline (`--deadline`
    // from the start: a listing that never answers included) or at the
    // first signal.
    let mut settled: BTreeMap<Arc<str>, bool> = BTreeMap::new();
    let run_deadline = started + args.deadline;
    let mut missed = 0;
    let mut next: Vec<Arc<str>> = group.names();
    let ended = loop {
        for name in next.drain(..) {
            if let Some(health) = group.health(&name) {
                settle(printer, &group, &mut settled, name, health.state, started).await;
            }
        }
        if settled.len() >= servers.len() {
            break None;
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
            () = tokio::time::sleep_until(run_deadline) => break Some(FailureKind::Timeout),
            () = cancel.cancelled() => break Some(FailureKind::Cancelled),
        }
    };
    if let Some(kind) = ended {
        // What had not settled ends with the run: a failure of its own.
        let source = match kind {
            FailureKind::Timeout => CancelSource::Deadline,
            _ => CancelSource::Caller,
        };
        let failure = Failure::new(Stage::REQUEST, kind).with_cancel_source(source);
        for name in group.names() {
            if let std::collections::btree_map::Entry::Vacant(unsettled) = settled.entry(name) {
                let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
                not_established(printer, &group, unsettled.key(), &failure, elapsed_ms);
                unsettled.insert(false);
            }
        }
    }
    if args.list_tools {
        list_tools(printer, &group.catalogue());
    }
    // A required server that did not start fails the start: no call.
    let required_failed = match ended {
        None => group.settled_required().await.err(),
        Some(_) => None,
    };
    if let Some(GroupError::NotUsable { server, .. }) = &required_failed {
        printer.line(
            &format!(
                "{}: required and not started; nothing is called",
                shown(server)
            ),
            json!({ "event": "required", "name": &**server, "outcome": "failed" }),
        );
    }
    let mut called = required_failed.is_none();
    if let (Some(name), None, true) = (&args.call_tool, ended, called) {
        let calls = async {
            let mut ok = true;
            for n in 1..=args.repeat {
                if n > 1 {
                    let until = Instant::now() + args.interval;
                    while let Some(()) = triggers.before(until).await {
                        let reloaded = answers.reread(&client, &options).await;
                        reload(printer, &group, reloaded, &chosen, &member).await;
                    }
                }
                ok &= call_tool(printer, &group, args.server.as_deref(), n, name, tool_args).await;
            }
            ok
        };
        called = tokio::select! {
            biased;
            () = cancel.cancelled() => false,
            ok = calls => ok,
        };
    }
    let established = settled.values().filter(|ready| **ready).count();
    let failed = invalid.len() + servers.len() - established;
    group.shutdown_within(CLOSE_BOUND).await;
    if let Some(listings) = &remembered {
        if let Err(error) = listings.save().await {
            eprintln!(
                "mcp-connect: --catalogue-cache: cannot write: {}",
                chain(&error)
            );
        }
    }
    let count = invalid.len() + servers.len();
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let signal = signals.received();
    let by = signal
        .map(|s| format!(", ended by {}", s.name()))
        .unwrap_or_default();
    printer.line(
        &format!(
            "{established} of {count} servers established, {failed} not, {elapsed_ms:.3} ms{by}"
        ),
        json!({ "event": "summary", "servers": count, "established": established,
                "failed": failed, "elapsed_ms": elapsed_ms,
                "signal": signal.map(Received::name) }),
    );
    match signal {
        Some(signal) => ExitCode::from(signal.exit_code()),
        None if failed == 0 && called => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
    }
}

/// Applies the file read again to the group as a difference, and says
/// what changed by server name (never a URL, a header or a variable). A
/// file that cannot be read now changes nothing.
async fn reload(
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
async fn settle(
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

fn not_established(
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

/// `--call-tool NAME`: routed by catalogue name, or with `--server` by
/// that server's own tool name; true when the tool answered without error.
async fn call_tool(
    printer: &Printer,
    group: &ServerGroup,
    server: Option<&str>,
    n: u32,
    name: &str,
    arguments: &serde_json::Value,
) -> bool {
    match server.and_then(|server| group.client(server)) {
        Some(client) => {
            let result = client.call_tool(name, arguments).await;
            let generation = client.generation();
            let ok = matches!(&result, Ok(r) if !r.is_error);
            printer.call(n, name, &result, generation, false);
            ok
        }
        None => {
            let result = group.call_tool(name, arguments).await;
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

/// The merged catalogue: one line per tool under the name a caller uses,
/// then what was left out and why.
fn list_tools(printer: &Printer, catalogue: &Catalogue) {
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
        printer.line(
            &format!(
                "left out: {} ({}): {reason} as {}",
                shown(&left.name),
                shown(&left.server),
                shown(tried)
            ),
            json!({ "event": "left_out", "server": &*left.server, "server_name": left.name,
                    "reason": reason, "name": tried }),
        );
    }
}
