//! A config file read again and again (a reload) with what was given for
//! it once: the answers to its `${input:...}` references and its registry
//! servers' variables, and the `server.json` of its registry entries.
//!
//! Reading a file with [`ServersConfig::read_with_variables`] each time
//! leaves the application to hand the same answers back on every reload;
//! one that forgets them gets entries refused for a missing input, and a
//! group reconciled with that file drops the server a person answered for.
//! A [`ConfigSource`] keeps them for the file's life, the way the command
//! does: a reload asks nothing again and fetches only registry entries that
//! are new or changed.

use std::path::{Path, PathBuf};

#[cfg(feature = "registry")]
use super::RegistryDocuments;
use super::{read_text, ConfigFileError, Format, ServersConfig, Variables};
#[cfg(feature = "registry")]
use crate::registry::RegistryOptions;
#[cfg(feature = "registry")]
use crate::transport::HttpClient;

/// A config file with its answers and registry documents kept across reads.
///
/// ```no_run
/// # #[cfg(feature = "registry")] mod example {
/// use mcp_connect::config::ConfigSource;
/// use mcp_connect::registry::RegistryOptions;
/// use mcp_connect::transport::HttpClient;
///
/// # async fn run() -> Result<(), mcp_connect::config::ConfigFileError> {
/// let client = HttpClient::default_client();
/// let registry = RegistryOptions::public();
/// let mut source = ConfigSource::new("mcp.json");
/// let config = source.read(&client, &registry).await?;
/// for id in config.missing_inputs() {
///     let answer = String::from("asked of a person"); // your own prompt
///     source.answer(id, answer);
/// }
/// // Every later read (a reload) keeps the answers.
/// let config = source.read(&client, &registry).await?;
/// # drop(config); Ok(()) }
/// # }
/// ```
pub struct ConfigSource {
    path: PathBuf,
    format: Format,
    answers: Vec<(String, String)>,
    #[cfg(feature = "registry")]
    registry: RegistryDocuments,
    workspace_folder: Option<String>,
}

impl ConfigSource {
    /// The file at `path`, in the format its name says ([`Format::of_path`]).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        ConfigSource {
            format: Format::of_path(&path),
            path,
            answers: Vec::new(),
            #[cfg(feature = "registry")]
            registry: RegistryDocuments::default(),
            workspace_folder: None,
        }
    }

    /// Read as `format` (the draft standard, say) whatever its name.
    #[must_use]
    pub fn with_format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// `${workspaceFolder}` is `folder`.
    #[must_use]
    pub fn with_workspace_folder(mut self, folder: impl Into<String>) -> Self {
        self.workspace_folder = Some(folder.into());
        self
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Answers the input `id` (or the registry variable of that name) for
    /// this read and every later one. Never printed.
    pub fn answer(&mut self, id: impl Into<String>, value: impl Into<String>) {
        let id = id.into();
        self.answers.retain(|(known, _)| *known != id);
        self.answers.push((id, value.into()));
    }

    /// Reads the file (on a blocking thread: a FIFO or a stalled file
    /// system holds that thread, not the caller's runtime; bound the
    /// future to bound the wait), fetches the `server.json` of the
    /// registry entries not fetched before from the same source, and
    /// resolves them, with every answer given so far and this process's
    /// environment for `${env:...}`.
    #[cfg(feature = "registry")]
    pub async fn read(
        &mut self,
        client: &HttpClient,
        options: &RegistryOptions,
    ) -> Result<ServersConfig, ConfigFileError> {
        let config = self.parse(self.text().await?)?;
        if config.registry_entries().next().is_none() {
            return Ok(config);
        }
        config
            .refresh_registry(&mut self.registry, client, options)
            .await;
        self.parse(self.text().await?)
    }

    /// Reads the file as `read` does, with the registry documents fetched
    /// before only (nothing is fetched; without the `registry` feature, a
    /// registry entry is [`EntryProblem::RegistryUnavailable`](super::EntryProblem::RegistryUnavailable)).
    pub async fn read_known(&self) -> Result<ServersConfig, ConfigFileError> {
        self.parse(self.text().await?)
    }

    async fn text(&self) -> Result<String, ConfigFileError> {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || read_text(&path))
            .await
            .map_err(|error| ConfigFileError::Io(std::io::Error::other(error)))?
    }

    fn parse(&self, text: String) -> Result<ServersConfig, ConfigFileError> {
        let env = |name: &str| std::env::var(name).ok();
        let mut variables = (self.answers.iter())
            .fold(Variables::new(&env), |variables, (id, value)| {
                variables.with_input(id.as_str(), value.as_str())
            });
        if let Some(folder) = &self.workspace_folder {
            variables = variables.with_workspace_folder(folder.as_str());
        }
        #[allow(unused_mut)]
        let mut config = ServersConfig::parse_as(&text, self.format, &variables)?;
        #[cfg(feature = "registry")]
        config.resolve_registry(&self.registry, &variables);
        Ok(config)
    }
}

impl std::fmt::Debug for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.answers.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("ConfigSource")
            .field("format", &self.format)
            .field("answered", &ids)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 64, item 16: an input answered once is kept on every later
    /// read (a reload read the file without it, refusing the entry a
    /// person had answered for, and a group reconciled with it dropped the
    /// server).
    #[tokio::test]
    async fn answers_are_kept_across_reloads() {
        let dir = std::env::temp_dir().join(format!("config-source-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mcp.json");
        let file = |extra: &str| {
            format!(
                r#"{{ "inputs": [ {{ "id": "token", "password": true }} ],
                     "servers": {{ "api": {{ "url": "https://api.test/mcp",
                                   "headers": {{ "Authorization": "Bearer ${{input:token}}" }} }}{extra} }} }}"#
            )
        };
        std::fs::write(&path, file("")).unwrap();
        let client = HttpClient::default_client();
        let options = RegistryOptions::public();
        let mut source = ConfigSource::new(&path);
        let first = source.read(&client, &options).await.unwrap();
        assert_eq!(first.missing_inputs(), ["token"]);
        source.answer("token", "t0ken-canary");
        let answered = source.read(&client, &options).await.unwrap();
        assert!(answered.get("api").is_some());
        // The file changes (another server): the answer stands.
        std::fs::write(&path, file(r#", "more": { "command": "srv" }"#)).unwrap();
        let reloaded = source.read(&client, &options).await.unwrap();
        let api = reloaded.get("api").expect("still answered");
        let crate::request::Target::Http { headers, .. } = api.request().target().clone() else {
            panic!("remote");
        };
        assert_eq!(headers["authorization"], "Bearer t0ken-canary");
        assert_eq!(reloaded.servers().count(), 2);
        assert!(!format!("{source:?}").contains("canary"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
