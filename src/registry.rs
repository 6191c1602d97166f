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
//! | `mcpb` | the bundle's manifest command, once [`ServerJson::prepare`] unpacked it |
//!
//! A package's `runtimeHint` replaces the program; its `runtimeArguments`
//! come before the package and its `packageArguments` after it (a named
//! argument is its name, then its value). An environment variable's fixed
//! `value` is set for the child; otherwise the answer the caller gives
//! for its name (the environment, or an input a person typed), else its
//! `default`; a required one with none refuses the package (a container
//! gets `-e NAME`, so it sees it too). A value holding a `{placeholder}`
//! is the user's to fill. `mcpb` bundles are downloaded, checked against
//! `fileSha256` and unpacked by [`ServerJson::prepare`] ([`BundleError`] says what refuses one).
//! Remotes: `streamable-http` or `sse`, their URL's and headers' `{name}`
//! template variables answered the same way, else the variable's
//! `default`; a URL, or a required header, that cannot be filled makes
//! the remote unusable (`MissingVariable` when nothing else is), an
//! optional header is left out. [`ServerJson::inputs`] lists what a person
//! may be asked for, secrets marked.
//!
//! The arguments are handed to the program as they are, never through a
//! shell, so a value in `server.json` cannot inject a command.
//! [`ServerJson::fetch`] gets one from a registry's API.

use serde_json::Value;

