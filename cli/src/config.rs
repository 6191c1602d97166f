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

use mcp_connect::config::{ConfigFileError, EntryError, ServerConfig, ServersConfig};
use mcp_connect::group::{Naming, RememberedListings, Server, ServerGroup, ServerGroupBuilder};
use mcp_connect::inbound::ClientHandler;
use mcp_connect::layers::{CancelSource, Failure, FailureKind, Stage};
use mcp_connect::registry::RegistryOptions;
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector, Establish, EstablishBuilder};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::{Args, PrefixMode};
use super::output::{chain, shown, Printer};
use super::prompt::Answers;
use super::reload::ReloadTriggers;
use super::request::{handler_from, http_client, recovery_from, with_limits_and_versions};
use super::signals::{Received, Signals};
use super::{usage, CLOSE_BOUND};
use calls::{call_tool, wait_for_start, Route, Start};
pub(super) use lines::reload;
use lines::{list_tools, not_established};

/// The config file as read, and what reading it again (a reload) needs.
pub(super) struct ConfigFile {
    pub(super) config: ServersConfig,
    pub(super) path: std::path::PathBuf,
    answers: Answers,
    pub(super) client: HttpClient,
    options: RegistryOptions,
}

impl ConfigFile {
    /// Reads `path` as `--config` says, asking on the terminal for the
    /// inputs it lacks; the exit code when that ends the run (a usage
    /// error, or the first signal).
    pub(super) async fn read(
        args: &Args,
        path: &Path,
        cancel: &CancellationToken,
        signals: &Signals,
    ) -> Result<Self, ExitCode> {
        // One connector (one pooled HTTP client) for all, the registry
        // too; the stack's deadline starts anew for every server.
        let client = http_client(args, false).map_err(|message| usage(&message))?;
        let options = super::request::registry_options(args).map_err(|m| usage(&m))?;
        let bound = super::prompt::Bounded {
            cancel: cancel.clone(),
            limit: args.deadline,
        };
        let mut answers = Answers::new(path, args.standard, bound);
        match answers.read_asking(&client, &options).await {
            Ok(config) => Ok(ConfigFile {
                config,
                path: path.to_owned(),
                answers,
                client,
                options,
            }),
            // The first signal ended the read: exit as a signal does.
            Err(_) if signals.received().is_some() => {
                let signal = signals.received().expect("received");
                Err(ExitCode::from(signal.exit_code()))
            }
            Err(error) => Err(usage(&format!("--config: {}", chain(&error)))),
        }
    }

    /// The file read again, for a reload: nothing is asked.
    pub(super) async fn reread(&mut self) -> Result<ServersConfig, ConfigFileError> {
        self.answers.reread(&self.client, &self.options).await
    }
}

/// How the group gets a server of the file: the same on a reload, so an
/// entry that did not change is the same revision.
pub(super) struct Members<'a> {
    pub(super) args: &'a Args,
    pub(super) stack: Establish,
    pub(super) handler: ClientHandler,
    pub(super) cancel: CancellationToken,
    /// `serve --otlp`: what each member's requests are instrumented with.
    pub(super) telemetry: Option<mcp_connect::telemetry::Telemetry>,
}

impl Members<'_> {
    pub(super) fn member(&self, server: &ServerConfig) -> Server {
        let request = self.request(server).with_handler(self.handler.clone());
        Server::new(self.stack.clone(), request).configured_by(server)
    }

    /// What an entry's server is reached with: its request with the
    /// options' limits and versions, its OAuth, the run's cancellation.
    pub(super) fn request(&self, server: &ServerConfig) -> ConnectRequest {
        let mut request = with_limits_and_versions(server.request(), self.args);
        if let Some(oauth) = server.oauth() {
            request = super::authorize::with_oauth(request, server.name(), oauth);
        }
        if let Some(telemetry) = &self.telemetry {
            request = request.with_telemetry(telemetry.clone());
        }
        let limits = server.limits_over(*request.limits());
        request
            .with_limits(limits)
            .with_cancellation(self.cancel.clone())
    }
}

/// One `--config` run: the group and what its lines and exit code count.
struct GroupRun<'a> {
    args: &'a Args,
    printer: &'a Arc<Printer>,
    cancel: &'a CancellationToken,
    group: ServerGroup,
    members: Members<'a>,
    /// Entries of the file not usable (counted again after a reload).
    invalid: usize,
    started: Instant,
}

/// Runs `--config`; the exit code as the option's help says.
pub(super) async fn run(
    args: &Args,
    mut file: ConfigFile,
    printer: &Arc<Printer>,
    cancel: &CancellationToken,
    signals: &Signals,
    tool_args: &serde_json::Value,
) -> ExitCode {
    let mut triggers = match ReloadTriggers::new(&file.path, args.watch_config) {
        Ok(triggers) => triggers,
        Err(error) => return usage(&format!("--watch-config: {}", chain(&error))),
    };
    let config = &file.config;
    let chosen = |name: &str| args.server.as_deref().is_none_or(|wanted| wanted == name);
    let servers: Vec<_> = config.servers().filter(|s| chosen(s.name())).collect();
    let disabled: Vec<_> = config.disabled().filter(|s| chosen(s.name())).collect();
    let invalid = config.errors().filter(|e| chosen(e.name())).count();
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
    let remembered = match super::stores::remembered_listings(args).await {
        Ok(listings) => listings,
        Err(message) => return usage(&message),
    };
    let group = group_builder(args, config, remembered.as_ref()).build();
    let stack = EstablishBuilder::new(Connector::with_client(file.client.clone()))
        .with_recovery(recovery_from(args))
        .with_deadline(args.deadline)
        .build();
    let members = Members {
        args,
        stack,
        handler,
        cancel: cancel.clone(),
        telemetry: None,
    };
    for server in &servers {
        // Names in a config file are unique: this cannot be a duplicate.
        let _ = group.add(members.member(server));
    }
    let required: Vec<Arc<str>> = (servers.iter())
        .filter(|server| server.is_required())
        .map(|server| server.name().into())
        .collect();
    let mut run = GroupRun {
        args,
        printer,
        cancel,
        group,
        members,
        invalid,
        started: Instant::now(),
    };
    let (start, route, startable) = run.start(servers.len(), &required).await;
    let called = match route {
        Some(route) => run.calls(route, &mut file, &mut triggers, tool_args).await,
        None => startable,
    };
    run.finish(start, called, remembered.as_ref(), signals)
        .await
}

