//! The command's argument parsing and output.

mod args;
mod authorize;
mod config;
mod otlp;
mod output;
mod request;
mod run;
mod signals;

pub(crate) use run::main;

/// A usage error: one line on stderr, exit 2, nothing sent.
fn usage(message: &str) -> std::process::ExitCode {
    eprintln!("mcp-connect: {message}");
    std::process::ExitCode::from(2)
}

/// How long closing the sessions may take when the command ends (the stdio
/// close ladder needs up to two grace periods).
const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(10);
