//! The request an entry's `command` (stdio: `args`, `env`, `cwd`) or
//! `url` (remote: `headers`, Codex's header fields, `socket`) describes,
//! every value's `${...}` references expanded.

use serde_json::{Map, Value};

use super::expand::{expand, Variables};
use super::fields::{list, strings, text};
use super::{codex, EntryProblem};
use crate::request::TransportMode;
use crate::transport::StdioCommand;
use crate::ConnectRequest;

pub(super) fn stdio(
    command: &str,
    entry: &Map<String, Value>,
    env: &Variables<'_>,
) -> Result<ConnectRequest, EntryProblem> {
    let mut stdio = StdioCommand::new(expand(command, env)?);
    for arg in list(entry, "args")? {
        stdio = stdio.args([expand(arg, env)?]);
    }
    for (key, value) in strings(entry, "env")? {
        stdio = stdio.env(key, expand(value, env)?);
    }
    if let Some(cwd) = text(entry, "cwd")? {
        stdio = stdio.current_dir(expand(cwd, env)?);
    }
    Ok(ConnectRequest::stdio(stdio))
}

pub(super) fn remote(
    url: &str,
    mode: TransportMode,
    entry: &Map<String, Value>,
    env: &Variables<'_>,
) -> Result<ConnectRequest, EntryProblem> {
    let mut request = ConnectRequest::http(&expand(url, env)?).map_err(invalid)?;
    for (name, value) in strings(entry, "headers")? {
        request = request
            .with_header(name, &expand(value, env)?)
            .map_err(invalid)?;
    }
    for (name, value) in codex::headers(entry)? {
        request = request
            .with_header(&name, &expand(&value, env)?)
            .map_err(invalid)?;
    }
    if let Some(socket) = text(entry, "socket")? {
        request = request.with_unix_socket(expand(socket, env)?);
    }
    Ok(request.with_mode(mode))
}

pub(super) fn invalid(error: crate::Error) -> EntryProblem {
    EntryProblem::Invalid(Box::new(error))
}
