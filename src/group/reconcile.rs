//! A new configuration applied to a running group as a reconcile: what
//! is new is added, what is gone removed, what changed (its revision:
//! target, headers, command, environment, and what the application adds)
//! replaced, and what did not change is not touched (same session, same
//! generation). A reload never restarts the whole group.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::{GroupError, Server, ServerGroup};

/// How long a removed or replaced server's calls and close may take.
const CLOSE_BOUND: Duration = Duration::from_secs(10);

/// What [`ServerGroup::reconcile`] did, by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reconciled {
    /// Servers that were not in the group.
    pub added: Vec<Arc<str>>,
    /// Servers no longer configured: removed, their sessions closed.
    pub removed: Vec<Arc<str>>,
    /// Servers whose revision changed: closed and established anew.
    pub replaced: Vec<Arc<str>>,
    /// Servers left as they were.
    pub unchanged: Vec<Arc<str>>,
}

impl ServerGroup {
    /// Makes the group's servers `servers`: adds the new ones, removes the
    /// ones not given, replaces the ones whose revision changed (see
    /// [`Server::with_revision`]) and leaves the others on their sessions.
    /// The catalogue changes once for what is removed, then as the new
    /// servers become ready. A removed or replaced server is closed after
    /// the calls under way on it are answered (at most 5 s), and each
    /// close is bounded (5 s more).
    ///
    /// Two servers of one name are refused before anything changes.
    pub async fn reconcile(
        &self,
        servers: impl IntoIterator<Item = Server>,
    ) -> Result<Reconciled, GroupError> {
        let mut wanted: BTreeMap<Arc<str>, Server> = BTreeMap::new();
        for server in servers {
            if wanted.contains_key(&server.name) {
                return Err(GroupError::Duplicate {
                    name: server.name.to_string(),
                });
            }
            wanted.insert(Arc::clone(&server.name), server);
        }
        let current: Vec<(Arc<str>, [u8; 16])> = self
            .members()
            .iter()
            .map(|(name, member)| (Arc::clone(name), member.revision))
            .collect();
        let mut done = Reconciled::default();
        for (name, revision) in current {
            match wanted.get(&name) {
                None => done.removed.push(name),
                Some(server) if server.revision != revision => done.replaced.push(name),
                Some(_) => {
                    wanted.remove(&name);
                    done.unchanged.push(name);
                }
            }
        }
        let closing = done
            .removed
            .iter()
            .chain(&done.replaced)
            .map(|name| async move {
                let _ = tokio::time::timeout(CLOSE_BOUND, self.remove(name)).await;
            });
        futures_util::future::join_all(closing).await;
        for (name, server) in wanted {
            self.add(server)?;
            if !done.replaced.contains(&name) {
                done.added.push(name);
            }
        }
        Ok(done)
    }
}
