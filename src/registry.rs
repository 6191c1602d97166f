//! A server described by an MCP Registry `server.json`, turned into a
//! request the way hosts do it (VS Code's mcpManagementService): the first
//! stdio package whose runtime is on the PATH, else the first remote.
//!
//! | `registryType` | launch |
//! |---|---|
//! | `npm` | `npx -y ID@VERSION` |
//! | `pypi` | `uvx ID==VERSION` |
//! | `oci` | `docker run -i --rm -e NAME ... IMAGE:VERSION` |
//! | `nuget` | `dnx ID@VERSION --yes --` |
//!
//! A package's `runtimeHint` replaces the program; its `runtimeArguments`
//! come before the package and its `packageArguments` after it (a named
//! argument is its name, then its value). Its environment variables with a
//! value are set for the child; one without is read from this process's
//! environment (a container gets `-e NAME`, so it sees it too), and a
//! required one that is not there refuses the package. A value holding a
//! `{placeholder}` is the user's to fill: it refuses the package unless the
//! environment has the variable. `mcpb` bundles (downloaded and checked
//! against `fileSha256`) are not started here. Remotes: `streamable-http`
//! or `sse`, their URL's and headers' `{name}` template variables filled
//! from the environment, else the variable's `default`; a URL, or a
//! required header, that cannot be filled makes the remote unusable
//! (`MissingVariable` when nothing else is), an optional header is left
//! out.
//!
//! The arguments are handed to the program as they are, never through a
//! shell, so a value in `server.json` cannot inject a command.
//! [`ServerJson::fetch`] gets one from a registry's API.

use serde_json::Value;

use crate::request::{ConnectRequest, TransportMode};
use crate::transport::StdioCommand;

/// Why a `server.json` gave no request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The text is not a `server.json` (not JSON, or no `name`).
    #[error("not a server.json")]
    NotServerJson,
    /// No package's runtime is on the PATH and there is no usable remote.
    #[error("no package of {name} can be started here (runtimes looked for: {runtimes}) and it has no usable remote")]
    NothingUsable {
        /// The server's registry name.
        name: String,
        /// The runtimes its packages need, comma-separated.
        runtimes: String,
    },
    /// The registry URL cannot take a path.
    #[error("the registry URL cannot have a path")]
    BadRegistryUrl,
    /// The registry did not answer within the limit.
    #[error("the registry did not answer in time")]
    TimedOut,
    /// The registry could not be reached.
    #[error("the registry could not be reached")]
    Fetch(#[source] Box<crate::transport::error::TransportError>),
    /// The registry answered with an error status (404: no such server or
    /// version).
    #[error("the registry answered HTTP {status}")]
    Status {
        /// The status.
        status: u16,
    },
    /// A required environment variable of the only startable package is
    /// not set.
    #[error("{name} needs the environment variable {variable}")]
    MissingVariable {
        /// The server's registry name.
        name: String,
        /// The variable.
        variable: String,
    },
}

mod fetch;

pub use fetch::PUBLIC_REGISTRY;

/// A parsed `server.json` (or the `server` of a registry API answer).
#[derive(Debug, Clone)]
pub struct ServerJson {
    server: Value,
}

impl ServerJson {
    /// Reads a `server.json`, or a registry API answer (`{"server": ...}`).
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let value: Value = serde_json::from_str(text).map_err(|_| RegistryError::NotServerJson)?;
        let server = match value.get("server") {
            Some(inner) if inner.is_object() => inner.clone(),
            _ => value,
        };
        match server.get("name").and_then(Value::as_str) {
            Some(_) => Ok(ServerJson { server }),
            None => Err(RegistryError::NotServerJson),
        }
    }

    /// The server's registry name (`io.github.owner/name`).
    pub fn name(&self) -> &str {
        self.server["name"].as_str().unwrap_or_default()
    }

    /// A request for the server: the first package whose runtime
    /// `runtime_exists` says is there, else the first remote; named after
    /// the server. `env` answers environment variables.
    pub fn request_with(
        &self,
        runtime_exists: &dyn Fn(&str) -> bool,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ConnectRequest, RegistryError> {
        let name = self.name().to_owned();
        let mut runtimes = Vec::new();
        let mut missing = None;
        for package in list(&self.server, "packages") {
            let Some(plan) = Plan::of(package) else {
                continue;
            };
            runtimes.push(plan.program.clone());
            if !runtime_exists(&plan.program) {
                continue;
            }
            match plan.command(package, env) {
                Ok(command) => return Ok(ConnectRequest::stdio(command).with_name(name.as_str())),
                Err(variable) => missing = missing.or(Some(variable)),
            }
        }
        for remote in list(&self.server, "remotes") {
            match remote_request(remote, env) {
                Ok(Some(request)) => return Ok(request.with_name(name.as_str())),
                Ok(None) => {}
                Err(variable) => missing = missing.or(Some(variable)),
            }
        }
        match missing {
            Some(variable) => Err(RegistryError::MissingVariable { name, variable }),
            None => Err(RegistryError::NothingUsable {
                name,
                runtimes: runtimes.join(", "),
            }),
        }
    }

    /// [`request_with`](Self::request_with) with the runtimes on this
    /// process's PATH and its environment.
    pub fn request(&self) -> Result<ConnectRequest, RegistryError> {
        let on_path = |program: &str| StdioCommand::new(program).locate().is_ok();
        self.request_with(&on_path, &|name| std::env::var(name).ok())
    }
}

