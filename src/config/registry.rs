//! Entries that name a server of the MCP Registry instead of a `command`
//! or a `url`:
//!
//! ```json
//! "files": { "registry": "io.github.acme/files", "version": "1.2.0" },
//! "local": { "registry": "./server.json" }
//! ```
//!
//! Reading the file never touches the network, so such an entry is first
//! [`EntryProblem::RegistryNotFetched`]. [`ServersConfig::fetch_registry`]
//! gets each `server.json` (from the registry's API, or the local file a
//! `registry` ending in `.json` names) and
//! [`ServersConfig::resolve_registry`] turns it into the entry's request
//! the way [`ServerJson`] does, with the entry's own settings (timeouts,
//! tools, policies, `enabled`, ...) around it. The two steps are apart so
//! an application can ask a person for the inputs the server needs and
//! resolve again without fetching again. A variable the server declares
//! is answered by the entry's own `env` (its values expanded as any
//! entry's: `"env": { "API_KEY": "${env:MY_KEY}" }` is the user naming
//! the variable for it), else by the input of its name, else by its
//! default; never straight from the environment, which would let a
//! document read any variable it names. The entry's `env` is also set for
//! a stdio package's child. A variable the server needs that nothing
//! answers refuses the entry as [`EntryProblem::MissingServerVariables`]
//! (naming every one), and the server's declared variables join
//! [`ServersConfig::inputs`], so the command prompts for them as for VS
//! Code's inputs (a secret without echo).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{check::Launch, fields::text, EntryError, EntryProblem, ServerConfig, ServersConfig};
use super::{Variables, MAX_FILE_BYTES};
use crate::registry::{RegistryError, RegistryOptions, ServerJson};
use crate::transport::HttpClient;

/// How many `server.json` fetches run at once.
pub const FETCHES_AT_ONCE: usize = 8;

/// Where a registry entry's `server.json` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrySource {
    /// A server of the registry by its name, at `version` (`None`: the
    /// entry gave none, refused unless unpinned versions are allowed).
    Registry {
        /// The server's registry name (`io.github.owner/name`).
        name: String,
        /// The version the entry pins.
        version: Option<String>,
    },
    /// A `server.json` file (a `registry` value ending in `.json`).
    File(PathBuf),
}

/// The `server.json` of each registry entry, fetched once: give it to
/// [`ServersConfig::resolve_registry`] as often as needed. Each is kept
/// with the source it came from, so an entry whose `registry` or `version`
/// changed (a reload) is never resolved with its old document.
#[derive(Debug, Clone, Default)]
pub struct RegistryDocuments(Vec<Fetched>);

/// One entry's document, and where it came from.
type Fetched = (
    String,
    RegistrySource,
    Result<ServerJson, Arc<RegistryError>>,
);

/// What an entry with a `registry` field is, before anything is fetched.
fn source(entry: &Map<String, Value>) -> Option<RegistrySource> {
    let registry = text(entry, "registry").ok()??;
    if registry.ends_with(".json") {
        return Some(RegistrySource::File(PathBuf::from(registry)));
    }
    Some(RegistrySource::Registry {
        name: registry.to_owned(),
        version: text(entry, "version").ok()?.map(str::to_owned),
    })
}

impl ServersConfig {
    /// The entries that name a registry server and are not resolved yet,
    /// with where their `server.json` comes from.
    pub fn registry_entries(&self) -> impl Iterator<Item = (&str, RegistrySource)> {
        (self.pending.iter()).filter_map(|(name, entry)| Some((name.as_str(), source(entry)?)))
    }

    /// Fetches the `server.json` of every registry entry through `client`
    /// (its proxy, CA and TLS settings), as `options` say: from the
    /// registry at their base URL within their time limit, a version
    /// required unless they allow unpinned ones; a local file is read as
    /// it is. At most [`FETCHES_AT_ONCE`] at a time; one failure is that
    /// entry's alone. Each fetch has the options' limit; the caller bounds
    /// the whole (a deadline, a signal): what finished before the future
    /// is dropped is kept in the documents.
    pub async fn fetch_registry(
        &self,
        client: &HttpClient,
        options: &RegistryOptions,
    ) -> RegistryDocuments {
        let mut documents = RegistryDocuments::default();
        self.refresh_registry(&mut documents, client, options).await;
        documents
    }

