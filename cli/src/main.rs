//! `mcp-connect`: establish a session with an MCP server and print the
//! establishment timeline.
//!
//! With no target it starts the built-in demo server on 127.0.0.1 and
//! connects to that. Header values, URL queries, session ids and bodies are
//! never printed; tool results are printed only when asked for with
//! `--call-tool`.
//!
//! The command is its own crate so that the library's users build none of
//! what only the command needs (clap, tracing-subscriber, the OpenTelemetry
//! SDK and exporter, Redis, the demo server): it turns those features of
//! `mcp-connect` on here.

mod args;
mod authorize;
mod check;
mod config;
mod modes;
mod otlp;
mod output;
mod prompt;
mod reload;
mod request;
mod run;
mod serve;
mod serve_auth;
mod serve_governance;
mod serve_sessions;
mod signals;
mod single;
mod stores;

/// A usage error: one line on stderr, exit 2, nothing sent.
fn usage(message: &str) -> std::process::ExitCode {
    eprintln!("mcp-connect: {message}");
    std::process::ExitCode::from(2)
}

/// How long closing the sessions may take when the command ends (the stdio
/// close ladder needs up to two grace periods).
const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

fn main() -> std::process::ExitCode {
    // Run again as a stdio server's guardian, this process is only that.
    mcp_connect::transport::guardian::serve_if_asked();
    // Every stdio server's tree ends with the command, however it ends.
    let _ = mcp_connect::transport::guardian::enable_with_current_exe();
    run::main()
}
