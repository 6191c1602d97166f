//! A server described by an MCP Registry `server.json`, turned into a
//! request the way hosts do it (VS Code's mcpManagementService): the first
//! stdio package whose runtime is on the PATH, else the first remote.
//!
//! | `registryType` | launch |
//! |---|---|
//! | `npm` | `npx -y -- ID@VERSION` |
//! | `pypi` | `uvx ID==VERSION` |
//! | `oci` | `docker run -i --rm -e NAME ... IMAGE:VERSION` |
//! | `nuget` | `dnx ID@VERSION --yes --` |
//! | `mcpb` | the bundle's manifest command, once [`ServerJson::prepare`] unpacked it |
//!
//! A `server.json` is data: what it cannot make the launcher do is
//! listed below. Its
//! `packageArguments` come after the package (a named argument is its
//! name, then its value), for the server itself. An environment
//! variable's fixed `value` is set for the child; otherwise the caller's
//! answer for its name (a config entry's `env`, an input a person typed),
//! else its `default`; a required one with none refuses the package,
//! unless the child inherits it from this process's environment (a
//! container never does: it gets `-e NAME` for each answered variable,
//! and nothing else). A value holding a `{placeholder}` is the user's to
//! fill. `mcpb` bundles are downloaded, checked against `fileSha256` and
//! unpacked into a private folder by [`ServerJson::prepare`]
//! ([`BundleError`] says what refuses one). Remotes: `streamable-http` or
//! `sse`, their URL's and headers' declared `{name}` template variables
//! answered the same way, else the variable's `default`; a URL, or a
//! required header, that cannot be filled makes the remote unusable
//! ([`RegistryError::MissingVariables`], naming every one, when nothing
//! else is), an optional header is left out. [`ServerJson::inputs`] lists
//! what a person may be asked for, secrets marked.
//!
//! # What a `server.json` cannot do
//!
//! - choose the program: it is the runtime of the package's
//!   `registryType`, and a `runtimeHint` naming another refuses the package;
//! - pass an option to the runtime: identifiers and versions are checked
//!   per registry type (none starts with `-`; npm's goes after `--`), and
//!   `runtimeArguments` are refused but for a container's `-e`/`--env`,
//!   `--init` and `--read-only`;
//! - set a variable that changes what runs (`NODE_OPTIONS`, `LD_PRELOAD`,
//!   `npm_config_*`, `PYTHONPATH`, `DOCKER_HOST`, `PATH`, ...), for a
//!   package or in a bundle's manifest;
//! - read this process's environment: a template variable is filled only
//!   when declared, and only from the caller's answers or its default;
//! - start a bundle's program other than its server type's runtime (node,
//!   python, uv) on a file of the bundle, or a program of the bundle itself;
//! - write outside the private bundle folder, or start a bundle whose
//!   unpacked files differ from the verified archive;
//! - be another server's document: [`ServerJson::fetch`] refuses an answer
//!   whose name, or pinned version, is not the one asked for.
//!
//! A refused package is passed over (another package or a remote may
//! serve); when none is left, [`RegistryError::Refused`] says why.
//! The arguments are handed to the program as they are, never through a
//! shell. [`ServerJson::fetch`] gets one from a registry's API.

use serde_json::Value;

use crate::request::ConnectRequest;
use crate::transport::{HttpClient, StdioCommand};

