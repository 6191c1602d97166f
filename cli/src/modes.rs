//! What the command was asked to do, one function each: a probe (connect,
//! list what is asked, close), a tool call, a watch (the call repeated
//! through the long-lived client, which reconnects after a lost session),
//! a config file's servers as one group, a config file checked, and a
//! config file's servers served as one MCP server.

use std::path::Path;
use std::sync::Arc;

use mcp_connect::extensions::skills::ListSkills;
use mcp_connect::protocol::{CallTool, ListPrompts, ListResources};
use mcp_connect::session::{Call, RequestOptions};
use mcp_connect::{Error, McpClient, Session};

use super::args::Args;
use super::output::Printer;

/// The command's modes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mode<'a> {
    /// Connect, list what `--list-*` asks for, close.
    Probe,
    /// The probe, then one `--call-tool`.
    Call { tool: &'a str },
    /// The probe, then `--repeat` calls `--interval` apart, a line each
    /// with the session's generation.
    Watch { tool: &'a str, repeat: u32 },
    /// `--config`: every server of the file in one group.
    Group { path: &'a Path },
    /// `--config --check`: the file validated, nothing started.
    Check { path: &'a Path },
    /// `serve --config`: the file's servers served as one MCP server.
    Serve { path: &'a Path },
}

impl<'a> Mode<'a> {
    /// The mode the arguments ask for.
    pub(super) fn of(args: &'a Args) -> Self {
        match (&args.config, args.call_tool.as_deref()) {
            (Some(path), _) if args.serve => Mode::Serve { path },
            (Some(path), _) if args.check => Mode::Check { path },
            (Some(path), _) => Mode::Group { path },
            (None, Some(tool)) if args.repeat > 1 => Mode::Watch {
                tool,
                repeat: args.repeat,
            },
            (None, Some(tool)) => Mode::Call { tool },
            (None, None) => Mode::Probe,
        }
    }
}

/// A one-server mode's work on its first session; true when all of it
/// succeeded.
pub(super) async fn work(
    mode: Mode<'_>,
    args: &Args,
    printer: &Arc<Printer>,
    client: &McpClient,
    session: &Session,
    tool_args: &serde_json::Value,
) -> bool {
    let probed = probe(args, printer, session).await;
    let call = |tool, repeat| calls(printer, client, tool, tool_args, args.interval, repeat);
    let called = match mode {
        Mode::Call { tool } => call(tool, 1).await,
        Mode::Watch { tool, repeat } => call(tool, repeat).await,
        Mode::Probe | Mode::Group { .. } | Mode::Check { .. } | Mode::Serve { .. } => true,
    };
    probed && called
}

/// The listings `--list-*` asks for, a line each; true when each worked.
async fn probe(args: &Args, printer: &Printer, session: &Session) -> bool {
    let mut ok = true;
    if args.list_tools {
        ok &= list_tools(printer, session).await;
    }
    if args.list_resources {
        let listed = session.send(ListResources::all()).await;
        let uris = listed.map(|r| r.items.into_iter().map(|r| r.uri).collect());
        ok &= listing(printer, "resources", uris);
    }
    if args.list_prompts {
        let listed = session.send(ListPrompts::all()).await;
        let names = listed.map(|p| p.items.into_iter().map(|p| p.name).collect());
        ok &= listing(printer, "prompts", names);
    }
    if args.list_skills {
        let listed = session.send(ListSkills::all()).await;
        let uris = listed.map(|s| s.items.into_iter().map(|s| s.uri).collect());
        ok &= listing(printer, "skills", uris);
    }
    ok
}

fn listing(printer: &Printer, what: &str, listed: Result<Vec<String>, Error>) -> bool {
    match listed {
        Ok(names) => {
            printer.listing(what, &names);
            true
        }
        Err(error) => {
            report_error(printer, &format!("list_{what}"), &error);
            false
        }
    }
}

async fn list_tools(printer: &Printer, session: &Session) -> bool {
    match session.list_tools().await {
        Ok(list) => {
            let names: Vec<_> = list.tools.iter().map(|t| t.name.clone()).collect();
            printer.tools(&names);
            for excluded in &list.excluded {
                printer.excluded_tool(&excluded.name, &excluded.reason);
            }
            true
        }
        Err(error) => {
            report_error(printer, "list_tools", &error);
            false
        }
    }
}

/// Calls the tool `repeat` times through the long-lived client,
/// `--interval` apart, one line per call; true when every call succeeded.
async fn calls(
    printer: &Arc<Printer>,
    client: &McpClient,
    name: &str,
    arguments: &serde_json::Value,
    interval: std::time::Duration,
    repeat: u32,
) -> bool {
    let mut all_ok = true;
    let mut last_generation = client.generation();
    for n in 1..=repeat {
        if n > 1 {
            tokio::time::sleep(interval).await;
        }
        let shown = Arc::clone(printer);
        let options =
            RequestOptions::new().with_progress(move |p| shown.progress(p.progress, p.total));
        let call = Call::new(CallTool::new(name, arguments)).with_options(options);
        let result = client.send(call).await;
        let generation = match &result {
            Ok(_) => client.generation(),
            Err(e) => e.generation().unwrap_or_else(|| client.generation()),
        };
        let reconnected = generation > last_generation;
        last_generation = generation;
        all_ok &= matches!(&result, Ok(r) if !r.is_error);
        printer.call(n, name, &result, generation, reconnected);
    }
    all_ok
}

/// The per-server call policies the flags ask for, the bulkhead outermost
/// (it bounds retries too), the replicas innermost.
pub(super) fn call_policies(args: &Args) -> mcp_connect::client::CallPolicies {
    let mut policies = mcp_connect::client::CallPolicies::new();
    if let Some(idle) = args.idle_timeout {
        policies = policies.with_idle_timeout(idle, args.request_timeout);
    }
    if args.retry_rate_limited {
        policies = policies.with_rate_limit_retry();
    }
    if let Some(delay) = args.hedge_after {
        // The person who asked for it says the tool is safe to run twice.
        policies = policies.with_hedge(delay, args.call_tool.iter().cloned());
    }
    if args.breaker {
        policies = policies.with_breaker();
    }
    if let Some(n) = args.max_in_flight {
        policies = policies.with_max_in_flight(n as usize);
    }
    policies
}

pub(super) fn report_error(printer: &Printer, operation: &str, error: &Error) {
    let failure = error.failure();
    let report = super::output::chain(error);
    printer.line(
        &format!("{operation} failed: {report}"),
        serde_json::json!({
            "event": "error",
            "operation": operation,
            "kind": failure.kind.as_str(),
            "http_status": failure.http_status,
            "jsonrpc_code": failure.jsonrpc_code,
            "error": report,
        }),
    );
}
