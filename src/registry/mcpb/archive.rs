//! The bundle's zip: its names checked, unpacked whole or not at all, and
//! the unpacked files checked against it before every start.
//!
//! A zip can name one file twice (the zip crate keeps the last, so what a
//! reviewer saw first is not what runs) or name two files that one folder
//! holds as one (`A.js` and `a.js` where the file system folds case):
//! either refuses the bundle. Unpacking refuses a path that leaves the
//! folder and stops at a size and an entry count, so a hostile bundle can
//! neither write elsewhere nor fill the disk; it goes to a temporary
//! folder renamed into place when complete, so a half-unpacked bundle is
//! never started. Before every start the unpacked tree is compared with
//! the verified archive (every file's bytes, nothing more, no link), and
//! unpacked again when it differs.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use super::BundleError;

/// A bundle larger than this is refused (downloaded or unpacked).
pub(super) const BUNDLE_LIMIT: usize = 256 << 20;
/// A bundle with more files than this is refused.
const ENTRY_LIMIT: usize = 20_000;

type Archive<'a> = zip::ZipArchive<std::io::Cursor<&'a [u8]>>;

/// The archive of `bytes`, its names checked (see the module docs).
pub(super) fn open(bytes: &[u8]) -> Result<Archive<'_>, BundleError> {
    let archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|_| BundleError::Malformed)?;
    if archive.len() > ENTRY_LIMIT {
        return Err(BundleError::Malformed);
    }
    let written = central_directory_names(bytes, archive.central_directory_start())?;
    let mut exact = BTreeSet::new();
    let mut folded = BTreeSet::new();
    for name in &written {
        let path = enclosed(name).ok_or(BundleError::Malformed)?;
        let lower = path.to_string_lossy().to_lowercase();
        if !exact.insert(name.as_slice()) || !folded.insert(lower) {
            return Err(BundleError::DuplicateEntry);
        }
    }
    if written.len() != archive.len() {
        return Err(BundleError::DuplicateEntry);
    }
    Ok(archive)
}

/// Every name the central directory holds, as written, however many times.
fn central_directory_names(bytes: &[u8], start: u64) -> Result<Vec<Vec<u8>>, BundleError> {
    const SIGNATURE: &[u8] = b"PK\x01\x02";
    let field = |at: usize| -> Result<usize, BundleError> {
        let two = bytes.get(at..at + 2).ok_or(BundleError::Malformed)?;
        Ok(usize::from(u16::from_le_bytes([two[0], two[1]])))
    };
    let mut at = usize::try_from(start).map_err(|_| BundleError::Malformed)?;
    let mut names = Vec::new();
    while bytes.get(at..at + 4) == Some(SIGNATURE) {
        if names.len() > ENTRY_LIMIT {
            return Err(BundleError::Malformed);
        }
        let (name, extra, comment) = (field(at + 28)?, field(at + 30)?, field(at + 32)?);
        let name_at = at + 46;
        let written = bytes
            .get(name_at..name_at + name)
            .ok_or(BundleError::Malformed)?;
        names.push(written.to_vec());
        at = name_at + name + extra + comment;
    }
    Ok(names)
}

/// A name as a path inside the bundle, or `None` when it would leave it.
fn enclosed(name: &[u8]) -> Option<PathBuf> {
    let name = std::str::from_utf8(name).ok()?;
    let mut path = PathBuf::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part if part.contains('\\') || part.contains('\0') => return None,
            part => path.push(part),
        }
    }
    (!name.starts_with('/') && !path.as_os_str().is_empty()).then_some(path)
}

