//! `--config FILE`: every server of an `mcpServers` file established at
//! once, each through its own copy of the stack (its own deadline, its own
//! classified failure, its own recovery), a line for each as it finishes,
//! then a summary. A slow or stalled server delays no other line, only the
//! summary, and never past its own deadline.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use mcp_connect::config::{ServerConfig, ServersConfig};
use mcp_connect::layers::Classify;
use mcp_connect::{Connector, Error, Establish, EstablishBuilder, EstablishError, Session};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::output::{chain, failure_json, shown, Printer};
use super::request::{handler_from, recovery_from, with_limits_and_versions};
use super::{usage, CLOSE_BOUND};

/// Runs `--config`; the exit code as the option's help says.
pub(super) async fn run(
    args: &Args,
    path: &Path,
    printer: &Printer,
    cancel: &CancellationToken,
) -> ExitCode {
    let config = match ServersConfig::read(path) {
        Ok(config) => config,
        Err(error) => return usage(&format!("--config: {}", chain(&error))),
    };
    let chosen = |name: &str| args.server.as_deref().is_none_or(|wanted| wanted == name);
    let entries: Vec<_> = config
        .entries()
        .iter()
        .filter(|entry| match entry {
            Ok(server) => chosen(server.name()),
            Err(error) => chosen(error.name()),
        })
        .collect();
    if args.server.is_some() && entries.is_empty() {
        return usage("--server: the config file has no server of that name");
    }
    let handler = match handler_from(args) {
        Ok(handler) => handler,
        Err(message) => return usage(&message),
    };
    // One connector (one pooled HTTP client) for all; the stack's deadline
    // starts anew for every server it establishes.
    let stack = EstablishBuilder::new(Connector::new())
        .with_recovery(recovery_from(args))
        .with_deadline(args.deadline)
        .build();
    let started = Instant::now();
    let mut failed = 0;
    let mut pending = FuturesUnordered::new();
    for entry in entries {
        match entry {
            Err(error) => {
                failed += 1;
                let problem = chain(error.problem());
                printer.line(
                    &format!("{}: not usable: {}", shown(error.name()), shown(&problem)),
                    json!({ "event": "server", "name": error.name(), "outcome": "invalid",
                            "error": problem }),
                );
            }
            Ok(server) => {
                let request = with_limits_and_versions(server.request(), args)
                    .with_handler(handler.clone())
                    .with_cancellation(cancel.clone());
                pending.push(establish(&stack, server, request));
            }
        }
    }
    let mut sessions = Vec::new();
    while let Some((name, outcome, elapsed)) = pending.next().await {
        match outcome {
            Ok((session, tools)) => {
                established(printer, name, &session, tools, elapsed);
                sessions.push(session);
            }
            Err(error) => {
                failed += 1;
                not_established(printer, name, &error, elapsed);
            }
        }
    }
    let count = sessions.len() + failed;
    let closing = sessions.iter().map(|session| session.close());
    let closed = tokio::time::timeout(CLOSE_BOUND, futures_util::future::join_all(closing)).await;
    if closed.is_err() {
        printer.line(
            "closing did not finish in time",
            json!({ "event": "error", "operation": "close", "kind": "timeout" }),
        );
    }
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    printer.line(
        &format!(
            "{} of {count} servers established, {failed} not, {elapsed_ms:.3} ms",
            sessions.len()
        ),
        json!({ "event": "summary", "servers": count, "established": sessions.len(),
                "failed": failed, "elapsed_ms": elapsed_ms }),
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

type Established = Result<(Session, Result<usize, Error>), EstablishError>;

/// One server: its establishment, then its tool count.
async fn establish<'a>(
    stack: &Establish,
    server: &'a ServerConfig,
    request: mcp_connect::ConnectRequest,
) -> (&'a str, Established, Duration) {
    let started = Instant::now();
    let outcome = match stack.connect(request).await {
        Ok(session) => {
            let tools = session.list_tools().await.map(|listed| listed.tools.len());
            Ok((session, tools))
        }
        Err(error) => Err(error),
    };
    (server.name(), outcome, started.elapsed())
}

fn established(
    printer: &Printer,
    name: &str,
    session: &Session,
    tools: Result<usize, Error>,
    elapsed: Duration,
) {
    let ms = elapsed.as_secs_f64() * 1000.0;
    let tools_shown = match &tools {
        Ok(count) => format!("{count} tools"),
        Err(error) => format!("tools not listed: {}", error.failure().kind.as_str()),
    };
    printer.line(
        &format!(
            "{}: established: {} era, protocol {}, over {}, {ms:.3} ms, {tools_shown}",
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
            "elapsed_ms": ms,
            "tools": tools.as_ref().ok(),
        }),
    );
}

fn not_established(printer: &Printer, name: &str, error: &EstablishError, elapsed: Duration) {
    let ms = elapsed.as_secs_f64() * 1000.0;
    printer.line(
        &format!(
            "{}: failed: {}, {ms:.3} ms",
            shown(name),
            shown(&chain(error))
        ),
        json!({
            "event": "server", "name": name, "outcome": "failed", "elapsed_ms": ms,
            "failure": failure_json(&error.failure()),
        }),
    );
}