/// Why a `server.json` gave no request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The text is not a `server.json` (not JSON, or no `name` of the
    /// registry's form `namespace/name`).
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
    /// Every package and remote that could have served was refused: the
    /// document asked what the launcher does not do (the first refusal).
    #[error("{name} cannot be started as its server.json asks")]
    Refused {
        /// The server's registry name.
        name: String,
        /// What was refused.
        #[source]
        refusal: Refusal,
    },
    /// The registry URL is not `http` or `https`, or cannot take a path.
    #[error("the registry URL is not an http or https URL that can take a path")]
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
    /// The registry answered with the document of another server, or of
    /// another version than the one pinned.
    #[error("the registry answered another {field} than the one asked for {name}")]
    Mismatch {
        /// The server asked for.
        name: String,
        /// `name` or `version`.
        field: &'static str,
    },
    /// Required variables of the only usable package or remote that
    /// nothing answers (each once, in the document's order).
    #[error("{name} needs values for {}", variables.join(", "))]
    MissingVariables {
        /// The server's registry name.
        name: String,
        /// The variables.
        variables: Vec<String>,
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
mod identifiers;
mod inputs;
mod launch;
mod mcpb;
mod remote;

pub use fetch::{RegistryOptions, PUBLIC_REGISTRY};
pub use inputs::Variable;
pub use launch::Refusal;
use launch::{Missing, Plan};
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
    /// Its `name` must have the registry's form (`namespace/name`, of
    /// letters, digits, `.`, `_` and `-`), so a name printed carries no
    /// terminal control.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let value: Value = serde_json::from_str(text).map_err(|_| RegistryError::NotServerJson)?;
        let server = match value.get("server") {
            Some(inner) if inner.is_object() => inner.clone(),
            _ => value,
        };
        match server.get("name").and_then(Value::as_str) {
            Some(name) if is_server_name(name) => Ok(ServerJson {
                server,
                bundles: Vec::new(),
            }),
            _ => Err(RegistryError::NotServerJson),
        }
    }

    /// The server's registry name (`io.github.owner/name`).
    pub fn name(&self) -> &str {
        self.server["name"].as_str().unwrap_or_default()
    }

    /// The server's version, as the document gives it.
    pub fn version(&self) -> Option<&str> {
        self.server.get("version").and_then(Value::as_str)
    }

    /// Downloads, checks and unpacks the `mcpb` bundles a request may
    /// start: each one listed before the first other package whose runtime
    /// is on the PATH, until one whose program is. A bundle whose SHA-256
    /// is not its `fileSha256`, or whose manifest asks what the launcher
    /// does not do, refuses the server.
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
            } else if matches!(Plan::of(package), Ok(Some(plan)) if on_path(&plan.program)) {
                break;
            }
        }
        Ok(self)
    }

    /// A request for the server: the first package whose runtime
    /// `runtime_exists` says is there, else the first remote; named after
    /// the server. `answer` answers the variables the server needs (a
    /// value it answers is set for the child explicitly); nothing is read
    /// from this process's environment but whether a local package's child
    /// inherits a required variable.
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
        let inherited = |variable: &str| std::env::var_os(variable).is_some();
        let mut runtimes = Vec::new();
        let mut missing: Option<Vec<String>> = None;
        let mut refused = None;
        for (index, package) in list(&self.server, "packages").enumerate() {
            let plan = match self.plan(index, package) {
                Ok(Some(plan)) => plan,
                Ok(None) => continue,
                Err(refusal) => {
                    refused = refused.or(Some(refusal));
                    continue;
                }
            };
            runtimes.push(plan.program.clone());
            if !runtime_exists(&plan.program) {
                continue;
            }
            match plan.command(package, answer, &inherited) {
                Ok(command) => {
                    return Ok(Resolved {
                        request: ConnectRequest::stdio(command).with_name(name.as_str()),
                        url_template: None,
                    })
                }
                Err(Missing(variables)) => missing = missing.or(Some(variables)),
            }
        }
        for remote in list(&self.server, "remotes") {
            match remote::request(remote, answer) {
                remote::Remote::Usable(request) => {
                    return Ok(Resolved {
                        request: request.with_name(name.as_str()),
                        url_template: text(remote, "url").map(str::to_owned),
                    })
                }
                remote::Remote::Unusable => {}
                remote::Remote::Missing(variables) => missing = missing.or(Some(variables)),
                remote::Remote::Refused(refusal) => refused = refused.or(Some(refusal)),
            }
        }
        match (missing, refused) {
            (Some(variables), _) => Err(RegistryError::MissingVariables { name, variables }),
            (None, Some(refusal)) => Err(RegistryError::Refused { name, refusal }),
            (None, None) => Err(RegistryError::NothingUsable {
                name,
                runtimes: runtimes.join(", "),
            }),
        }
    }

    /// How package `index` starts (`None` when this client cannot start
    /// it), or why the document may not have it started.
    fn plan(&self, index: usize, package: &Value) -> Result<Option<Plan>, Refusal> {
        launch::check_variables(package)?;
        if text(package, "registryType") == Some("mcpb") {
            let bundle = self.bundles.iter().find(|bundle| bundle.package == index);
            return Ok(bundle.map(|bundle| {
                Plan::bundle(
                    bundle.program.clone(),
                    bundle.args.clone(),
                    bundle.env.clone(),
                )
            }));
        }
        Plan::of(package)
    }

    /// [`request_with`](Self::request_with) with the runtimes on this
    /// process's PATH, no variable answered (defaults only; a local
    /// package's child still inherits this process's environment).
    pub fn request(&self) -> Result<ConnectRequest, RegistryError> {
        self.request_answered(&|_| None)
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

/// A registry server name: `namespace/name`, letters, digits, `.`, `_`,
/// `-` (the registry's own pattern), 3 to 200 characters.
pub(crate) fn is_server_name(name: &str) -> bool {
    let part = |part: &str, extra: &[char]| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || extra.contains(&c))
    };
    (3..=200).contains(&name.len())
        && name
            .split_once('/')
            .is_some_and(|(namespace, rest)| part(namespace, &[]) && part(rest, &['_']))
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

#[cfg(test)]
mod hostile;
#[cfg(test)]
mod tests;

/// Whether a document may set `name` for its server (the fuzz targets).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn fuzz_variable_allowed(name: &str) -> bool {
    launch::check_variable(name).is_ok()
}

/// The bundle reader on arbitrary bytes (the fuzz targets).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn fuzz_bundle(data: &[u8]) {
    mcpb::fuzz(data);
}

/// The bundle's name checks alone (the fuzz targets' tests).
#[cfg(test)]
pub(crate) fn fuzz_open_bundle(data: &[u8]) -> Result<(), BundleError> {
    mcpb::fuzz_open(data)
}
