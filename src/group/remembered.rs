//! Listings remembered from an earlier run: a lazy server's tools are in
//! the catalogue before it is connected, and a group of a hundred lazy
//! servers is complete at once, with no connection made.
//!
//! A listing is filed under its server's target fingerprint (the whole URL
//! with its query and userinfo, every header, the command, its arguments,
//! environment and working directory): it never serves another server or
//! another principal. A server authorized with OAuth is never remembered:
//! its principal lives with the authorization server, not in the request.
//! A remembered listing is replaced, with one catalogue change, when the
//! server is reached.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::catalogue::Listing;
use crate::protocol::{Prompt, Resource, ResourceTemplate, Tool};

/// The listings a group remembers across runs: in memory, or in a file
/// written as they change (see the [`group`](super) docs on lazy servers).
#[derive(Clone, Default)]
pub struct RememberedListings {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Held for one look or one change, never for the file's write.
    listings: Mutex<BTreeMap<String, Stored>>,
    file: Option<PathBuf>,
    /// A write of the file is scheduled (changes in a burst share one).
    scheduled: std::sync::atomic::AtomicBool,
}

/// One server's listing as it is written down.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
struct Stored {
    #[serde(default)]
    tools: Vec<Tool>,
    #[serde(default)]
    prompts: Vec<Prompt>,
    #[serde(default)]
    resources: Vec<Resource>,
    #[serde(default)]
    templates: Vec<ResourceTemplate>,
}

/// The file's shape.
#[derive(Serialize, Deserialize)]
struct File {
    remembered_listings: u32,
    listings: BTreeMap<String, Stored>,
}

/// Why remembered listings could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RememberError {
    /// The file could not be read.
    #[error("the remembered listings could not be read")]
    Io(#[source] std::io::Error),
    /// The file is not remembered listings (it is left untouched).
    #[error("the file is not remembered listings; it was left untouched")]
    NotListings,
}

impl RememberedListings {
    /// Listings kept for this process's life.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Listings read from `path` (none when it does not exist yet) and
    /// written back to it as they change.
    pub fn file(path: impl Into<PathBuf>) -> Result<Self, RememberError> {
        let path = path.into();
        let listings = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let file: File =
                    serde_json::from_str(&text).map_err(|_| RememberError::NotListings)?;
                file.listings
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(error) => return Err(RememberError::Io(error)),
        };
        Ok(RememberedListings {
            inner: Arc::new(Inner {
                listings: Mutex::new(listings),
                file: Some(path),
                scheduled: Default::default(),
            }),
        })
    }

    /// How many servers' listings are remembered.
    pub fn len(&self) -> usize {
        self.listings().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn get(&self, key: &str) -> Option<Listing> {
        let stored = self.listings().get(key).cloned()?;
        Some(Listing {
            tools: stored.tools.into_iter().map(Arc::new).collect(),
            prompts: stored.prompts.into_iter().map(Arc::new).collect(),
            resources: stored.resources.into_iter().map(Arc::new).collect(),
            templates: stored.templates.into_iter().map(Arc::new).collect(),
        })
    }

    /// Remembers `listing` for `key`. The file, when there is one, is
    /// written shortly after, once for a burst of changes (a hundred
    /// servers becoming ready write it once, not a hundred times).
    pub(super) fn put(&self, key: &str, listing: &Listing) {
        use std::sync::atomic::Ordering;
        let stored = Stored {
            tools: listing.tools.iter().map(|t| (**t).clone()).collect(),
            prompts: listing.prompts.iter().map(|p| (**p).clone()).collect(),
            resources: listing.resources.iter().map(|r| (**r).clone()).collect(),
            templates: listing.templates.iter().map(|t| (**t).clone()).collect(),
        };
        {
            let mut listings = self.listings();
            if listings.get(key) == Some(&stored) {
                return;
            }
            listings.insert(key.to_owned(), stored);
        }
        if self.inner.file.is_none() || self.inner.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(WRITE_AFTER).await;
            this.inner.scheduled.store(false, Ordering::Release);
            if let Err(error) = this.save().await {
                tracing::warn!(
                    target: "mcp_connect::group",
                    error = %error,
                    "the remembered listings could not be written"
                );
            }
        });
    }

    /// Writes the file now (nothing without one): whole, through a
    /// temporary file and a rename, so a crash mid-write leaves the old one.
    pub async fn save(&self) -> std::io::Result<()> {
        let Some(path) = self.inner.file.clone() else {
            return Ok(());
        };
        let text = {
            let listings = self.listings();
            serde_json::to_vec(&Borrowed {
                remembered_listings: 1,
                listings: &listings,
            })
            .expect("listings serialize")
        };
        tokio::task::spawn_blocking(move || {
            let mut temporary = path.as_os_str().to_owned();
            temporary.push(".tmp");
            std::fs::write(&temporary, text)?;
            std::fs::rename(&temporary, &path)
        })
        .await
        .map_err(std::io::Error::other)?
    }

    fn listings(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Stored>> {
        // Held for one look or one change, which cannot panic.
        self.inner.listings.lock().expect("listings lock poisoned")
    }
}

/// How long after a change the file is written.
const WRITE_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

/// The file's shape, borrowed to write.
#[derive(Serialize)]
struct Borrowed<'a> {
    remembered_listings: u32,
    listings: &'a BTreeMap<String, Stored>,
}

impl std::fmt::Debug for RememberedListings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RememberedListings")
            .field("servers", &self.len())
            .field("file", &self.inner.file.is_some())
            .finish()
    }
}
