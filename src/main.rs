//! `mcp-connect`: establish a session with an MCP server and print the
//! establishment timeline.
//!
//! With no target it starts the built-in demo server on 127.0.0.1 and
//! connects to that. Header values, URL queries, session ids and bodies are
//! never printed; tool results are printed only when asked for with
//! `--call-tool`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
