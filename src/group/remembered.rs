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
//!
//! With each listing, the catalogue names its tools and prompts were given
//! are remembered: a name once handed out is handed out again on the next
//! run, whichever server is ready (or remembered) first.
//!
//! Kept in memory, in a file, or in a [`ListingStore`] that replicas share
//! (the fleet's Redis one): a store is read whole once, when the listings
//! are made, so a lazy server is still listed at once, and each change is
//! written to it behind the group's back (a store that is down costs a
//! warning, never a call).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::catalogue::{GivenNames, Listing};
use crate::protocol::{Prompt, Resource, ResourceTemplate, Tool};
use crate::store::{ListingStore, StoreError};

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
    listings: Mutex<BTreeMap<String, Entry>>,
    file: Option<PathBuf>,
    store: Option<Arc<dyn ListingStore>>,
    /// A write of the file is scheduled (changes in a burst share one).
    scheduled: std::sync::atomic::AtomicBool,
}

/// One server's listing, and the names the catalogue gave its items.
#[derive(Clone, Default, PartialEq)]
struct Entry {
    listing: Listing,
    names: GivenNames,
}

/// One server's listing as it is read from the file.
#[derive(Deserialize)]
struct Stored {
    #[serde(default)]
    names: GivenNames,
    #[serde(default)]
    tools: Vec<Tool>,
    #[serde(default)]
    prompts: Vec<Prompt>,
    #[serde(default)]
    resources: Vec<Resource>,
    #[serde(default)]
    templates: Vec<ResourceTemplate>,
}

