//! The folder bundles are kept in: this user's own, or none.
//!
//! What is unpacked there is started as a program, so whoever can write
//! there can run code as this user. The folder must be a directory (not a
//! link), owned by this user, with no access for anyone else (made 0700
//! when missing), and no folder above it may be changeable by another user
//! (each owned by this user or by root, and writable by others only when
//! sticky, as `/tmp` is, where nobody can rename another's entry). There is
//! no fallback to a shared temporary folder.

use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::Path;

use super::BundleError;

/// Makes `root` when missing (0700) and checks it is private (see the
/// module docs).
pub(super) fn ensure_private(root: &Path) -> Result<(), BundleError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)
        .map_err(BundleError::Unpack)?;
    let me = nix::unistd::geteuid().as_raw();
    let own = std::fs::symlink_metadata(root).map_err(BundleError::Unpack)?;
    if !own.is_dir() || own.uid() != me || own.mode() & 0o077 != 0 {
        return Err(BundleError::NotPrivate);
    }
    let canonical = root.canonicalize().map_err(BundleError::Unpack)?;
    for above in canonical.ancestors().skip(1) {
        let meta = std::fs::metadata(above).map_err(BundleError::Unpack)?;
        let owner_ok = meta.uid() == me || meta.uid() == 0;
        let others_write = meta.mode() & 0o022 != 0;
        let sticky = meta.mode() & 0o1000 != 0;
        if !owner_ok || (others_write && !sticky) {
            return Err(BundleError::NotPrivate);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// Issue 63, item 4: a folder others can read or write, or a link, is
    /// refused; a missing one is made private.
    #[test]
    fn only_a_folder_of_this_user_alone_is_used() {
        let base = std::env::temp_dir().join(format!("mcpb-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
        let made = base.join("made/mcpb");
        ensure_private(&made).unwrap();
        let mode = std::fs::metadata(&made).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        let shared = base.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            ensure_private(&shared),
            Err(BundleError::NotPrivate)
        ));
        // Private itself, under a folder anyone may change.
        let inside = shared.join("mine");
        std::fs::create_dir(&inside).unwrap();
        std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(matches!(
            ensure_private(&inside),
            Err(BundleError::NotPrivate)
        ));
        let link = base.join("link");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        assert!(matches!(
            ensure_private(&link),
            Err(BundleError::NotPrivate)
        ));
        let _ = std::fs::remove_dir_all(&base);
    }
}
