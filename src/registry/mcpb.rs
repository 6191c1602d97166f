//! `mcpb` packages: an MCP Bundle (a zip file with a `manifest.json`)
//! downloaded from the URL the package gives, refused unless its SHA-256
//! is the package's `fileSha256`, unpacked once into a directory named by
//! that digest, and started as its manifest's `server.mcp_config` says
//! (`command`, `args`, `env`, with `${__dirname}` the bundle's directory).
//!
//! The digest is checked before a byte is unpacked; unpacking refuses a
//! path that leaves the directory, and stops at a size and an entry count,
//! so a hostile bundle can neither write elsewhere nor fill the disk. It
//! goes to a temporary directory renamed into place when complete: a
//! half-unpacked bundle is never started. A manifest value naming a
//! `${user_config...}` the bundle wants a person to fill refuses it.

use std::io::Read as _;
use std::path::Path;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{text, RegistryOptions};
use crate::transport::HttpClient;

/// A bundle larger than this is refused (downloaded or unpacked).
const BUNDLE_LIMIT: usize = 256 << 20;
/// A bundle with more files than this is refused.
const ENTRY_LIMIT: usize = 20_000;

/// Why an `mcpb` bundle cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The package has no `fileSha256`, or not 64 hex digits.
    #[error("the package gives no SHA-256 digest")]
    NoDigest,
    /// The package's `identifier` is not an https (or loopback http) URL.
    #[error("the bundle's URL is not https")]
    BadUrl,
    /// The download did not finish within the time limit.
    #[error("the bundle was not downloaded in time")]
    TimedOut,
    /// The download failed.
    #[error("the bundle could not be downloaded")]
    Download(#[source] Box<crate::transport::error::TransportError>),
    /// The server answered the download with an error status.
    #[error("the bundle's server answered HTTP {status}")]
    Status {
        /// The status.
        status: u16,
    },
    /// The file's SHA-256 is not the package's `fileSha256`.
    #[error("the downloaded bundle's SHA-256 is not the one its server.json gives")]
    DigestMismatch,
    /// Not a zip file, a path leaving the bundle, or over the limits.
    #[error("the bundle is not a well-formed mcpb file")]
    Malformed,
    /// Writing the unpacked bundle failed.
    #[error("the bundle could not be unpacked")]
    Unpack(#[source] std::io::Error),
    /// No `manifest.json`, or no `server.mcp_config.command` in it.
    #[error("the bundle's manifest does not say how to start it")]
    NoCommand,
    /// A manifest value names a variable this client cannot answer.
    #[error("the bundle's manifest needs {variable}, which only a person can give")]
    ManifestVariable {
        /// The variable, as the manifest writes it.
        variable: String,
    },
}

/// A bundle unpacked and ready: how its manifest starts it.
#[derive(Debug, Clone)]
pub(super) struct Bundle {
    /// Which package of the `server.json` it is.
    pub(super) package: usize,
    pub(super) program: String,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(String, String)>,
}

/// Downloads (unless already unpacked), checks and unpacks the bundle of
/// `package`, the `index`th of its `server.json`.
pub(super) async fn prepare(
    client: &HttpClient,
    options: &RegistryOptions,
    index: usize,
    package: &Value,
) -> Result<Bundle, BundleError> {
    let digest = text(package, "fileSha256")
        .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or(BundleError::NoDigest)?
        .to_ascii_lowercase();
    let dir = options.bundle_dir.join(&digest);
    if !dir.is_dir() {
        let url = text(package, "identifier").ok_or(BundleError::BadUrl)?;
        let bytes = download(client, url, options).await?;
        if crate::redact::hex(&Sha256::digest(&bytes)) != digest {
            return Err(BundleError::DigestMismatch);
        }
        unpack(&bytes, &dir)?;
    }
    manifest_command(&dir, index)
}

async fn download(
    client: &HttpClient,
    url: &str,
    options: &RegistryOptions,
) -> Result<Bytes, BundleError> {
    let parsed = url::Url::parse(url).map_err(|_| BundleError::BadUrl)?;
    let loopback = matches!(parsed.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    if parsed.scheme() != "https" && !(parsed.scheme() == "http" && loopback) {
        return Err(BundleError::BadUrl);
    }
    let request = http::Request::get(parsed.as_str())
        .body(Full::new(Bytes::new()))
        .map_err(|_| BundleError::BadUrl)?;
    let exchange = crate::transport::exchange(client, request, BUNDLE_LIMIT);
    let (parts, body) = tokio::time::timeout(options.limit, exchange)
        .await
        .map_err(|_| BundleError::TimedOut)?
        .map_err(|error| BundleError::Download(Box::new(error)))?;
    if !parts.status.is_success() {
        return Err(BundleError::Status {
            status: parts.status.as_u16(),
        });
    }
    Ok(body)
}

/// Unpacks `bytes` (a zip) into `dir`, whole or not at all.
fn unpack(bytes: &[u8], dir: &Path) -> Result<(), BundleError> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|_| BundleError::Malformed)?;
    if archive.len() > ENTRY_LIMIT {
        return Err(BundleError::Malformed);
    }
    let parent = dir.parent().ok_or(BundleError::Malformed)?;
    std::fs::create_dir_all(parent).map_err(BundleError::Unpack)?;
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|_| BundleError::Malformed)?;
    let partial = parent.join(format!(".partial-{}", crate::redact::hex(&nonce)));
    let written = write_entries(&mut archive, &partial);
    let placed = written.and_then(|()| match std::fs::rename(&partial, dir) {
        Ok(()) => Ok(()),
        // Another process unpacked the same digest first.
        Err(_) if dir.is_dir() => Ok(()),
        Err(error) => Err(BundleError::Unpack(error)),
    });
    let _ = std::fs::remove_dir_all(&partial);
    placed
}