impl From<Stored> for Entry {
    fn from(stored: Stored) -> Entry {
        let listing = Listing {
            tools: stored.tools.into_iter().map(Arc::new).collect(),
            prompts: stored.prompts.into_iter().map(Arc::new).collect(),
            resources: stored.resources.into_iter().map(Arc::new).collect(),
            templates: stored.templates.into_iter().map(Arc::new).collect(),
            unmatched: Vec::new(),
        };
        Entry {
            listing,
            names: stored.names,
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
    #[serde(skip_serializing_if = "GivenNames::is_empty")]
    names: &'a GivenNames,
}

impl<'a> Written<'a> {
    fn of(entry: &'a Entry) -> Self {
        let listing = &entry.listing;
        Written {
            tools: listing.tools.iter().map(|t| &**t).collect(),
            prompts: listing.prompts.iter().map(|p| &**p).collect(),
            resources: listing.resources.iter().map(|r| &**r).collect(),
            templates: listing.templates.iter().map(|t| &**t).collect(),
            names: &entry.names,
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

/// Why remembered listings could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RememberError {
    /// The file could not be read or written.
    #[error("the remembered listings file could not be used")]
    Io(#[source] std::io::Error),
    /// The file is not remembered listings (it is left untouched).
    #[error("the file is not remembered listings; it was left untouched")]
    NotListings,
    /// The store failed.
    #[error("the remembered listings could not be stored")]
    Store(#[source] StoreError),
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
                    .map(|(key, stored)| (key, Entry::from(stored)))
                    .collect()
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(error) => return Err(RememberError::Io(error)),
        };
        Ok(RememberedListings {
            inner: Arc::new(Inner {
                listings: Mutex::new(listings),
                file: Some(path),
                store: None,
                scheduled: Default::default(),
            }),
        })
    }

    /// Listings read whole from `store` now, and each change written to
    /// it. An entry that does not read as a listing is left out.
    pub async fn from_store(store: impl ListingStore) -> Result<Self, StoreError> {
        let listings = (store.load().await?.into_iter())
            .filter_map(|(key, json)| {
                let stored: Stored = serde_json::from_slice(&json).ok()?;
                Some((key, Entry::from(stored)))
            })
            .collect();
        Ok(RememberedListings {
            inner: Arc::new(Inner {
                listings: Mutex::new(listings),
                file: None,
                store: Some(Arc::new(store)),
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
        self.listings().get(key).map(|entry| entry.listing.clone())
    }

    /// The catalogue names `key`'s items were last given.
    pub(super) fn names(&self, key: &str) -> Option<GivenNames> {
        (self.listings().get(key))
            .map(|entry| entry.names.clone())
            .filter(|names| !names.is_empty())
    }

    /// Remembers `listing` for `key`. The file, when there is one, is
    /// written shortly after, once for a burst of changes (a hundred
    /// servers becoming ready write it once, not a hundred times).
    pub(super) fn put(&self, key: &str, listing: &Listing) {
        self.change(key, |entry| {
            let changed = entry.listing != *listing;
            entry.listing = listing.clone();
            changed
        });
    }

    /// Remembers the catalogue names `key`'s items were given (for a key
    /// whose listing is remembered).
    pub(super) fn put_names(&self, key: &str, names: GivenNames) {
        if !self.listings().contains_key(key) {
            return;
        }
        self.change(key, |entry| {
            let changed = entry.names != names;
            entry.names = names;
            changed
        });
    }

    /// Changes `key`'s entry with `change` (true when it changed), then
    /// writes it to the store and schedules the file's write.
    fn change(&self, key: &str, change: impl FnOnce(&mut Entry) -> bool) {
        use std::sync::atomic::Ordering;
        let json = {
            let mut listings = self.listings();
            let entry = listings.entry(key.to_owned()).or_default();
            if !change(entry) {
                return;
            }
            (self.inner.store.is_some())
                .then(|| serde_json::to_vec(&Written::of(entry)).expect("listings serialize"))
        };
        if let (Some(store), Some(json)) = (self.inner.store.clone(), json) {
            let key = key.to_owned();
            tokio::spawn(async move {
                if let Err(error) = store.put(&key, json).await {
                    tracing::warn!(
                        target: "mcp_connect::group",
                        error = %error,
                        "a remembered listing could not be stored"
                    );
                }
            });
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

    /// Writes what is remembered now: the file whole, through a fresh
    /// temporary file (never a link someone planted) and a rename, so a
    /// crash mid-write leaves the old one; or each
    /// listing to the store, so a process about to exit loses none of the
    /// writes made behind its back. Nothing when kept in memory.
    pub async fn save(&self) -> Result<(), RememberError> {
        if let Some(store) = &self.inner.store {
            let written: Vec<(String, Vec<u8>)> = (self.listings().iter())
                .map(|(key, listing)| {
                    let json = serde_json::to_vec(&Written::of(listing));
                    (key.clone(), json.expect("listings serialize"))
                })
                .collect();
            let writes =
                (written.into_iter()).map(|(key, json)| async move { store.put(&key, json).await });
            let results = futures_util::future::join_all(writes).await;
            return results
                .into_iter()
                .collect::<Result<(), _>>()
                .map_err(RememberError::Store);
        }
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
        tokio::task::spawn_blocking(move || crate::store::write_private(&path, &text))
            .await
            .map_err(std::io::Error::other)
            .and_then(|written| written)
            .map_err(RememberError::Io)
    }

    fn listings(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        // Held for one look or one change, which cannot panic.
        self.inner
            .listings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
            .field("store", &self.inner.store.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 63, item 6: the catalogue cache was written through a fixed
    /// `FILE.tmp` that followed a link planted there, overwriting the
    /// file it pointed to. The planted link's target stays as it was.
    #[tokio::test]
    async fn a_link_planted_at_the_temporary_name_is_not_written_through() {
        let dir = std::env::temp_dir().join(format!("remembered-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "someone else's file").unwrap();
        let file = dir.join("catalogue.json");
        std::os::unix::fs::symlink(&victim, dir.join("catalogue.json.tmp")).unwrap();
        let remembered = RememberedListings::file(&file).unwrap();
        remembered.save().await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "someone else's file"
        );
        assert!(
            RememberedListings::file(&file).is_ok(),
            "the file reads back"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
