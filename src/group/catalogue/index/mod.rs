//! The catalogue kept up to date one server at a time.
//!
//! A server's new listing touches that server's entries, and the entries
//! of other servers only where a name it adds or drops changes whether
//! that name collides: the work is proportional to the change, not to the
//! group. Rebuilding everything on every burst of changes made a starting
//! group of n servers O(n^2) (13x the time of 100 servers for 1,000).
//!
//! The names are those [`Naming`] gives, checked as before: a name that
//! breaks the rules is left out, and a name several items share is left
//! out on all of them, unless one of them already had it in a settled
//! catalogue, or was given it on an earlier run (a remembered name): then
//! it keeps it and the newcomers are left out. A remembered name is one
//! the default rule could give that item now (bare, or under its server's
//! prefix); it is kept whatever the order the servers come in, so the
//! names of a group with remembered listings are those of the run before.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::{Catalogue, GivenNames, Listed, Listing, Part};
use crate::group::naming::Naming;
use crate::protocol::{Prompt, Tool};

mod names;

use names::{Names, Rule};

fn listed<T>(server: &Arc<str>, items: &[Arc<T>]) -> Vec<Listed<T>> {
    (items.iter())
        .map(|item| Listed {
            server: Arc::clone(server),
            item: Arc::clone(item),
        })
        .collect()
}

/// Every server's entries, changed one server at a time; the group holds
/// one and publishes a [`Catalogue`] from it after each burst of changes.
#[derive(Debug, Clone, Default)]
pub(crate) struct CatalogueIndex {
    tools: Names<Tool>,
    prompts: Names<Prompt>,
    listings: HashMap<Arc<str>, Arc<Listing>>,
    /// What each server shows; shared with the catalogues published.
    parts: super::parts::Parts,
    /// The last catalogue published was built after the group settled.
    settled: bool,
    /// A part changed since the last catalogue published.
    changed: bool,
    /// Where each server's names are remembered (its listing's key).
    keys: HashMap<Arc<str>, String>,
    /// The servers with a prefix of their own.
    prefixes: HashMap<Arc<str>, Arc<str>>,
}

impl CatalogueIndex {
    /// Sets what `server` lists (`None`: it lists nothing, or is gone),
    /// with where its names are remembered and what was remembered of
    /// them. Returns the names of every remembered server the change
    /// touched, by key, for the caller to remember.
    pub(crate) fn set(
        &mut self,
        server: &Arc<str>,
        listing: Option<Arc<Listing>>,
        naming: &Naming,
        memory: Option<(&str, Option<&GivenNames>)>,
    ) -> Vec<(String, GivenNames)> {
        let same = match (self.listings.get(server), &listing) {
            (Some(old), Some(new)) => Arc::ptr_eq(old, new) || old == new,
            (None, None) => true,
            _ => false,
        };
        if same {
            return Vec::new();
        }
        let remembered = memory.and_then(|(_, names)| names);
        match memory {
            Some((key, _)) if listing.is_some() => {
                self.keys.insert(Arc::clone(server), key.to_owned())
            }
            _ => self.keys.remove(server),
        };
        let rule = Rule {
            naming,
            prefixes: &self.prefixes,
            keeps: self.settled && matches!(naming, Naming::OnCollision | Naming::Never),
        };
        let empty = Listing::default();
        let items = listing.as_deref().unwrap_or(&empty);
        let mut touched = BTreeSet::new();
        let (tools, prompts) = (remembered.map(|n| &n.tools), remembered.map(|n| &n.prompts));
        self.tools
            .replace(server, &items.tools, &rule, tools, &mut touched);
        self.prompts
            .replace(server, &items.prompts, &rule, prompts, &mut touched);
        match listing {
            Some(listing) => self.listings.insert(Arc::clone(server), listing),
            None => self.listings.remove(server),
        };
        let mut given = Vec::new();
        for server in touched {
            self.refresh_part(&server);
            if let Some(key) = self.keys.get(&server) {
                let names = GivenNames {
                    tools: self.tools.given(&server),
                    prompts: self.prompts.given(&server),
                };
                given.push((key.clone(), names));
            }
        }
        given
    }

    /// Sets (or, `None`, clears) the prefix `server`'s names take instead
    /// of its name; it applies from its next listing on.
    pub(crate) fn set_prefix(&mut self, server: &Arc<str>, prefix: Option<&str>) {
        match prefix {
            Some(prefix) => self.prefixes.insert(Arc::clone(server), Arc::from(prefix)),
            None => self.prefixes.remove(server),
        };
    }

    /// Builds `server`'s part again from its slots and listing.
    fn refresh_part(&mut self, server: &Arc<str>) {
        let part = self.listings.get(server).map(|listing| {
            let mut left_out = Vec::new();
            let tools = self.tools.part(server, &mut left_out);
            let prompts = self.prompts.part(server, &mut left_out);
            Part {
                tools,
                prompts,
                resources: listed(server, &listing.resources),
                templates: listed(server, &listing.templates),
                left_out,
                unmatched: listing.unmatched.clone(),
            }
        });
        let current = self.parts.get(server);
        if current.map(|part| &**part) == part.as_ref() {
            return;
        }
        self.parts.set(server, part);
        self.changed = true;
    }

    /// The catalogue after `previous`, when a part changed since it was
    /// published; `settled` when the group has settled (from then on,
    /// names handed out are kept).
    pub(crate) fn publish(&mut self, previous: &Catalogue, settled: bool) -> Option<Catalogue> {
        self.settled = settled;
        if !std::mem::take(&mut self.changed) {
            return None;
        }
        Some(Catalogue::of(
            previous.version() + 1,
            self.parts.clone(),
            settled,
        ))
    }
}
