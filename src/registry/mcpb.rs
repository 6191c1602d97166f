//! `mcpb` packages: an MCP Bundle (a zip file with a `manifest.json`)
//! downloaded from the URL the package gives, refused unless its SHA-256
//! is the package's `fileSha256`, kept (the verified archive) and unpacked
//! in this user's private bundle folder, and started as its manifest says
//! within what a bundle may ask ([`manifest`]).
//!
//! Nothing in the folder is trusted because it is there: before every
//! start the kept archive is hashed again and the unpacked files compared
//! with it ([`archive`]); a difference unpacks it again, a wrong digest
//! downloads it again. The folder must be this user's alone ([`folder`]);
//! without `XDG_CACHE_HOME` or `HOME` there is none, and nothing falls
//! back to a shared temporary folder.

mod archive;
mod folder;
mod manifest;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::Full;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{text, RegistryOptions};
use crate::transport::HttpClient;

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
    /// The zip names one file twice, or two that one folder holds as one.
    #[error("the bundle names a file twice")]
    DuplicateEntry,
    /// Neither `XDG_CACHE_HOME` nor `HOME` says where this user's bundle
    /// folder is (and a shared temporary folder is never used).
    #[error("there is no private folder to keep bundles in (set XDG_CACHE_HOME or HOME)")]
    NoPrivateFolder,
    /// The bundle folder, or a folder above it, can be changed by another
    /// user, or is a link.
    #[error("the bundle folder is not private to this user")]
    NotPrivate,
    /// Writing the unpacked bundle failed.
    #[error("the bundle could not be unpacked")]
    Unpack(#[source] std::io::Error),
    /// No `manifest.json`, or no `server.mcp_config.command` in it.
    #[error("the bundle's manifest does not say how to start it")]
    NoCommand,
    /// A manifest value names a variable this client cannot answer.
    #[error("the bundle's manifest needs a value only a person can give")]
    ManifestVariable,
    /// The manifest asks what a bundle may not (another program, a
    /// variable that changes what runs).
    #[error("the bundle's manifest is refused")]
    Manifest(#[source] super::Refusal),
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

/// Downloads (unless the verified archive is kept), checks and unpacks the
/// bundle of `package`, the `index`th of its `server.json`.
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
    let root = options
        .bundle_dir
        .clone()
        .ok_or(BundleError::NoPrivateFolder)?;
    let kept = root.join(format!("{digest}.mcpb"));
    let (check_root, check_kept, check_digest) = (root.clone(), kept.clone(), digest.clone());
    let found = blocking(move || {
        folder::ensure_private(&check_root)?;
        Ok(read_verified(&check_kept, &check_digest))
    })
    .await?;
    let bytes = match found {
        Some(bytes) => bytes,
        None => {
            let url = text(package, "identifier").ok_or(BundleError::BadUrl)?;
            let bytes = download(client, url, options).await?;
            if crate::transport::redact::hex(&Sha256::digest(&bytes)) != digest {
                return Err(BundleError::DigestMismatch);
            }
            bytes.to_vec()
        }
    };
    blocking(move || {
        let mut archive = archive::open(&bytes)?;
        crate::store::write_private(&kept, &bytes).map_err(BundleError::Unpack)?;
        let dir = root.join(&digest);
        if !(dir.is_dir() && archive::unpacked_as(&mut archive, &dir)?) {
            remove_unpacked(&dir)?;
            archive::unpack(&mut archive, &dir)?;
            if !archive::unpacked_as(&mut archive, &dir)? {
                return Err(BundleError::Malformed);
            }
        }
        manifest::command(&dir, index)
    })
    .await
}

/// Runs file-system work off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BundleError> + Send + 'static,
) -> Result<T, BundleError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| BundleError::Unpack(std::io::Error::other(error)))?
}

/// The kept archive when its SHA-256 is still `digest` (never through a link).
fn read_verified(path: &Path, digest: &str) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let mut bytes = Vec::new();
    file.take(archive::BUNDLE_LIMIT as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (crate::transport::redact::hex(&Sha256::digest(&bytes)) == digest).then_some(bytes)
}

/// Removes an unpacked folder that differs from its archive (a link there
/// is removed, never followed).
fn remove_unpacked(dir: &PathBuf) -> Result<(), BundleError> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(dir).map_err(BundleError::Unpack),
        Ok(_) => std::fs::remove_file(dir).map_err(BundleError::Unpack),
        Err(_) => Ok(()),
    }
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
    let exchange = crate::transport::exchange(client, request, archive::BUNDLE_LIMIT);
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

/// The archive's checks and unpacking on arbitrary bytes: a typed error,
/// or a folder that holds exactly the archive and nothing outside it.
#[cfg(any(test, feature = "fuzzing"))]
pub(super) fn fuzz(data: &[u8]) {
    let Ok(mut archive) = archive::open(data) else {
        return;
    };
    let base = std::env::temp_dir().join(format!("mcpb-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    folder::ensure_private(&base).expect("a private scratch folder");
    let dir = base.join("bundle");
    if archive::unpack(&mut archive, &dir).is_ok() {
        assert!(
            archive::unpacked_as(&mut archive, &dir).unwrap_or(false),
            "unpacked otherwise than the archive"
        );
    }
    let outside: Vec<_> = std::fs::read_dir(&base)
        .expect("the scratch folder")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .filter(|name| name != "bundle")
        .collect();
    assert!(
        outside.is_empty(),
        "written outside the bundle: {outside:?}"
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// The archive's name checks on `data` (the fuzz targets' tests).
#[cfg(test)]
pub(super) fn fuzz_open(data: &[u8]) -> Result<(), BundleError> {
    archive::open(data).map(drop)
}
