//! The servers config file that hosts share: Claude Desktop's and Cursor's
//! `mcpServers`, VS Code's `servers` (in `.vscode/mcp.json`, or under `mcp`
//! in its settings), read into one [`ConnectRequest`] per server.
//!
//! ```
//! use mcp_connect::config::ServersConfig;
//!
//! let file = r#"{ "mcpServers": {
//!     "files":  { "command": "mcp-server-files", "args": ["/srv"], "env": { "LOG": "warn" } },
//!     "github": { "url": "https://mcp.example.com/mcp",
//!                 "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" } },
//!     "broken": { "args": [] }
//! } }"#;
//! let env = |name: &str| (name == "GITHUB_TOKEN").then(|| "t0ken".to_owned());
//! let config = ServersConfig::parse_with(file, &env)?;
//! assert_eq!(config.servers().count(), 2);
//! let broken = config.errors().next().unwrap();
//! assert_eq!(broken.name(), "broken");
//! let github = config.get("github").unwrap().request();
//! assert_eq!(github.name(), "github");
//! // Nothing printable shows the token.
//! assert!(!format!("{config:?}").contains("t0ken"));
//! # Ok::<(), mcp_connect::config::ConfigFileError>(())
//! ```
//!
//! An entry with `command` is a stdio server (`args`, `env`, `cwd`); one
//! with `url` is remote (`headers`, and `socket`: a Unix socket to reach
//! it over, the URL still giving path and `Host`), and its optional `type` chooses the
//! transport: `http` is Streamable HTTP with the HTTP+SSE fallback (what
//! VS Code does with it), `streamable-http` Streamable HTTP only, `sse`
//! HTTP+SSE only; `stdio` may be said too (FastMCP calls the field
//! `transport`). `${...}` references in the
//! command, the arguments, the environment's and headers' values, `cwd`
//! and the URL are expanded ([`Variables`]: the environment with defaults
//! and fallbacks, inputs the application supplies, the workspace folder);
//! one that has no value is an error, never an empty string. `"enabled": false` (Codex, the
//! draft standard) or `"disabled": true` (Claude Desktop, Cline) leaves a server out of
//! [`ServersConfig::servers`] and in [`ServersConfig::disabled`]. Every other field
//! (`autoApprove`, `timeout`, ...) is kept in
//! [`ServerConfig::unknown`] for the application, and named by
//! [`ServerConfig::unknown_fields`]. One bad entry is an [`EntryError`]
//! naming it; the others are read all the same.
//!
//! The text may be JSONC as VS Code writes it (`//` and `/* */` comments,
//! trailing commas) and may start with a UTF-8 byte-order mark. A key
//! written twice takes its last value, as in VS Code and `JSON.parse`. A
//! relative `cwd` is relative to the working directory of the process that
//! starts the server, as a relative `command` is: write an absolute one
//! when the file is read from elsewhere.
//!
//! Where this differs from hosts: nothing is started or connected here,
//! and nothing here asks a person (an `${input:...}` the application did
//! not supply is an error).

mod check;
mod codex;
#[cfg(test)]
mod corpus;
mod durations;
mod error;
mod expand;
mod fields;
mod format;
mod inputs;
mod jsonc;
mod oauth;
mod policies;
#[cfg(feature = "registry")]
mod registry;
#[cfg(test)]
mod schema;
mod server;
mod settings;
mod source;
mod standard;
mod target;

use std::path::Path;

use serde_json::{Map, Value};

pub use check::Launch;
pub use error::{ConfigFileError, EntryError, EntryProblem};

use crate::request::TransportMode;
use crate::ConnectRequest;
use expand::expand;
pub use expand::Variables;
use fields::{flag, list, strings, text};
pub use format::Format;
pub use inputs::Input;
pub use oauth::OAuthSettings;
#[cfg(feature = "registry")]
pub use registry::{RegistryDocuments, RegistrySource, FETCHES_AT_ONCE};
use settings::Settings;
pub use settings::PACE_FLOOR;
pub use source::ConfigSource;
use target::{invalid, remote, stdio};

/// A file's top-level `"prefix"`: whether a group prefixes its tools'
/// names with their server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefixMode {
    /// `"conditional"`: bare unless two servers offer the same name.
    Conditional,
    /// `"always"`: `server__tool` for every tool.
    Always,
    /// `"never"`: names as the servers give them; a collision is refused.
    Never,
}

/// The largest config file [`ServersConfig::read`] reads: 4 MiB, far
/// beyond any real file.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// The fields this reader understands; every other one is kept as unknown.
const KNOWN: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "lazy",
    "socket",
    "enabled",
    "disabled",
    "required",
    "registry",
    "version",
    "transport",
    "proxy",
    "cacert",
];