use crate::request::{ConnectRequest, TransportMode};
use crate::transport::{HttpClient, StdioCommand};

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
    /// The entry names a server without a pinned version (none, or
    /// `latest`) and unpinned versions are not allowed.
    #[error("{name} is not pinned to a version")]
    Unpinned {
        /// The server's registry name.
        name: String,
    },
    /// A local `server.json` could not be read.
    #[error("the server.json file could not be read")]
    Read(#[source] std::io::Error),
    /// An `mcpb` bundle is not the file its `server.json` describes, or
    /// cannot be unpacked and started.
    #[error("the mcpb bundle cannot be used")]
    Bundle(#[source] BundleError),
}

mod fetch;
mod inputs;
mod mcpb;

pub use fetch::{RegistryOptions, PUBLIC_REGISTRY};
pub use inputs::Variable;
pub use mcpb::BundleError;

/// A request resolved from a `server.json`, with the remote's URL as
/// written (its template variables unfilled) for display.
pub(crate) struct Resolved {
    pub(crate) request: ConnectRequest,
    pub(crate) url_template: Option<String>,
}

/// A parsed `server.json` (or the `server` of a registry API answer), with
/// the `mcpb` bundles [`prepare`](Self::prepare) unpacked for it.
#[derive(Debug, Clone)]
pub struct ServerJson {
    server: Value,
    bundles: Vec<mcpb::Bundle>,
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
            Some(_) => Ok(ServerJson {
                server,
                bundles: Vec::new(),
            }),
            None => Err(RegistryError::NotServerJson),
        }
    }

    /// The server's registry name (`io.github.owner/name`).
    pub fn name(&self) -> &str {
        self.server["name"].as_str().unwrap_or_default()
    }

    /// Downloads, checks and unpacks the `mcpb` bundles a request may
    /// start: each one listed before the first other package whose runtime
    /// is on the PATH, until one whose program is. A bundle whose SHA-256
    /// is not its `fileSha256` refuses the server.
    pub async fn prepare(
        mut self,
        client: &HttpClient,
        options: &RegistryOptions,
    ) -> Result<ServerJson, RegistryError> {
        let packages: Vec<Value> = list(&self.server, "packages").cloned().collect();
        for (index, package) in packages.iter().enumerate() {
            if text(package, "registryType") == Some("mcpb") {
                let bundle = mcpb::prepare(client, options, index, package)
                    .await
                    .map_err(RegistryError::Bundle)?;
                let startable = on_path(&bundle.program);
                self.bundles.push(bundle);
                if startable {
                    break;
                }
            } else if Plan::of(package, None).is_some_and(|plan| on_path(&plan.program)) {
                break;
            }
        }
        Ok(self)
    }

    /// A request for the server: the first package whose runtime
    /// `runtime_exists` says is there, else the first remote; named after
    /// the server. `answer` answers the variables the server needs (a
    /// value it answers is set for the child explicitly).
    pub fn request_with(
        &self,
        runtime_exists: &dyn Fn(&str) -> bool,
        answer: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ConnectRequest, RegistryError> {
        Ok(self.resolve(runtime_exists, answer)?.request)
    }

    /// [`request_with`](Self::request_with), with the remote's URL
    /// template kept for display.
    pub(crate) fn resolve(
        &self,
        runtime_exists: &dyn Fn(&str) -> bool,
        answer: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Resolved, RegistryError> {
        let name = self.name().to_owned();
        let mut runtimes = Vec::new();
        let mut missing = None;
        for (index, package) in list(&self.server, "packages").enumerate() {
            let bundle = self.bundles.iter().find(|bundle| bundle.package == index);
            let Some(plan) = Plan::of(package, bundle) else {
                continue;
            };
            runtimes.push(plan.program.clone());
            if !runtime_exists(&plan.program) {
                continue;
            }
            match plan.command(package, answer) {
                Ok(command) => {
                    return Ok(Resolved {
                        request: ConnectRequest::stdio(command).with_name(name.as_str()),
                        url_template: None,
                    })
                }
                Err(variable) => missing = missing.or(Some(variable)),
            }
        }
        for remote in list(&self.server, "remotes") {
            match remote_request(remote, answer) {
                Ok(Some(request)) => {
                    return Ok(Resolved {
                        request: request.with_name(name.as_str()),
                        url_template: text(remote, "url").map(str::to_owned),
                    })
                }
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
        self.request_answered(&|name| std::env::var(name).ok())
    }

    /// [`request_with`](Self::request_with) with the runtimes on this
    /// process's PATH, the variables answered by `answer`.
    pub fn request_answered(
        &self,
        answer: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ConnectRequest, RegistryError> {
        self.request_with(&on_path, answer)
    }
}

/// Whether `program` is found on this process's PATH: the runtime test a
/// package is chosen by.
pub(crate) fn on_path(program: &str) -> bool {
    StdioCommand::new(program).locate().is_ok()
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
    reference: Option<String>,
    /// Arguments after the package arguments.
    after: Vec<String>,
    /// Variables its bundle's manifest sets.
    preset: Vec<(String, String)>,
    container: bool,
}

impl Plan {
    /// The plan of a stdio `package`; an `mcpb` one only once its
    /// `bundle` is unpacked.
    fn of(package: &Value, bundle: Option<&mcpb::Bundle>) -> Option<Plan> {
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
            "mcpb" => {
                let bundle = bundle?;
                return Some(Plan {
                    program: bundle.program.clone(),
                    before: bundle.args.clone(),
                    reference: None,
                    after: Vec::new(),
                    preset: bundle.env.clone(),
                    container: false,
                });
            }
            _ => return None,
        };
        Some(Plan {
            program: text(package, "runtimeHint").unwrap_or(program).to_owned(),
            before,
            reference: Some(reference),
            after,
            preset: Vec::new(),
            container,
        })
    }

    /// The command, or the required variable that is missing. A fixed
    /// `value` is set as it is; otherwise the answer, else the `default`.
    fn command(
        self,
        package: &Value,
        answer: &dyn Fn(&str) -> Option<String>,
    ) -> Result<StdioCommand, String> {
        let mut args = self.before;
        let mut set = self.preset;
        for variable in list(package, "environmentVariables") {
            let Some(name) = text(variable, "name") else {
                continue;
            };
            let fixed = text(variable, "value").filter(|value| !value.contains('{'));
            let default = text(variable, "default").filter(|value| !value.contains('{'));
            let value = (fixed.map(str::to_owned))
                .or_else(|| answer(name))
                .or_else(|| default.map(str::to_owned));
            match value {
                Some(value) => set.push((name.to_owned(), value)),
                None if variable.get("isRequired") == Some(&Value::Bool(true)) => {
                    return Err(name.to_owned())
                }
                None => continue,
            }
            if self.container {
                args.extend(["-e".to_owned(), name.to_owned()]);
            }
        }
        args.extend(arguments(package, "runtimeArguments"));
        args.extend(self.reference);
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
