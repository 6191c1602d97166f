//! What can be wrong with a config file, and with one entry of it. No
//! variant carries a header value, an environment value, an argument or
//! the text of the file: only names the person wrote as names (the
//! server's, a field's, a variable's) and positions.

/// The file as a whole cannot be read as a servers config. One bad entry
/// is never this: it is an [`EntryError`] beside the good entries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("the config file could not be read")]
    Io(#[source] std::io::Error),
    /// The file is not JSON.
    #[error("the config file is not JSON (line {line}, column {column})")]
    Json {
        /// The line of the first error, from 1.
        line: usize,
        /// The column of the first error, from 1.
        column: usize,
    },
    /// The file (a Codex `config.toml`) is not TOML.
    #[error("the config file is not TOML (line {line}, column {column})")]
    Toml {
        /// The line of the first error, from 1.
        line: usize,
        /// The column of the first error, from 1.
        column: usize,
    },
    /// The file is Codex's `config.toml`, and this build reads no TOML
    /// (the `codex` feature is off).
    #[error("Codex's config.toml is read with the `codex` feature, which this build lacks")]
    CodexUnavailable,
    /// The file is larger than [`MAX_FILE_BYTES`](super::MAX_FILE_BYTES).
    #[error("the config file is larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The file is not UTF-8 text.
    #[error("the config file is not UTF-8 text")]
    NotUtf8,
    /// The top-level `prefix` is not `never`, `always` or `conditional`.
    #[error("the config file's `prefix` is not never, always or conditional")]
    PrefixMode,
    /// The top-level `quotas` is not an object of rates (`"10/min"`).
    #[error("the config file's `quotas` is not an object of rates such as \"10/min\"")]
    Quota,
    /// The top level is not a JSON object.
    #[error("the config file is not a JSON object")]
    NotAnObject,
    /// Neither `mcpServers`, `servers` nor `mcp.servers` is an object (nor
    /// `mcp_servers` a table, in TOML).
    #[error("the config file has no `mcpServers` or `servers` object")]
    NoServers,
    /// Both `mcpServers` and `servers`: which one is meant is not clear.
    #[error("the config file has both `mcpServers` and `servers`")]
    BothForms,
}

/// One entry of the file cannot be used; the others are unaffected.
#[derive(Debug, thiserror::Error)]
#[error("server {name:?} in the config file cannot be used")]
pub struct EntryError {
    pub(super) name: String,
    #[source]
    pub(super) problem: EntryProblem,
    pub(super) position: Option<(usize, usize)>,
}

impl EntryError {
    /// The entry's name (its key in the file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the problem is in the file's text (line and column from 1):
    /// the key of the field it names ([`EntryProblem::field`]), else where
    /// the entry starts; when it was read from text and found there.
    pub fn line_column(&self) -> Option<(usize, usize)> {
        self.position
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &EntryProblem {
        &self.problem
    }

    /// This error and every cause, for printing whole (`{}` on one line,
    /// `{:#}` a cause a line): `server "files" in the config file cannot be
    /// used: the registry server cannot be used: io.github.acme/files is
    /// not pinned to a version`. `Display` alone says only the first fact.
    pub fn report(&self) -> crate::error::report::Report<'_> {
        crate::error::report::Report::new(self)
    }
}

impl EntryProblem {
    /// The field the problem is in, when it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            EntryProblem::WrongType { field } | EntryProblem::BadDuration { field } => Some(field),
            EntryProblem::UnknownPolicy(name) => Some(name),
            EntryProblem::SafeToolsWithoutHedge => Some("safeTools"),
            EntryProblem::UnknownFilterMode => Some("toolFilter"),
            EntryProblem::UnknownType | EntryProblem::TypeMismatch => Some("type"),
            EntryProblem::CommandAndUrl => Some("url"),
            EntryProblem::SocketWithoutUrl | EntryProblem::SocketNeedsHttp => Some("socket"),
            EntryProblem::Invalid { field, .. }
            | EntryProblem::BaseOverMax { field }
            | EntryProblem::BelowFloor { field, .. } => Some(field),
            EntryProblem::NotOverSocket { field } | EntryProblem::NeedsUrl { field } => Some(field),
            EntryProblem::BadProxy(_) => Some("proxy"),
            EntryProblem::CaFile(_) | EntryProblem::NoTls => Some("cacert"),
            #[cfg(feature = "rustls")]
            EntryProblem::BadCa(_) => Some("cacert"),
            EntryProblem::RegistryAndLaunch
            | EntryProblem::RegistryNotFetched
            | EntryProblem::RegistryUnavailable => Some("registry"),
            #[cfg(feature = "registry")]
            EntryProblem::Registry(_) => Some("registry"),
            EntryProblem::ReplicasWithoutUrl => Some("replicas"),
            EntryProblem::NonStandardType => Some("type"),
            EntryProblem::FieldNotForType { field } => Some(field),
            EntryProblem::OAuthWithoutUrl
            | EntryProblem::OAuthAndAuthorizationHeader
            | EntryProblem::UnknownOAuthField(_) => Some("oauth"),
            _ => None,
        }
    }
}

