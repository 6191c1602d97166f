//! What the group publishes: a server's health (to the stream and the
//! waits) and the catalogue, published once per burst of listing changes.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use super::catalogue::Listing;
use super::{HealthChange, HealthState, Member, ServerHealth, Shared};

impl Shared {
    /// Sets a member's health, with its client's generation, and tells the
    /// stream and the waits when it changed.
    pub(super) fn set_health(&self, member: &Member, state: HealthState) {
        let retry_at = *member
            .retry_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let health = ServerHealth::new(state, member.client.generation()).retrying_at(retry_at);
        {
            let mut current = member.health.lock().unwrap_or_else(PoisonError::into_inner);
            // Removed is the last word: a supervisor racing its abort
            // cannot bring a member back into the counts.
            if *current == health || current.state == HealthState::Removed {
                return;
            }
            self.counts.moved(current.state, state);
            *current = health;
        }
        tracing::debug!(
            target: "mcp_connect::group",
            server = &*member.name,
            state = state.as_str(),
            generation = health.generation,
            "server health changed"
        );
        // No receiver is not an error: nobody is listening.
        let _ = self.health.send(HealthChange {
            server: Arc::clone(&member.name),
            health,
        });
        // A member out of its first establishment (ready, failed or
        // removed) is counted once; the last one makes the first settle,
        // from which names handed out are kept. O(1): no walk of the group
        // on every change while thousands of servers start.
        if !state.is_connecting()
            && !member.first_settled.swap(true, Ordering::AcqRel)
            && self.starting.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.started.store(true, Ordering::Release);
        }
        self.changes.send_modify(|n| *n += 1);
    }

    /// Sets what the catalogue shows of a member: its entries change in
    /// the index at once (the work is that member's, not the group's);
    /// a new catalogue is published once per burst of changes, not once
    /// per change. A reader never sees a stale catalogue:
    /// [`ServerGroup::catalogue`] publishes first when a change is
    /// pending; watchers get the new one from a task scheduled here.
    pub(super) fn set_listing(&self, member: &Member, listing: Option<Listing>) {
        let listing = listing.map(Arc::new);
        *member
            .listing
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = listing.clone();
        // Where the member's names are remembered, and what was: a name
        // once given is given again, whatever the order servers come in.
        let remembered = self.remembered.as_ref().zip(member.remember_as.as_deref());
        let names = remembered.and_then(|(listings, key)| listings.names(key));
        let given = {
            let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
            let memory = remembered.map(|(_, key)| (key, names.as_ref()));
            index.set_prefix(&member.name, member.prefix.as_deref());
            let given = index.set(&member.name, listing, &self.naming, memory);
            self.listings_changed.fetch_add(1, Ordering::AcqRel);
            given
        };
        if let Some(listings) = &self.remembered {
            for (key, names) in given {
                listings.put_names(&key, names);
            }
        }
        if self.publish_scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.this.clone();
        tokio::spawn(async move {
            // Let the rest of the burst land first.
            tokio::task::yield_now().await;
            if let Some(shared) = this.upgrade() {
                shared.publish_scheduled.store(false, Ordering::Release);
                shared.publish_pending();
            }
        });
    }

    /// Publishes the catalogue if a listing changed since the last
    /// publish and the catalogue's content changed with it.
    pub(super) fn publish_pending(&self) {
        // Most reads find nothing pending: no lock for them. A publish
        // under way counts as pending until it is done, so a read racing
        // it waits for it instead of returning the catalogue before.
        if self.built.load(Ordering::Acquire) == self.listings_changed.load(Ordering::Acquire) {
            return;
        }
        // One publish at a time, so versions follow each other.
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = self.listings_changed.load(Ordering::Acquire);
        if self.built.load(Ordering::Acquire) == changed {
            return;
        }
        let settled = self.started.load(Ordering::Acquire);
        self.catalogue.send_if_modified(|current| {
            match index.publish(current, settled) {
                Some(next) => {
                    *current = Arc::new(next);
                    true
                }
                None => {
                    if settled && !current.is_settled() {
                        // The same content: nobody is told.
                        Arc::make_mut(current).mark_settled();
                    }
                    false
                }
            }
        });
        self.built.store(changed, Ordering::Release);
    }
}
