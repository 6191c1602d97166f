//! `--config FILE --check`: the file read, validated and expanded as a run
//! would, and nothing started or connected. A line for each server: its
//! launch as the reader normalized it (the program and the arguments as
//! written, the URL with userinfo and query values masked, only the names
//! of environment variables and headers), or where its entry is and what
//! is wrong with it. Exit 0 when every entry is usable, 1 when any is not
//! (2 is a usage error, or a file that cannot be read at all).

use std::process::ExitCode;

use mcp_connect::config::ServersConfig;
use serde_json::json;

use super::output::{chain, shown, Printer};

/// Prints the check of `config` and returns its exit code.
pub(super) fn run(config: &ServersConfig, printer: &Printer) -> ExitCode {
    let mut invalid = 0;
    for entry in config.entries() {
        match entry {
            Ok(server) => {
                let launch = server.launch().to_string();
                let unknown: Vec<&str> = server.unknown_fields().collect();
                let mut notes = Vec::new();
                if !server.is_enabled() {
                    notes.push("disabled".to_owned());
                }
                if !unknown.is_empty() {
                    notes.push(format!("fields not read: {}", unknown.join(", ")));
                }
                let notes = match notes.is_empty() {
                    true => String::new(),
                    false => format!(" ({})", notes.join("; ")),
                };
                printer.line(
                    &shown(&format!("{}: {launch}{notes}", server.name())),
                    json!({ "event": "check", "name": server.name(),
                            "outcome": if server.is_enabled() { "ok" } else { "disabled" },
                            "launch": launch, "unknown_fields": unknown }),
                );
            }
            Err(error) => {
                invalid += 1;
                let problem = chain(error.problem());
                let (line, column) = error.line_column().unzip();
                let place = match (line, column) {
                    (Some(line), Some(column)) => format!("line {line}, column {column}: "),
                    _ => String::new(),
                };
                printer.line(
                    &shown(&format!("{}: {place}{problem}", error.name())),
                    json!({ "event": "check", "name": error.name(), "outcome": "invalid",
                            "line": line, "column": column, "error": problem }),
                );
            }
        }
    }
    let count = config.entries().len();
    printer.line(
        &format!("{count} servers checked, {invalid} not usable"),
        json!({ "event": "summary", "servers": count, "invalid": invalid }),
    );
    match invalid {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
