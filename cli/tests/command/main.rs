//! The `mcp-connect` command, run as a process: output, configuration, authorization, hostile text, logging, server traffic and signals.
//!
//! One test binary for the group, so the library links once for all of
//! them; each file is a module of its own.

#[path = "../../../tests/support/mod.rs"]
mod support;

mod command;
mod command_auth;
mod command_config;
mod command_hostile_text;
mod command_lines;
mod command_logging;
mod command_openssl;
mod command_otlp;
mod command_proxy;
mod command_redirects;
mod command_serve;
mod command_serve_sessions;
mod command_server_traffic;
mod command_servers_file;
mod command_signals;
mod command_tls;
mod command_untrusted;
