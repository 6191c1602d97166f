//! What makes watch mode read its config file again: SIGHUP, and with
//! `--watch-config` a change to the file.
//!
//! The file's directory is watched, not the file: editors and deployment
//! tools replace a file by writing a new one and renaming it over the old,
//! which a watch on the old file never sees. Changes are coalesced: a burst
//! of events (an editor writes, truncates, renames) is one reload, read
//! 200 ms after the last of them.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long the file must be quiet before a change is read.
const SETTLE: Duration = Duration::from_millis(200);

/// The reasons to read the file again.
pub(crate) struct ReloadTriggers {
    hangups: Option<Signal>,
    changes: Option<(RecommendedWatcher, mpsc::Receiver<()>)>,
    /// When the last change seen is to be read, if one is waiting.
    settles_at: Option<Instant>,
}

impl ReloadTriggers {
    /// SIGHUP, and changes to `file` when `watch_file`.
    pub(crate) fn new(file: &Path, watch_file: bool) -> notify::Result<Self> {
        let changes = watch_file.then(|| watch(file)).transpose()?;
        Ok(ReloadTriggers {
            hangups: signal(SignalKind::hangup()).ok(),
            changes,
            settles_at: None,
        })
    }

    /// `Some` for each reason to reload before `until`, `None` at `until`.
    /// A change seen before `until` but not yet settled is kept for the
    /// next call.
    pub(crate) async fn before(&mut self, until: Instant) -> Option<()> {
        loop {
            let hangup = async {
                match &mut self.hangups {
                    Some(hangups) => hangups.recv().await,
                    None => std::future::pending().await,
                }
            };
            let change = async {
                match &mut self.changes {
                    Some((_, changes)) => changes.recv().await,
                    None => std::future::pending().await,
                }
            };
            let settled = async {
                match self.settles_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = tokio::time::sleep_until(until) => return None,
                Some(()) = hangup => return Some(()),
                () = settled => {
                    self.settles_at = None;
                    return Some(());
                }
                Some(()) = change => self.settles_at = Some(Instant::now() + SETTLE),
            }
        }
    }
}

/// A watch on `file`'s directory that says when an event names `file`.
fn watch(file: &Path) -> notify::Result<(RecommendedWatcher, mpsc::Receiver<()>)> {
    let name: Option<OsString> = file.file_name().map(OsString::from);
    let directory = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    // One pending change is enough: more coalesce into it.
    let (sender, changes) = mpsc::channel(1);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let ours = match &event {
            Ok(event) => event
                .paths
                .iter()
                .any(|path| path.file_name().map(OsString::from) == name),
            // The watch itself failed (an overflowed queue): read the file
            // again rather than miss a change.
            Err(_) => true,
        };
        if ours && !matches!(&event, Ok(e) if e.kind.is_access()) {
            let _ = sender.try_send(());
        }
    })?;
    watcher.watch(&directory, RecursiveMode::NonRecursive)?;
    Ok((watcher, changes))
}