fn list<'a>(value: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value.get(field).and_then(Value::as_str)
}

/// How one package is started.
struct Plan {
    program: String,
    /// Arguments before the runtime arguments, and the package reference.
    before: Vec<String>,
    reference: String,
    /// Arguments after the package arguments.
    after: Vec<String>,
    container: bool,
}

impl Plan {
    fn of(package: &Value) -> Option<Plan> {
        if text(package.get("transport")?, "type") != Some("stdio") {
            return None;
        }
        let id = text(package, "identifier")?;
        let version = text(package, "version");
        let with = |separator: &str| match version {
            Some(version) => format!("{id}{separator}{version}"),
            None => id.to_owned(),
        };
        let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        let (program, before, reference, after, container) = match text(package, "registryType")? {
            "npm" => ("npx", strings(&["-y"]), with("@"), Vec::new(), false),
            "pypi" => ("uvx", Vec::new(), with("=="), Vec::new(), false),
            "oci" => {
                let image = match version {
                    Some(_) if !id.contains(':') && !id.contains('@') => with(":"),
                    _ => id.to_owned(),
                };
                (
                    "docker",
                    strings(&["run", "-i", "--rm"]),
                    image,
                    Vec::new(),
                    true,
                )
            }
            "nuget" => (
                "dnx",
                Vec::new(),
                with("@"),
                strings(&["--yes", "--"]),
                false,
            ),
            _ => return None,
        };
        Some(Plan {
            program: text(package, "runtimeHint").unwrap_or(program).to_owned(),
            before,
            reference,
            after,
            container,
        })
    }

    /// The command, or the required variable that is missing.
    fn command(
        self,
        package: &Value,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<StdioCommand, String> {
        let mut args = self.before;
        let mut set = Vec::new();
        for variable in list(package, "environmentVariables") {
            let Some(name) = text(variable, "name") else {
                continue;
            };
            let given = text(variable, "value")
                .or_else(|| text(variable, "default"))
                .filter(|value| !value.contains('{'));
            match (given, env(name)) {
                (_, Some(_)) => {}
                (Some(value), None) => set.push((name.to_owned(), value.to_owned())),
                (None, None) if variable.get("isRequired") == Some(&Value::Bool(true)) => {
                    return Err(name.to_owned())
                }
                (None, None) => continue,
            }
            if self.container {
                args.extend(["-e".to_owned(), name.to_owned()]);
            }
        }
        args.extend(arguments(package, "runtimeArguments"));
        args.push(self.reference);
        args.extend(self.after);
        args.extend(arguments(package, "packageArguments"));
        let command = StdioCommand::new(self.program).args(args);
        Ok((set.into_iter()).fold(command, |command, (name, value)| command.env(name, value)))
    }
}

/// A package's arguments of one kind, each with a fixed value.
fn arguments(package: &Value, field: &str) -> Vec<String> {
    let mut out = Vec::new();
    for argument in list(package, field) {
        let value = text(argument, "value").or_else(|| text(argument, "default"));
        match (text(argument, "type"), text(argument, "name"), value) {
            (Some("named"), Some(name), Some(value)) => {
                out.extend([name.to_owned(), value.to_owned()]);
            }
            (Some("named"), Some(name), None) => out.push(name.to_owned()),
            (_, _, Some(value)) => out.push(value.to_owned()),
            _ => {}
        }
    }
    out
}

/// A remote's request: its URL and headers with their `{name}` template
/// variables filled, or the variable no value was found for (`Err`), or
/// nothing for a remote this client cannot use (`Ok(None)`).
fn remote_request(
    remote: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ConnectRequest>, String> {
    let mode = match text(remote, "type") {
        Some("streamable-http") => TransportMode::StreamableHttp,
        Some("sse") => TransportMode::Sse,
        _ => return Ok(None),
    };
    let Some(url) = text(remote, "url") else {
        return Ok(None);
    };
    let url = fill(url, remote.get("variables"), env)?;
    let Ok(mut request) = ConnectRequest::http(&url) else {
        return Ok(None);
    };
    for header in list(remote, "headers") {
        let (Some(name), Some(value)) = (text(header, "name"), text(header, "value")) else {
            continue;
        };
        match fill(value, header.get("variables"), env) {
            Ok(value) => match request.with_header(name, &value) {
                Ok(with) => request = with,
                Err(_) => return Ok(None),
            },
            // A header the server needs, that cannot be filled: not usable.
            Err(variable) if header.get("isRequired") == Some(&Value::Bool(true)) => {
                return Err(variable)
            }
            Err(_) => {}
        }
    }
    Ok(Some(request.with_mode(mode)))
}

/// `template` with each `{name}` replaced by the environment's `name`,
/// else by `variables.name.default`; the first name with neither is the
/// `Err`. The value is the user's (a tenant, a token): never printed.
fn fill(
    template: &str,
    variables: Option<&Value>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + close];
        let default = || {
            let declared = variables.and_then(|v| v.get(name));
            declared.and_then(|v| text(v, "default")).map(str::to_owned)
        };
        let value = env(name).or_else(default).ok_or_else(|| name.to_owned())?;
        out.push_str(&rest[..open]);
        out.push_str(&value);
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests;
