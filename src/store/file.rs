//! Writing a file whole, safely, where other users may have been before.
//!
//! A file is replaced through a temporary file in the same folder and a
//! rename, so a crash mid-write leaves the old one. The temporary file has
//! a fresh random name and is created with `O_CREAT | O_EXCL | O_NOFOLLOW`
//! and mode 0600: whatever sits at a name someone could guess (a symbolic
//! link to another file, planted before) is never followed or written
//! through, and nothing is readable by others while it is written. The
//! rename replaces the final name itself, never what a link there points to.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` whole (see the module docs): readable and
/// writable by this user only, synced before it takes the name.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = temporary_beside(path)?;
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&temporary)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        // Only the name this call created; never a file someone else made.
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// A fresh name in `path`'s folder: `.NAME.RANDOM.tmp`.
fn temporary_beside(path: &Path) -> std::io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"))?;
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(std::io::Error::other)?;
    let mut temporary = std::ffi::OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".{}.tmp", crate::transport::redact::hex(&nonce)));
    Ok(path.with_file_name(temporary))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("store-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Issue 63, item 6: a link planted at the old fixed temporary name
    /// (`FILE.tmp`) and at the final name is never written through.
    #[test]
    fn a_planted_link_is_never_followed() {
        let dir = scratch("links");
        let victim = dir.join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let path = dir.join("cache.json");
        std::os::unix::fs::symlink(&victim, dir.join("cache.json.tmp")).unwrap();
        write_private(&path, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        // A link at the final name is replaced, not followed.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write_private(&path, b"[]").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 3, "victim, cache.json, the planted link");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
