//! The version the last POST went out under, kept without a lock: the
//! `GET` and `DELETE` that follow carry it, and every POST reads it to see
//! whether it changed (it changes at most once or twice, during the
//! establishment's ladder). A version this client speaks is an index into
//! [`ProtocolVersion::SUPPORTED`]; another (a pinned one) is kept once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::protocol::ProtocolVersion;

/// No version yet.
const NONE: usize = usize::MAX;
/// The version in `other`.
const OTHER: usize = usize::MAX - 1;

#[derive(Debug)]
pub(super) struct VersionCell {
    current: AtomicUsize,
    /// A version outside `SUPPORTED`: the first one seen (a transport is
    /// pinned to one at most).
    other: OnceLock<ProtocolVersion>,
}

impl Default for VersionCell {
    fn default() -> Self {
        VersionCell {
            current: AtomicUsize::new(NONE),
            other: OnceLock::new(),
        }
    }
}

impl VersionCell {
    /// Records `version` as the last one used.
    pub(super) fn set(&self, version: &ProtocolVersion) {
        let index = match ProtocolVersion::SUPPORTED.iter().position(|v| v == version) {
            Some(index) => index,
            None => {
                let _ = self.other.set(version.clone());
                OTHER
            }
        };
        self.current.store(index, Ordering::Relaxed);
    }

    /// The last version used, if any.
    pub(super) fn get(&self) -> Option<&ProtocolVersion> {
        match self.current.load(Ordering::Relaxed) {
            NONE => None,
            OTHER => self.other.get(),
            index => ProtocolVersion::SUPPORTED.get(index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_version_known_or_not() {
        let cell = VersionCell::default();
        assert_eq!(cell.get(), None);
        cell.set(&ProtocolVersion::V2026_07_28);
        assert_eq!(cell.get(), Some(&ProtocolVersion::V2026_07_28));
        cell.set(&ProtocolVersion::V2025_11_25);
        assert_eq!(cell.get(), Some(&ProtocolVersion::V2025_11_25));
        let pinned = ProtocolVersion::new("2099-01-01");
        cell.set(&pinned);
        assert_eq!(cell.get(), Some(&pinned));
    }
}