/// The text of the config file at `path`, read as [`ServersConfig::read`]
/// reads it (at most [`MAX_FILE_BYTES`], UTF-8). It blocks on the file
/// system, as a FIFO with no writer blocks: an application that must stay
/// responsive reads it on a thread of its own (the command does, and stops
/// waiting at the first signal), then parses the text with
/// [`ServersConfig::parse_as`].
pub fn read_text(path: &Path) -> Result<String, ConfigFileError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(ConfigFileError::Io)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(ConfigFileError::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ConfigFileError::TooLarge {
            limit: MAX_FILE_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|_| ConfigFileError::NotUtf8)
}

/// Every server of one config file, each read on its own, in name order.
#[derive(Debug)]
pub struct ServersConfig {
    entries: Vec<Result<ServerConfig, EntryError>>,
    inputs: Vec<Input>,
    /// The top-level `"prefix"`: how the group names its tools.
    prefix: Option<PrefixMode>,
    /// The top-level `"quotas"`: a rate per tool name pattern.
    quotas: Vec<(String, crate::store::Rate)>,
    /// The registry entries not resolved yet, as written.
    #[cfg(feature = "registry")]
    pending: Vec<(String, Map<String, Value>)>,
}

/// One server of a config file: its name, the request that reaches it and
/// the fields this reader does not know.
#[derive(Clone)]
pub struct ServerConfig {
    name: String,
    request: ConnectRequest,
    unknown: Map<String, Value>,
    revision: [u8; 16],
    lazy: bool,
    enabled: bool,
    required: bool,
    settings: Settings,
    launch: Launch,
}

