//! Fetching a `server.json` from an MCP Registry: `GET
//! {base}/v0.1/servers/{name}/versions/{version}` (the name
//! percent-encoded, `latest` for the newest), through the application's
//! [`HttpClient`] (so its proxy, CA and TLS settings apply), within a time
//! limit and a size bound.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::header::ACCEPT;
use http_body_util::Full;
use url::Url;

use super::{RegistryError, ServerJson};
use crate::transport::HttpClient;

/// The public registry.
pub const PUBLIC_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// A `server.json` larger than this is refused.
const BODY_LIMIT: usize = 1 << 20;

/// The URL of `name` at `version` in the registry at `base`.
pub(super) fn version_url(base: &Url, name: &str, version: &str) -> Result<Url, RegistryError> {
    if !matches!(base.scheme(), "http" | "https") {
        return Err(RegistryError::BadRegistryUrl);
    }
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| RegistryError::BadRegistryUrl)?
        .pop_if_empty()
        .extend(["v0.1", "servers", name, "versions", version]);
    Ok(url)
}

/// How registry servers are fetched: from which registry, within which
/// time limit, whether an unpinned version is allowed, and where `mcpb`
/// bundles are kept.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    pub(super) base: Url,
    pub(super) limit: Duration,
    pub(super) allow_unpinned: bool,
    pub(super) bundle_dir: Option<PathBuf>,
}

impl RegistryOptions {
    /// The registry at `base`; 30 s for each fetch; a version required;
    /// bundles under the user's cache directory
    /// (`$XDG_CACHE_HOME/mcp-connect/mcpb`, else `~/.cache/...`; an
    /// absolute path only). With neither there is no bundle folder (a
    /// shared temporary folder is never used): an `mcpb` package is then
    /// [`BundleError::NoPrivateFolder`](super::BundleError::NoPrivateFolder)
    /// unless [`with_bundle_dir`](Self::with_bundle_dir) gives one.
    pub fn new(base: Url) -> Self {
        let absolute = |path: PathBuf| path.is_absolute().then_some(path);
        let cache = (std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from))
            .and_then(absolute)
            .or_else(|| {
                let home = std::env::var_os("HOME").map(PathBuf::from);
                home.and_then(absolute).map(|home| home.join(".cache"))
            });
        RegistryOptions {
            base,
            limit: Duration::from_secs(30),
            allow_unpinned: false,
            bundle_dir: cache.map(|cache| cache.join("mcp-connect").join("mcpb")),
        }
    }

    /// The public registry ([`PUBLIC_REGISTRY`]).
    pub fn public() -> Self {
        Self::new(Url::parse(PUBLIC_REGISTRY).expect("the public registry's URL parses"))
    }

    /// Each fetch (a `server.json`, a bundle) within `limit`.
    #[must_use]
    pub fn with_time_limit(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// A server named without a version, or at `latest`, is fetched at its
    /// latest version instead of refused.
    #[must_use]
    pub fn allow_unpinned(mut self) -> Self {
        self.allow_unpinned = true;
        self
    }

    /// `mcpb` bundles are kept and unpacked under `dir`, one folder per
    /// digest. It must be this user's alone (made 0700 when missing; one
    /// others can change is refused when a bundle is prepared).
    #[must_use]
    pub fn with_bundle_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.bundle_dir = Some(dir.into());
        self
    }
}

impl ServerJson {
    /// Fetches `name` at `version` as `options` say: no version, or
    /// `latest`, is [`RegistryError::Unpinned`] unless they allow it.
    pub async fn fetch_pinned(
        client: &HttpClient,
        options: &RegistryOptions,
        name: &str,
        version: Option<&str>,
    ) -> Result<ServerJson, RegistryError> {
        let version = match version {
            Some(version) if version != "latest" => version,
            _ if options.allow_unpinned => "latest",
            _ => {
                return Err(RegistryError::Unpinned {
                    name: name.to_owned(),
                })
            }
        };
        Self::fetch(client, &options.base, name, version, options.limit).await
    }

    /// Fetches `name` at `version` (`"latest"` for the newest) from the
    /// registry at `base` through `client`, within `limit`. An answer that
    /// is the document of another server, or of another version than the
    /// one pinned, is [`RegistryError::Mismatch`]: a registry (or whoever
    /// answers for it) cannot substitute one server for another.
    pub async fn fetch(
        client: &HttpClient,
        base: &Url,
        name: &str,
        version: &str,
        limit: Duration,
    ) -> Result<ServerJson, RegistryError> {
        let url = version_url(base, name, version)?;
        let request = http::Request::get(url.as_str())
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|_| RegistryError::BadRegistryUrl)?;
        let exchange = crate::transport::exchange(client, request, BODY_LIMIT);
        let (parts, body) = tokio::time::timeout(limit, exchange)
            .await
            .map_err(|_| RegistryError::TimedOut)?
            .map_err(|error| RegistryError::Fetch(Box::new(error)))?;
        if !parts.status.is_success() {
            return Err(RegistryError::Status {
                status: parts.status.as_u16(),
            });
        }
        let text = std::str::from_utf8(&body).map_err(|_| RegistryError::NotServerJson)?;
        let server = ServerJson::parse(text)?;
        let mismatch = |field| RegistryError::Mismatch {
            name: name.to_owned(),
            field,
        };
        if server.name() != name {
            return Err(mismatch("name"));
        }
        if version != "latest" && server.version() != Some(version) {
            return Err(mismatch("version"));
        }
        Ok(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_one_path_segment() {
        let base = Url::parse("https://registry.test/").unwrap();
        let url = version_url(&base, "io.github.acme/files", "1.0.0").unwrap();
        assert_eq!(
            url.as_str(),
            "https://registry.test/v0.1/servers/io.github.acme%2Ffiles/versions/1.0.0"
        );
        let mirror = Url::parse("https://mirror.test/mcp").unwrap();
        let url = version_url(&mirror, "a/b", "latest").unwrap();
        assert_eq!(
            url.as_str(),
            "https://mirror.test/mcp/v0.1/servers/a%2Fb/versions/latest"
        );
    }

    /// Issue 63, item 19: a registry that is not http or https is refused
    /// as such, before anything is sent (it failed as "TLS failed").
    #[test]
    fn only_http_and_https_registries_are_asked() {
        for base in [
            "ftp://registry.test/",
            "file:///srv/registry",
            "unix:/run/r",
        ] {
            let base = Url::parse(base).unwrap();
            assert!(matches!(
                version_url(&base, "a/b", "1.0.0"),
                Err(RegistryError::BadRegistryUrl)
            ));
        }
    }
}