impl<'a> GroupRun<'a> {
    /// Waits for the servers to settle (or, with a call to make, for its
    /// server), printing each one's line; the start, the call's route when
    /// the call is to be made, and whether no required server failed.
    async fn start(&self, count: usize, required: &[Arc<str>]) -> (Start, Option<Route<'a>>, bool) {
        let route = (self.args.call_tool.as_deref()).map(|tool| Route {
            tool,
            server: self.args.server.as_deref(),
        });
        // Everything ends at the run's deadline (`--deadline` from the
        // start: a listing that never answers included) or at the first
        // signal.
        let deadline = self.started + self.args.deadline;
        let (printer, group) = (self.printer, &self.group);
        let start = wait_for_start(
            printer,
            group,
            count,
            required,
            self.started,
            deadline,
            self.cancel,
            route,
        )
        .await;
        if let Some(kind) = start.ended {
            ended_unsettled(printer, group, &start.settled, kind, self.started);
        }
        lines::unmatched_patterns(printer, &group.catalogue());
        if self.args.list_tools {
            list_tools(printer, &group.catalogue());
        }
        if let Some(query) = &self.args.search_tools {
            lines::search_tools(printer, group, query, self.args.limit);
        }
        // A required server that did not start fails the start: no call.
        let required_failed = match start.ended {
            None => required_not_started(group, required),
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
        let startable = required_failed.is_none();
        let route = route.filter(|_| start.ended.is_none() && startable);
        (start, route, startable)
    }

    /// The `--repeat` calls, `--interval` apart, the file reloaded between
    /// them when it changes; true when every call succeeded.
    async fn calls(
        &mut self,
        route: Route<'_>,
        file: &mut ConfigFile,
        triggers: &mut ReloadTriggers,
        tool_args: &serde_json::Value,
    ) -> bool {
        let chosen = |name: &str| (self.args.server.as_deref()).is_none_or(|wanted| wanted == name);
        let (printer, group, members) = (self.printer, &self.group, &self.members);
        let mut invalid = self.invalid;
        let calls = async {
            let mut ok = true;
            for n in 1..=self.args.repeat {
                if n > 1 {
                    let until = Instant::now() + self.args.interval;
                    while let Some(()) = triggers.before(until).await {
                        let reloaded = file.reread().await;
                        if let Ok(config) = &reloaded {
                            invalid = config.errors().filter(|e| chosen(e.name())).count();
                        }
                        reload(printer, group, reloaded, &chosen, &|s| members.member(s)).await;
                    }
                }
                ok &= call_tool(printer, group, route, n, tool_args).await;
            }
            ok
        };
        let ok = tokio::select! {
            biased;
            () = self.cancel.cancelled() => false,
            ok = calls => ok,
        };
        self.invalid = invalid;
        ok
    }

    /// The lines of what settled after the call, the group shut down, the
    /// listings remembered, the summary; the exit code.
    async fn finish(
        self,
        start: Start,
        called: bool,
        remembered: Option<&RememberedListings>,
        signals: &Signals,
    ) -> ExitCode {
        let (printer, group) = (self.printer, &self.group);
        if start.ended.is_none() {
            let mut settled = start.settled;
            calls::after_the_call(printer, group, &mut settled, self.started).await;
        }
        let (established, now) = established_now(group);
        let failed = self.invalid + now - established;
        group.shutdown_within(CLOSE_BOUND).await;
        super::stores::save_listings(remembered).await;
        let signal = signals.received();
        let count = self.invalid + now;
        summary(printer, count, established, failed, self.started, signal);
        match signal {
            Some(signal) => ExitCode::from(signal.exit_code()),
            None if failed == 0 && called => ExitCode::SUCCESS,
            None => ExitCode::FAILURE,
        }
    }
}

/// The group as the command's flags and the file's top level configure
/// it: its naming (--prefix, else the file's "prefix"), its discovery
/// and its remembered listings.
pub(super) fn group_builder(
    args: &Args,
    config: &ServersConfig,
    remembered: Option<&RememberedListings>,
) -> ServerGroupBuilder {
    let naming = match args.prefix {
        Some(PrefixMode::Conditional) => Naming::OnCollision,
        Some(PrefixMode::Always) => Naming::Always,
        Some(PrefixMode::Never) => Naming::Never,
        None => config.prefix().map(Naming::from).unwrap_or_default(),
    };
    let builder = (ServerGroup::builder())
        .with_naming(naming)
        .with_discovery(args.discovery)
        .with_always_loaded(args.always_load.iter().cloned());
    match remembered {
        Some(listings) => builder.with_remembered_listings(listings.clone()),
        None => builder,
    }
}

/// The lines of the entries the file got wrong, and of those it turned off.
pub(super) fn unusable<'a>(
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
