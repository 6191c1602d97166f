//! Invalidations on their way to the store: what a server's change
//! notifications made stale, coalesced and run by one worker per cache.
//!
//! A notification marks what it names stale at once, before the
//! application hears of it: from then on a lookup that it covers misses
//! and an answer fetched before it is not stored, until the store has
//! dropped the entries. The store's work runs on one task per cache, one
//! invalidation at a time; an invalidation already waiting is not queued
//! twice, and one that arrives while the same is running runs once more
//! after it (the entries stored meanwhile may predate the change). So a
//! server flooding `list_changed` costs the store at most two operations
//! per server and kind in flight, never one task per notification.

use crate::protocol::methods;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use super::{CacheKey, Invalidation, ResponseStore};

/// Invalidations waiting or running, at most: past it, a resource's
/// invalidation becomes its server's every `resources/read`.
const MAX_PENDING: usize = 4096;

type Pending = (Arc<str>, Invalidation);

#[derive(Default)]
struct State {
    /// Waiting or running; `true` when it must run once more.
    pending: HashMap<Pending, bool>,
    queue: VecDeque<Pending>,
    worker: bool,
    /// Per server, how many invalidations it has had: an answer fetched
    /// under an older count is not stored.
    epochs: HashMap<Arc<str>, u64>,
}

/// The invalidations of one [`ResponseCache`](super::ResponseCache) and
/// its clones.
#[derive(Default)]
pub(super) struct Invalidations {
    state: Mutex<State>,
}

impl Invalidations {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Held for one look or one change, which cannot panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many invalidations `server` has had.
    pub(super) fn epoch(&self, server: &str) -> u64 {
        self.state().epochs.get(server).copied().unwrap_or(0)
    }

    /// Whether a waiting or running invalidation covers `key`.
    pub(super) fn covers(&self, key: &CacheKey) -> bool {
        let state = self.state();
        state
            .pending
            .keys()
            .any(|(server, what)| **server == *key.server && what.matches(key))
    }

    /// Marks `what` of `server` stale now and has the store drop it soon.
    pub(super) fn add(
        self: &Arc<Self>,
        store: &Arc<dyn ResponseStore>,
        server: &Arc<str>,
        what: Invalidation,
    ) {
        let mut guard = self.state();
        let state = &mut *guard;
        *state.epochs.entry(Arc::clone(server)).or_insert(0) += 1;
        let what = match what {
            Invalidation::Resource(_) if state.pending.len() >= MAX_PENDING => {
                Invalidation::Method(methods::RESOURCES_READ)
            }
            what => what,
        };
        let item = (Arc::clone(server), what);
        let waiting = state.queue.contains(&item);
        match state.pending.get_mut(&item) {
            // Running: once more after it. Waiting: it covers this one.
            Some(again) => *again = !waiting,
            None => {
                state.pending.insert(item.clone(), false);
                state.queue.push_back(item);
            }
        }
        if state.worker {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to run on: the entries stay covered (missed)
            // until they expire.
            return;
        };
        state.worker = true;
        drop(guard);
        runtime.spawn(Arc::clone(self).work(Arc::clone(store)));
    }

    /// The worker: one invalidation at a time until none is waiting.
    async fn work(self: Arc<Self>, store: Arc<dyn ResponseStore>) {
        loop {
            let item = {
                let mut state = self.state();
                match state.queue.pop_front() {
                    Some(item) => item,
                    None => {
                        state.worker = false;
                        return;
                    }
                }
            };
            store.invalidate(&item.0, &item.1).await;
            let mut state = self.state();
            if state.pending.get(&item) == Some(&true) {
                state.pending.insert(item.clone(), false);
                state.queue.push_back(item);
            } else {
                state.pending.remove(&item);
            }
        }
    }
}