impl ServersConfig {
    /// Reads `path`, with variables from this process's environment.
    /// A file larger than [`MAX_FILE_BYTES`] is refused unread
    /// (`--config /dev/zero` ends at once).
    /// A path ending in `.toml` is read as Codex's `config.toml`.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, ConfigFileError> {
        Self::read_with_variables(path, &Variables::new(&|name| std::env::var(name).ok()))
    }

    /// Reads `path` as [`read`](Self::read) does, its references answered
    /// by `variables`.
    pub fn read_with_variables(
        path: impl AsRef<Path>,
        variables: &Variables<'_>,
    ) -> Result<Self, ConfigFileError> {
        Self::read_as(path.as_ref(), Format::of_path(path.as_ref()), variables)
    }

    /// Reads `path` written in `format` (as [`read`](Self::read) does
    /// otherwise), its references answered by `variables`.
    pub fn read_as(
        path: &Path,
        format: Format,
        variables: &Variables<'_>,
    ) -> Result<Self, ConfigFileError> {
        Self::parse_as(&read_text(path)?, format, variables)
    }

    /// Reads a config from its text, with variables from this process's
    /// environment.
    pub fn parse(text: &str) -> Result<Self, ConfigFileError> {
        Self::parse_with(text, &|name| std::env::var(name).ok())
    }

    /// Reads a config from its text, with variables from `env`.
    pub fn parse_with(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigFileError> {
        Self::parse_with_variables(text, &Variables::new(env))
    }

    /// Reads a config from its text, its `${...}` references answered by
    /// `variables` (the environment, inputs, the workspace folder).
    pub fn parse_with_variables(
        text: &str,
        variables: &Variables<'_>,
    ) -> Result<Self, ConfigFileError> {
        Self::parse_as(text, Format::Json, variables)
    }

    /// Reads a config written in `format` from its text, its references
    /// answered by `variables`.
    pub fn parse_as(
        text: &str,
        format: Format,
        variables: &Variables<'_>,
    ) -> Result<Self, ConfigFileError> {
        let mut config = match format {
            Format::Toml => Self::from_servers(&codex::servers(text)?, variables, false),
            Format::Json => Self::from_json(text, variables, false)?,
            Format::Standard => Self::from_json(text, variables, true)?,
        };
        for entry in &mut config.entries {
            if let Err(error) = entry {
                let field = error.problem.field();
                error.position = check::position(text, format, &error.name, field);
            }
        }
        Ok(config)
    }

    fn from_json(
        text: &str,
        variables: &Variables<'_>,
        standard: bool,
    ) -> Result<Self, ConfigFileError> {
        let file: Value =
            serde_json::from_str(&jsonc::to_json(text)).map_err(|e| ConfigFileError::Json {
                line: e.line(),
                column: e.column(),
            })?;
        let Value::Object(file) = file else {
            return Err(ConfigFileError::NotAnObject);
        };
        let config = Self::from_servers(servers_of(&file)?, variables, standard);
        let prefix = match file.get("prefix") {
            None => None,
            Some(mode) => Some(match mode.as_str() {
                Some("conditional") => PrefixMode::Conditional,
                Some("always") => PrefixMode::Always,
                Some("never") => PrefixMode::Never,
                _ => return Err(ConfigFileError::PrefixMode),
            }),
        };
        let quotas = match file.get("quotas") {
            None => Vec::new(),
            Some(Value::Object(quotas)) => (quotas.iter())
                .map(|(tool, rate)| {
                    let rate = rate.as_str().and_then(|r| r.parse().ok());
                    Ok((tool.clone(), rate.ok_or(ConfigFileError::Quota)?))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(ConfigFileError::Quota),
        };
        Ok(ServersConfig {
            inputs: inputs::read(&file),
            prefix,
            quotas,
            ..config
        })
    }

    /// Each entry read, `standard`'s rules checked first when asked.
    fn from_servers(
        servers: &Map<String, Value>,
        variables: &Variables<'_>,
        standard: bool,
    ) -> Self {
        #[cfg(feature = "registry")]
        let mut pending = Vec::new();
        let entries = servers
            .iter()
            .map(|(name, entry)| {
                // A registry entry waits for its `server.json`.
                #[cfg(feature = "registry")]
                if let Value::Object(written) = entry {
                    if matches!(unresolved(written), EntryProblem::RegistryNotFetched)
                        && written.contains_key("registry")
                    {
                        pending.push((name.clone(), written.clone()));
                    }
                }
                let checked = match standard {
                    true => standard::check(name, entry),
                    false => Ok(()),
                };
                let read = checked.and_then(|()| ServerConfig::read(name, entry, variables));
                let read = read.map_err(|problem| match problem {
                    EntryProblem::MissingInputs { mut ids } => {
                        for id in inputs::unanswered(entry, variables) {
                            if !ids.contains(&id) {
                                ids.push(id);
                            }
                        }
                        EntryProblem::MissingInputs { ids }
                    }
                    problem => problem,
                });
                read.map_err(|problem| EntryError {
                    name: name.clone(),
                    problem,
                    position: None,
                })
            })
            .collect();
        ServersConfig {
            entries,
            inputs: Vec::new(),
            prefix: None,
            quotas: Vec::new(),
            #[cfg(feature = "registry")]
            pending,
        }
    }

    /// Every entry, read or refused, in name order.
    pub fn entries(&self) -> &[Result<ServerConfig, EntryError>] {
        &self.entries
    }

    /// The entries that were read and are enabled: the servers to start.
    pub fn servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.read_entries().filter(|server| server.enabled)
    }

    /// The entries that were read but are turned off
    /// ([`ServerConfig::is_enabled`]).
    pub fn disabled(&self) -> impl Iterator<Item = &ServerConfig> {
        self.read_entries().filter(|server| !server.enabled)
    }

    fn read_entries(&self) -> impl Iterator<Item = &ServerConfig> {
        self.entries.iter().filter_map(|entry| entry.as_ref().ok())
    }

    /// The entries that were refused, each naming its server.
    pub fn errors(&self) -> impl Iterator<Item = &EntryError> {
        self.entries.iter().filter_map(|entry| entry.as_ref().err())
    }

    /// The file's top-level `"prefix"`: how a group of its servers names
    /// their tools (a [`Naming`](crate::group::Naming) through `From`).
    pub fn prefix(&self) -> Option<PrefixMode> {
        self.prefix
    }

    /// The file's top-level `"quotas"`: each principal's rate for the
    /// tools whose exposed name matches each pattern (a gateway's
    /// `Quotas::per_tool`), in the file's order.
    pub fn tool_quotas(&self) -> &[(String, crate::store::Rate)] {
        &self.quotas
    }

    /// The server called `name`, when it was read (enabled or not).
    pub fn get(&self, name: &str) -> Option<&ServerConfig> {
        self.read_entries().find(|server| server.name == name)
    }
}

/// The servers object of a file: `mcpServers`, `servers`, or `mcp.servers`.
fn servers_of(file: &Map<String, Value>) -> Result<&Map<String, Value>, ConfigFileError> {
    fn object(value: Option<&Value>) -> Option<&Map<String, Value>> {
        value.and_then(Value::as_object)
    }
    let nested = object(file.get("mcp")).and_then(|mcp| object(mcp.get("servers")));
    match (object(file.get("mcpServers")), object(file.get("servers"))) {
        (Some(_), Some(_)) => Err(ConfigFileError::BothForms),
        (Some(servers), None) | (None, Some(servers)) => Ok(servers),
        (None, None) => nested.ok_or(ConfigFileError::NoServers),
    }
}

/// What an entry that names a registry server is before it is fetched:
/// refused when it also has a `command` or `url`, or its `registry` or
/// `version` is not text; not fetched yet otherwise (without the `registry`
/// feature, never fetched: [`EntryProblem::RegistryUnavailable`]).
fn unresolved(entry: &Map<String, Value>) -> EntryProblem {
    if entry.contains_key("command") || entry.contains_key("url") {
        return EntryProblem::RegistryAndLaunch;
    }
    match (
        fields::text(entry, "registry"),
        fields::text(entry, "version"),
    ) {
        (Err(problem), _) | (_, Err(problem)) => problem,
        #[cfg(feature = "registry")]
        _ => EntryProblem::RegistryNotFetched,
        #[cfg(not(feature = "registry"))]
        _ => EntryProblem::RegistryUnavailable,
    }
}

impl ServerConfig {
    fn read(name: &str, entry: &Value, variables: &Variables<'_>) -> Result<Self, EntryProblem> {
        let Value::Object(entry) = entry else {
            return Err(EntryProblem::NotAnObject);
        };
        if entry.contains_key("registry") {
            return Err(unresolved(entry));
        }
        fields::check_types(entry)?;
        // FastMCP writes the transport as `transport`.
        let kind = match text(entry, "type")? {
            None => text(entry, "transport")?,
            kind => kind,
        };
        let mode = match kind {
            None => None,
            Some("stdio") => Some(TransportMode::Stdio),
            Some("http") => Some(TransportMode::Auto),
            Some("streamable-http") => Some(TransportMode::StreamableHttp),
            Some("sse") => Some(TransportMode::Sse),
            Some(_) => return Err(EntryProblem::UnknownType),
        };
        let (command, url) = (text(entry, "command")?, text(entry, "url")?);
        if command.is_some() && url.is_none() {
            if entry.contains_key("socket") {
                return Err(EntryProblem::SocketWithoutUrl);
            }
            let mut own_client = target::OWN_CLIENT.into_iter();
            if let Some(field) = own_client.find(|f| entry.contains_key(*f)) {
                return Err(EntryProblem::NeedsUrl { field });
            }
        }
        let request = match (command, url, mode) {
            (Some(_), Some(_), _) => return Err(EntryProblem::CommandAndUrl),
            (None, None, _) => return Err(EntryProblem::NoCommandOrUrl),
            (Some(command), None, None | Some(TransportMode::Stdio)) => {
                stdio(command, entry, variables)?
            }
            (None, Some(url), mode) if mode != Some(TransportMode::Stdio) => {
                remote(url, mode.unwrap_or_default(), entry, variables)?
            }
            _ => return Err(EntryProblem::TypeMismatch),
        };
        let launch = Launch::of(request.target(), entry);
        Self::finish(name, entry, request, launch, variables)
    }

    /// The entry's settings read around the `request` that reaches its
    /// server (from `command` or `url`, or from a registry `server.json`).
    fn finish(
        name: &str,
        entry: &Map<String, Value>,
        request: ConnectRequest,
        launch: Launch,
        variables: &Variables<'_>,
    ) -> Result<Self, EntryProblem> {
        let mut settings = Settings::read(entry)?;
        let limits = settings.limits(request.limits());
        let request = request.with_name(name).with_limits(limits);
        let field = match request.target().http_url() {
            Some(_) => "url",
            None => "command",
        };
        request.validate().map_err(invalid(field))?;
        settings.policies = policies::replicas(entry, &request, settings.policies, variables)?;
        settings.oauth = oauth::read(entry, &request, variables)?;
        let lazy = flag(entry, "lazy", false)?;
        let required = flag(entry, "required", false)?;
        // Codex and the draft standard say `enabled`; Claude Desktop and
        // Cline `disabled`.
        let enabled = flag(entry, "enabled", true)? && !flag(entry, "disabled", false)?;
        let unknown = entry
            .iter()
            .filter(|(field, _)| {
                let remote = request.target().http_url().is_some();
                let codex = remote && codex::FIELDS.contains(&field.as_str());
                let known =
                    KNOWN.contains(&field.as_str()) || settings::FIELDS.contains(&field.as_str());
                !codex && !known
            })
            .map(|(field, value)| (field.clone(), value.clone()))
            .collect();
        // The entry as written (its variables unexpanded; the target's
        // own fingerprint covers what they expand to).
        let written = serde_json::to_vec(entry).expect("JSON values serialize");
        Ok(ServerConfig {
            name: name.to_owned(),
            request,
            unknown,
            revision: crate::transport::redact::fingerprint(&[&written]),
            lazy,
            enabled,
            required,
            settings,
            launch,
        })
    }
}

#[cfg(test)]
mod tests;