/// Unpacks `archive` into `dir` (which must not exist), whole or not at all.
pub(super) fn unpack(archive: &mut Archive<'_>, dir: &Path) -> Result<(), BundleError> {
    let parent = dir.parent().ok_or(BundleError::Malformed)?;
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|_| BundleError::Malformed)?;
    let partial = parent.join(format!(
        ".partial-{}",
        crate::transport::redact::hex(&nonce)
    ));
    let written = write_entries(archive, &partial);
    let placed = written.and_then(|()| match std::fs::rename(&partial, dir) {
        Ok(()) => Ok(()),
        // Another process unpacked the same digest first: checked again
        // before it starts.
        Err(_) if dir.is_dir() => Ok(()),
        Err(error) => Err(BundleError::Unpack(error)),
    });
    let _ = std::fs::remove_dir_all(&partial);
    placed
}

fn private_dir(path: &Path) -> Result<(), BundleError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(BundleError::Unpack)
}

fn write_entries(archive: &mut Archive<'_>, into: &Path) -> Result<(), BundleError> {
    private_dir(into)?;
    let mut total = 0usize;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|_| BundleError::Malformed)?;
        let relative = enclosed(entry.name_raw()).ok_or(BundleError::Malformed)?;
        let path = into.join(relative);
        if entry.is_dir() {
            private_dir(&path)?;
            continue;
        }
        if let Some(parent) = path.parent() {
            private_dir(parent)?;
        }
        let contents = read_entry(&mut entry, BUNDLE_LIMIT.saturating_sub(total))?;
        total += contents.len();
        // Read-only: the kept copy is what was verified.
        let mode = entry.unix_mode().unwrap_or(0o644) & 0o555;
        write_new(&path, &contents, mode)?;
    }
    Ok(())
}

/// One entry's bytes, refused beyond `room`.
fn read_entry(
    entry: &mut zip::read::ZipFile<'_, std::io::Cursor<&[u8]>>,
    room: usize,
) -> Result<Vec<u8>, BundleError> {
    let mut contents = Vec::new();
    entry
        .take(room as u64 + 1)
        .read_to_end(&mut contents)
        .map_err(|_| BundleError::Malformed)?;
    if contents.len() > room {
        return Err(BundleError::Malformed);
    }
    Ok(contents)
}

/// A new file (never one that is there, never through a link).
fn write_new(path: &Path, contents: &[u8], mode: u32) -> Result<(), BundleError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .and_then(|mut file| file.write_all(contents))
        .map_err(BundleError::Unpack)
}

/// Whether `dir` holds exactly what `archive` does: every file with its
/// bytes, every folder, nothing else, and no link anywhere.
pub(super) fn unpacked_as(archive: &mut Archive<'_>, dir: &Path) -> Result<bool, BundleError> {
    let mut expected = BTreeSet::new();
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|_| BundleError::Malformed)?;
        let relative = enclosed(entry.name_raw()).ok_or(BundleError::Malformed)?;
        for above in relative.ancestors().skip(1) {
            if !above.as_os_str().is_empty() {
                expected.insert(above.to_path_buf());
            }
        }
        expected.insert(relative.clone());
        if entry.is_dir() {
            continue;
        }
        let path = dir.join(&relative);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            _ => return Ok(false),
        }
        let wanted = read_entry(&mut entry, BUNDLE_LIMIT)?;
        if std::fs::read(&path).ok().as_deref() != Some(wanted.as_slice()) {
            return Ok(false);
        }
    }
    let mut found = BTreeSet::new();
    if !walk(dir, Path::new(""), &mut found) {
        return Ok(false);
    }
    Ok(found == expected)
}

/// Every path under `dir` (relative), `false` on a link or an unreadable
/// folder.
fn walk(dir: &Path, relative: &Path, found: &mut BTreeSet<PathBuf>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir.join(relative)) else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let Ok(kind) = entry.file_type() else {
            return false;
        };
        let path = relative.join(entry.file_name());
        if kind.is_symlink() || found.len() > ENTRY_LIMIT {
            return false;
        }
        found.insert(path.clone());
        if kind.is_dir() && !walk(dir, &path, found) {
            return false;
        }
    }
    true
}
