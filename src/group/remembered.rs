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
    /// Held for one look or one change, never for the file's write. The
    /// listings share their items with the catalogue; they are copied only
    /// into and out of the file.
    listings: Mutex<BTreeMap<String, Listing>>,
    file: Option<PathBuf>,
    /// A write of the file is scheduled (changes in a burst share one).
    scheduled: std::sync::atomic::AtomicBool,
}

/// One server's listing as it is read from the file.
#[derive(Deserialize)]
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

impl From<Stored> for Listing {
    fn from(stored: Stored) -> Listing {
        Listing {
            tools: stored.tools.into_iter().map(Arc::new).collect(),
            prompts: stored.prompts.into_iter().map(Arc::new).collect(),
            resources: stored.resources.into_iter().map(Arc::new).collect(),
            templates: stored.templates.into_iter().map(Arc::new).collect(),
        }
    }
}

/// One server's listing as it is written to the file, borrowed.
#[derive(Serialize)]
struct Written<'a> {
    tools: Vec<&'a Tool>,
    prompts: Vec<&'a Prompt>,
    resources: Vec<&'a Resource>,
    templates: Vec<&'a ResourceTemplate>,
}

impl<'a> Written<'a> {
    fn of(listing: &'a Listing) -> Self {
        Written {
            tools: listing.tools.iter().map(|t| &**t).collect(),
            prompts: listing.prompts.iter().map(|p| &**p).collect(),
            resources: listing.resources.iter().map(|r| &**r).collect(),
            templates: listing.templates.iter().map(|t| &**t).collect(),
        }
    }
}

/// The file's shape.
#[derive(Deserialize)]
struct File {
    /// The format's version: required, so that another JSON file is
    /// refused rather than read as empty.
    #[serde(rename = "remembered_listings")]
    _version: u32,
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
                (file.listings.into_iter())
                    .map(|(key, stored)| (key, Listing::from(stored)))
                    .collect()
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
        self.listings().get(key).cloned()
    }

    /// Remembers `listing` for `key`. The file, when there is one, is
    /// written shortly after, once for a burst of changes (a hundred
    /// servers becoming ready write it once, not a hundred times).
    pub(super) fn put(&self, key: &str, listing: &Listing) {
        use std::sync::atomic::Ordering;
        {
            let mut listings = self.listings();
            if listings.get(key) == Some(listing) {
                return;
            }
            listings.insert(key.to_owned(), listing.clone());
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
            let listings = (listings.iter())
                .map(|(key, listing)| (key.as_str(), Written::of(listing)))
                .collect();
            serde_json::to_vec(&Borrowed {
                remembered_listings: 1,
                listings,
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

    fn listings(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Listing>> {
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
    listings: BTreeMap<&'a str, Written<'a>>,
}

impl std::fmt::Debug for RememberedListings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RememberedListings")
            .field("servers", &self.len())
            .field("file", &self.inner.file.is_some())
            .finish()
    }
}