/// What is wrong with one entry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryProblem {
    /// The entry is not a JSON object.
    #[error("the entry is not an object")]
    NotAnObject,
    /// Neither `command` (stdio) nor `url` (remote).
    #[error("the entry has neither `command` nor `url`")]
    NoCommandOrUrl,
    /// Both `command` and `url`.
    #[error("the entry has both `command` and `url`")]
    CommandAndUrl,
    /// A known field has the wrong JSON type (`args` not a list of
    /// strings, `env` or `headers` not an object of strings, ...).
    #[error("`{field}` has the wrong type")]
    WrongType {
        /// The field.
        field: &'static str,
    },
    /// A time limit (`tool_timeout_sec`, ...) is not a positive number in
    /// its unit, or too large to be one.
    #[error("`{field}` is not a positive time")]
    BadDuration {
        /// The field.
        field: &'static str,
    },
    /// `policies` names a policy this reader does not know (a policy
    /// misspelt would silently not apply).
    #[error("`policies` has no policy `{0}`")]
    UnknownPolicy(String),
    /// `policies` lists `safeTools` without `hedgeAfterMs`, which they are for.
    #[error("`policies` has `safeTools` without `hedgeAfterMs`")]
    SafeToolsWithoutHedge,
    /// `toolFilter`'s `mode` is neither `allow` nor `block`.
    #[error("`toolFilter` has no `mode` of allow or block")]
    UnknownFilterMode,
    /// `type` is none of `stdio`, `http`, `streamable-http`, `sse`.
    #[error("`type` is not one of stdio, http, streamable-http, sse")]
    UnknownType,
    /// `type` says stdio but the entry has a `url`, or a remote type but
    /// a `command`.
    #[error("`type` does not fit the entry's `command` or `url`")]
    TypeMismatch,
    /// `socket` on a stdio entry: only a remote server is reached over a
    /// Unix socket.
    #[error("`socket` is for an entry with a `url`")]
    SocketWithoutUrl,
    /// `proxy` or `cacert` on a stdio entry: they are for reaching a
    /// remote server.
    #[error("`{field}` is for an entry with a `url`")]
    NeedsUrl {
        /// The field.
        field: &'static str,
    },
    /// `proxy` or `cacert` beside `socket`: no proxy and no TLS apply over
    /// a Unix socket.
    #[error("`{field}` does not apply over a `socket`")]
    NotOverSocket {
        /// The field.
        field: &'static str,
    },
    /// `proxy` is not a usable proxy URL.
    #[error("`proxy` is not a usable proxy")]
    BadProxy(#[source] crate::transport::ProxyConfigError),
    /// `cacert` names a file that cannot be read.
    #[error("the `cacert` file cannot be read")]
    CaFile(#[source] std::io::Error),
    /// `cacert` holds no usable certificate.
    #[cfg(feature = "rustls")]
    #[error("the `cacert` file holds no usable CA certificate")]
    BadCa(#[source] crate::transport::TlsConfigError),
    /// `cacert` in a build without TLS (the `rustls` feature).
    #[error("`cacert` needs TLS, which this build does not have")]
    NoTls,
    /// `replicas` on a stdio entry: replicas are other URLs of a remote
    /// server.
    #[error("`replicas` is for an entry with a `url`")]
    ReplicasWithoutUrl,
    /// `oauth` on a stdio entry: OAuth authorizes a remote server.
    #[error("`oauth` is for an entry with a `url`")]
    OAuthWithoutUrl,
    /// `oauth` beside an `Authorization` header: one way to authorize.
    #[error("`oauth` and an `Authorization` header cannot both be given")]
    OAuthAndAuthorizationHeader,
    /// `oauth` has a field other than `clientId`, `scopes`, `redirectUri`.
    #[error("`oauth` has no field `{0}`")]
    UnknownOAuthField(String),
    /// No `type`, which the draft standard `mcp.json` requires.
    #[error("`type` is missing (the standard mcp.json requires it)")]
    MissingType,
    /// A `type` the draft standard does not have (it has no `http`).
    #[error("`type` is not one of stdio, sse, streamable-http (the standard mcp.json)")]
    NonStandardType,
    /// A field of the other transport (`headers` on a stdio entry, `env`
    /// on a remote one) in a standard `mcp.json`.
    #[error("`{field}` does not belong to an entry of this `type`")]
    FieldNotForType {
        /// The field.
        field: &'static str,
    },
    /// A server name outside the draft standard's letters, digits, `_`,
    /// `-`, `[` and `]`.
    #[error("the server's name has characters the standard mcp.json does not allow")]
    NonStandardName,
    /// `${NAME}` names a variable the environment does not have.
    #[error("the environment has no variable {variable}")]
    MissingVariable {
        /// The variable's name.
        variable: String,
    },
    /// `${input:id}` references the application did not supply
    /// ([`Variables::with_input`](super::Variables::with_input)): every one
    /// the entry needs, each once, in the order met.
    #[error("no value was given for the inputs {}", ids.join(", "))]
    MissingInputs {
        /// The inputs' ids.
        ids: Vec<String>,
    },
    /// Variables a registry server declares (a package's environment
    /// variables, a remote's template variables) that nothing answers:
    /// give them in the entry's `env` (or as inputs of those names, which
    /// the command asks for on a terminal).
    #[error("the registry server needs values for its variables {} (set them in the entry's `env`)", names.join(", "))]
    MissingServerVariables {
        /// The variables.
        names: Vec<String>,
    },
    /// `${kind:...}` of a kind other than `env`, `input` or `value`.
    #[error("only `env:`, `input:` and `value:` references are supported")]
    UnknownVariableKind,
    /// `${...}` whose name is not a variable name.
    #[error("a `${{...}}` reference does not name a variable")]
    BadVariableName,
    /// `${` without its `}`.
    #[error("a `${{` reference is not closed")]
    UnterminatedVariable,
    /// `registry` beside `command` or `url`: one way to start the server.
    #[error("the entry has `registry` and also `command` or `url`")]
    RegistryAndLaunch,
    /// A `registry` entry whose `server.json` was not fetched yet
    /// ([`ServersConfig::fetch_registry`](super::ServersConfig::fetch_registry)).
    #[error("the registry server was not fetched")]
    RegistryNotFetched,
    /// The registry server cannot be started or reached here.
    #[error("the registry server cannot be used")]
    #[cfg(feature = "registry")]
    Registry(#[source] std::sync::Arc<crate::registry::RegistryError>),
    /// The entry names a registry server, and this build fetches none (the
    /// `registry` feature is off).
    #[error("a registry entry needs the `registry` feature, which this build lacks")]
    RegistryUnavailable,
    /// What `field` gives is refused by
    /// [`ConnectRequest`](crate::ConnectRequest) (a bad URL or port, a
    /// header the transport owns, an empty command).
    #[error("`{field}` is not usable")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What the request said of it.
        #[source]
        source: crate::error::ConfigError,
    },
    /// `socket` with an `https://` URL: nothing speaks TLS over the socket.
    #[error("`socket` needs an http:// URL (no TLS is spoken over the socket)")]
    SocketNeedsHttp,
    /// A pace's `baseMs` is larger than its `maxMs`.
    #[error("`{field}`'s baseMs is larger than its maxMs")]
    BaseOverMax {
        /// The field.
        field: &'static str,
    },
    /// A pace below the floor a config may set, so no file makes a
    /// reconnect loop.
    #[error("`{field}`'s baseMs is below {floor_ms} ms")]
    BelowFloor {
        /// The field.
        field: &'static str,
        /// The floor, in milliseconds.
        floor_ms: u64,
    },
}
