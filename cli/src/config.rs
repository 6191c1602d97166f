//! `--config FILE`: every server of an `mcpServers` file in one
//! [`ServerGroup`], each through its own copy of the stack (its own
//! deadline, its own classified failure, its own recovery), a line for each
//! as it settles, then, with `--list-tools`, the merged catalogue, then a
//! summary. A slow or stalled server delays no other line, only the
//! summary, and never past its own deadline; a `--call-tool` goes as soon
//! as its own server is ready. The summary counts the servers the group has
//! when the run ends: those a reload added, not those it removed.

mod calls;
mod lines;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_connect::config::{EntryError, ServerConfig};
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::layers::{CancelSource, Failure, FailureKind, Stage};
use mcp_connect::{Connector, EstablishBuilder};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::output::{chain, shown, Printer};
use super::prompt::Answers;
use super::reload::ReloadTriggers;
use super::request::{handler_from, http_client, recovery_from, with_limits_and_versions};
use super::signals::{Received, Signals};
use super::{usage, CLOSE_BOUND};
use calls::{call_tool, wait_for_start, Route};
use lines::{list_tools, not_established, reload};

/// Runs `--config`; the exit code as the option's help says.
pub(super) async fn run(
    args: &Args,
    path: &Path,
    printer: &Arc<Printer>,
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
    let servers: Vec<_> = config.servers().filter(|s| chosen(s.name())).collect();
    let disabled: Vec<_> = config.disabled().filter(|s| chosen(s.name())).collect();
    let mut invalid = config.errors().filter(|e| chosen(e.name())).count();
    if args.server.is_some() && invalid == 0 && servers.is_empty() && disabled.is_empty() {
        return usage("--server: the config file has no server of that name");
    }
    let handler = match handler_from(args) {
        Ok(handler) => handler,
        Err(message) => return usage(&message),
    };
    unusable(
        printer,
        config.errors().filter(|e| chosen(e.name())),
        &disabled,
    );
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
    let required: Vec<Arc<str>> = (servers.iter())
        .filter(|server| server.is_required())
        .map(|server| server.name().into())
        .collect();
    let route = (args.call_tool.as_deref()).map(|tool| Route {
        tool,
        server: args.server.as_deref(),
    });
    // Everything ends at the run's deadline (`--deadline` from the start:
    // a listing that never answers included) or at the first signal.
    let start = wait_for_start(
        printer,
        &group,
        servers.len(),
        &required,
        started,
        started + args.deadline,
        cancel,
        route,
    )
    .await;
    if let Some(kind) = start.ended {
        ended_unsettled(printer, &group, &start.settled, kind, started);
    }
    if args.list_tools {
        list_tools(printer, &group.catalogue());
    }
    // A required server that did not start fails the start: no call.
    let required_failed = match start.ended {
        None => required_not_started(&group, &required),
        Some(_) => None,
    };
    if let Some(server) = &required_failed {
        printer.line(
            &format!(
                "{}: required and not started; nothing is called",
                shown(server)
            ),
            json!({ "event": "required", "name": &**server, "outcome": "failed" }),
        );
    }
    let mut called = required_failed.is_none();
    if let (Some(route), None, true) = (route, start.ended, called) {
        let calls = async {
            let mut ok = true;
            for n in 1..=args.repeat {
                if n > 1 {
                    let until = Instant::now() + args.interval;
                    while let Some(()) = triggers.before(until).await {
                        let reloaded = answers.reread(&client, &options).await;
                        if let Ok(config) = &reloaded {
                            invalid = config.errors().filter(|e| chosen(e.name())).count();
                        }
                        reload(printer, &group, reloaded, &chosen, &member).await;
                    }
                }
                ok &= call_tool(printer, &group, route, n, tool_args).await;
            }
            ok
        };
        called = tokio::select! {
            biased;
            () = cancel.cancelled() => false,
            ok = calls => ok,
        };
    }
    if start.ended.is_none() {
        let mut settled = start.settled;
        calls::after_the_call(printer, &group, &mut settled, started).await;
    }
    let (established, now) = established_now(&group);
    let failed = invalid + now - established;
    group.shutdown_within(CLOSE_BOUND).await;
    if let Some(listings) = &remembered {
        if let Err(error) = listings.save().await {
            eprintln!(
                "mcp-connect: --catalogue-cache: cannot write: {}",
                chain(&error)
            );
        }
    }
    let signal = signals.received();
    summary(printer, invalid + now, established, failed, started, signal);
    match signal {
        Some(signal) => ExitCode::from(signal.exit_code()),
        None if failed == 0 && called => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
    }
}

/// The lines of the entries the file got wrong, and of those it turned off.
fn unusable<'a>(
    printer: &Printer,
    invalid: impl Iterator<Item = &'a EntryError>,
    disabled: &[&ServerConfig],
) {
    for error in invalid {
        let problem = chain(error.problem());
        printer.line(
            &format!("{}: not usable: {}", shown(error.name()), shown(&problem)),
            json!({ "event": "server", "name": error.name(), "outcome": "invalid",
                    "error": problem }),
        );
    }
    for server in disabled {
        printer.line(
            &format!("{}: disabled in the config file", shown(server.name())),
            json!({ "event": "server", "name": server.name(), "outcome": "disabled" }),
        );
    }
}

/// What had not settled when the deadline or the first signal ended the
/// start: a failure of its own each.
fn ended_unsettled(
    printer: &Printer,
    group: &ServerGroup,
    settled: &std::collections::BTreeMap<Arc<str>, bool>,
    kind: FailureKind,
    started: Instant,
) {
    let source = match kind {
        FailureKind::Timeout => CancelSource::Deadline,
        _ => CancelSource::Caller,
    };
    let failure = Failure::new(Stage::REQUEST, kind).with_cancel_source(source);
    for name in group.names() {
        if !settled.contains_key(&name) {
            let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            not_established(printer, group, &name, &failure, elapsed_ms);
        }
    }
}

/// The first required server that settled without being usable (the
/// start only ends early for a call once none is still starting).
fn required_not_started(group: &ServerGroup, required: &[Arc<str>]) -> Option<Arc<str>> {
    (required.iter())
        .find(|name| (group.health(name)).is_some_and(|health| !health.state.is_usable()))
        .cloned()
}

/// How many of the group's servers are usable now, of how many it has.
fn established_now(group: &ServerGroup) -> (usize, usize) {
    let names = group.names();
    let usable = (names.iter())
        .filter(|name| (group.health(name)).is_some_and(|health| health.state.is_usable()))
        .count();
    (usable, names.len())
}

/// The last line.
fn summary(
    printer: &Printer,
    count: usize,
    established: usize,
    failed: usize,
    started: Instant,
    signal: Option<Received>,
) {
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
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
}