    /// [`fetch_registry`](Self::fetch_registry) for a file read again (a
    /// reload): only the entries `documents` has nothing for from the same
    /// source are fetched (a new entry, or a `registry` or `version`
    /// changed), and what no entry names any more is dropped. A registry
    /// version is immutable, so what was fetched stands; what failed is
    /// tried again.
    pub async fn refresh_registry(
        &self,
        documents: &mut RegistryDocuments,
        client: &HttpClient,
        options: &RegistryOptions,
    ) {
        use futures_util::StreamExt as _;
        let entries: Vec<_> = self.registry_entries().collect();
        documents.0.retain(|(name, source, document)| {
            let named = entries
                .iter()
                .any(|(entry, now)| entry == name && now == source);
            named && document.is_ok()
        });
        let wanted: Vec<_> = entries
            .into_iter()
            .filter(|(name, _)| !documents.0.iter().any(|(known, _, _)| known == name))
            .collect();
        let fetches = wanted.into_iter().map(|(name, source)| async move {
            let document = match &source {
                // Off the runtime: a FIFO or a stalled file system holds a
                // blocking thread, never the caller's.
                RegistrySource::File(path) => {
                    let path = path.clone();
                    (tokio::task::spawn_blocking(move || read_file(&path)).await).unwrap_or_else(
                        |error| Err(RegistryError::Read(std::io::Error::other(error))),
                    )
                }
                RegistrySource::Registry { name, version } => {
                    ServerJson::fetch_pinned(client, options, name, version.as_deref()).await
                }
            };
            let document = match document {
                Ok(server) => server.prepare(client, options).await,
                Err(error) => Err(error),
            };
            (name.to_owned(), source, document.map_err(Arc::new))
        });
        let mut fetched = futures_util::stream::iter(fetches).buffer_unordered(FETCHES_AT_ONCE);
        while let Some(document) = fetched.next().await {
            documents.0.push(document);
        }
    }

    /// Resolves each registry entry `documents` has a `server.json` for
    /// into a server, its variables answered by `variables`' inputs, else
    /// the environment; an entry that cannot be is refused, naming why.
    /// The servers' declared variables join [`inputs`](Self::inputs).
    pub fn resolve_registry(&mut self, documents: &RegistryDocuments, variables: &Variables<'_>) {
        self.resolve_registry_with(documents, variables, &crate::registry::on_path);
    }

    /// [`resolve_registry`](Self::resolve_registry), a package's runtime
    /// found when `runtime_exists` says so (not this process's PATH): for
    /// an application that starts servers elsewhere, or knows which
    /// runtimes it allows.
    pub fn resolve_registry_with(
        &mut self,
        documents: &RegistryDocuments,
        variables: &Variables<'_>,
        runtime_exists: &dyn Fn(&str) -> bool,
    ) {
        for (name, from, document) in &documents.0 {
            let Some(at) = self.pending.iter().position(|(pending, entry)| {
                pending == name && source(entry).as_ref() == Some(from)
            }) else {
                continue;
            };
            let resolved = match document {
                Ok(server) => {
                    for variable in server.inputs() {
                        if !self
                            .inputs
                            .iter()
                            .any(|known| known.id() == variable.name())
                        {
                            self.inputs.push((&variable).into());
                        }
                    }
                    resolve(name, &self.pending[at].1, server, runtime_exists, variables)
                }
                Err(error) => Err(EntryProblem::Registry(error.clone())),
            };
            let slot = self.entries.iter_mut().find(|entry| match entry {
                Err(error) => error.name == *name,
                Ok(_) => false,
            });
            let Some(slot) = slot else { continue };
            let position = slot.as_ref().err().and_then(|error| error.position);
            if resolved.is_ok() {
                self.pending.remove(at);
            }
            *slot = resolved.map_err(|problem| EntryError {
                name: name.clone(),
                problem,
                position,
            });
        }
    }
}

/// The entry `name` from `server`, with the entry's own settings, the
/// server's variables answered by the entry's `env`, else its inputs.
fn resolve(
    name: &str,
    entry: &Map<String, Value>,
    server: &ServerJson,
    runtime_exists: &dyn Fn(&str) -> bool,
    variables: &Variables<'_>,
) -> Result<ServerConfig, EntryProblem> {
    let own = super::target::environment(entry, variables)?;
    let answer = |variable: &str| {
        let given = own.iter().find(|(name, _)| name == variable);
        (given.map(|(_, value)| value.clone())).or_else(|| variables.input(variable))
    };
    let resolved = server
        .resolve(runtime_exists, &answer)
        .map_err(|error| match error {
            RegistryError::MissingVariables { variables, .. } => {
                EntryProblem::MissingServerVariables { names: variables }
            }
            other => EntryProblem::Registry(Arc::new(other)),
        })?;
    let request = match resolved.request.target() {
        crate::request::Target::Stdio(command) if !own.is_empty() => {
            let command = (own.iter()).fold(command.clone(), |command, (name, value)| {
                command.env(name, value)
            });
            crate::ConnectRequest::stdio(command).with_name(resolved.request.name())
        }
        _ => resolved.request,
    };
    let launch = Launch::of_resolved(request.target(), resolved.url_template.as_deref());
    ServerConfig::finish(name, entry, request, launch, variables)
}

fn read_file(path: &std::path::Path) -> Result<ServerJson, RegistryError> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES).read_to_string(&mut text))
        .map_err(RegistryError::Read)?;
    ServerJson::parse(&text)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod untrusted;