fn write_entries(
    archive: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    into: &Path,
) -> Result<(), BundleError> {
    let mut total = 0usize;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|_| BundleError::Malformed)?;
        let relative = entry.enclosed_name().ok_or(BundleError::Malformed)?;
        let path = into.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(BundleError::Unpack)?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(BundleError::Unpack)?;
        }
        let mut contents = Vec::new();
        let room = BUNDLE_LIMIT.saturating_sub(total);
        (&mut entry)
            .take(room as u64 + 1)
            .read_to_end(&mut contents)
            .map_err(|_| BundleError::Malformed)?;
        total += contents.len();
        if total > BUNDLE_LIMIT {
            return Err(BundleError::Malformed);
        }
        std::fs::write(&path, &contents).map_err(BundleError::Unpack)?;
        #[cfg(unix)]
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt as _;
            let permissions = std::fs::Permissions::from_mode(mode & 0o755);
            std::fs::set_permissions(&path, permissions).map_err(BundleError::Unpack)?;
        }
    }
    Ok(())
}

/// The bundle of package `index`, started as the manifest in `dir` says.
fn manifest_command(dir: &Path, index: usize) -> Result<Bundle, BundleError> {
    let text =
        std::fs::read_to_string(dir.join("manifest.json")).map_err(|_| BundleError::NoCommand)?;
    let manifest: Value = serde_json::from_str(&text).map_err(|_| BundleError::NoCommand)?;
    let config = &manifest["server"]["mcp_config"];
    let fill = |value: &str| substitute(value, dir);
    let program = fill(config["command"].as_str().ok_or(BundleError::NoCommand)?)?;
    let args = (config["args"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .map(fill)
        .collect::<Result<_, _>>()?;
    let env = (config["env"].as_object().into_iter().flatten())
        .filter_map(|(name, value)| Some((name, value.as_str()?)))
        .map(|(name, value)| Ok((name.clone(), fill(value)?)))
        .collect::<Result<_, _>>()?;
    Ok(Bundle {
        package: index,
        program,
        args,
        env,
    })
}

/// `value` with `${__dirname}`, `${HOME}` and `${pathSeparator}` (`${/}`)
/// filled; any other `${...}` refuses the bundle.
fn substitute(value: &str, dir: &Path) -> Result<String, BundleError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(open) = rest.find("${") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find('}')
            .ok_or_else(|| BundleError::ManifestVariable {
                variable: "${".to_owned(),
            })?;
        let name = &after[..close];
        let home = || std::env::var("HOME").ok();
        let value: Option<String> = match name {
            "__dirname" => Some(dir.to_string_lossy().into_owned()),
            "HOME" => home(),
            "pathSeparator" | "/" => Some(std::path::MAIN_SEPARATOR.to_string()),
            _ => None,
        };
        let value = value.ok_or_else(|| BundleError::ManifestVariable {
            variable: format!("${{{name}}}"),
        })?;
        out.push_str(&value);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
