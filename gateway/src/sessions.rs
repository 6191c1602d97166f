//! The 2025 sessions the gateway gave out: each an id of 128 random bits,
//! the version it was opened under, when it was last used and its own
//! state ([`Downstream`]: its upstream clients, streams, questions).
//! Bounded twice: a session idle past its bound is gone (at its next use,
//! when the table is full, or at the sweep the gateway runs every quarter
//! of the bound), and the table never holds more than its cap. A session
//! that ends, however it ends, closes its upstream clients: each member
//! sees its own session end. With replicas, a session's claim in the
//! owner store follows it: renewed at the sweep after it was used, dropped
//! when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::downstream::Downstream;
use crate::replicas::Replicas;

/// One session.
#[derive(Debug)]
struct Entry {
    version: String,
    last: Instant,
    /// When its owner claim was last renewed.
    claimed: Instant,
    downstream: Arc<Downstream>,
}

/// Why no session was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The table is at its cap, none of it idle.
    Full,
    /// No randomness for an id.
    NoRandomness,
}

/// The sessions, under one lock held for one look or one change.
#[derive(Debug)]
pub(crate) struct Sessions {
    idle: Duration,
    cap: usize,
    table: Mutex<HashMap<String, Entry>>,
    replicas: Option<Replicas>,
}

impl Sessions {
    pub(crate) fn new(idle: Duration, cap: usize, replicas: Option<Replicas>) -> Self {
        Sessions {
            idle,
            cap,
            table: Mutex::new(HashMap::new()),
            replicas,
        }
    }

    /// The replicas this one shares sessions with, if any.
    pub(crate) fn replicas(&self) -> Option<&Replicas> {
        self.replicas.as_ref()
    }

    /// How long a claim lasts: twice the idle bound, so a session used
    /// just before a sweep is still claimed after the next one.
    pub(crate) fn claim_ttl(&self) -> Duration {
        self.idle * 2
    }

    /// Whether session `id` is held here (idle or not).
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.table().contains_key(id)
    }

    /// Whether `principal` may use session `id`: the one that opened it,
    /// or any when it is not held here (it is then not found, or another
    /// replica's, which checks it there).
    pub(crate) fn belongs(&self, id: &str, principal: Option<&crate::Principal>) -> bool {
        (self.table().get(id)).is_none_or(|entry| entry.downstream.principal.as_ref() == principal)
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // Nothing under the lock panics half-way: a poisoned one is taken.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bound a session may stay unused for.
    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    /// A new session under `version` with its own state, its id.
    pub(crate) fn open(&self, version: &str, downstream: Downstream) -> Result<String, Refused> {
        let id = new_id().ok_or(Refused::NoRandomness)?;
        if self.table().len() >= self.cap {
            self.sweep();
        }
        let mut table = self.table();
        if table.len() >= self.cap {
            return Err(Refused::Full);
        }
        let now = Instant::now();
        let entry = Entry {
            version: version.to_owned(),
            last: now,
            claimed: now,
            downstream: Arc::new(downstream),
        };
        table.insert(id.clone(), entry);
        Ok(id)
    }

    /// Session `id`'s version and state when it is open (it counts as used
    /// now); `None` when there is no such session or it idled out.
    pub(crate) fn touch(&self, id: &str) -> Option<(String, Arc<Downstream>)> {
        let now = Instant::now();
        let mut table = self.table();
        let entry = table.get_mut(id)?;
        if now.duration_since(entry.last) >= self.idle {
            let gone = table.remove(id).map(|entry| entry.downstream);
            drop(table);
            retire(gone);
            self.release(vec![id.to_owned()]);
            return None;
        }
        entry.last = now;
        Some((entry.version.clone(), Arc::clone(&entry.downstream)))
    }

    /// Ends session `id` (its upstream clients closed before this
    /// returns); whether it was open.
    pub(crate) async fn close(&self, id: &str) -> bool {
        let gone = self.table().remove(id);
        match gone {
            Some(entry) => {
                self.release(vec![id.to_owned()]);
                entry.downstream.close().await;
                true
            }
            None => false,
        }
    }

    /// Ends every session idle past the bound (and renews the claims of
    /// those used since their last one); how many ended.
    pub(crate) fn sweep(&self) -> usize {
        let now = Instant::now();
        let (mut gone, mut ended, mut used) = (Vec::new(), Vec::new(), Vec::new());
        self.table().retain(|id, entry| {
            let keep = now.duration_since(entry.last) < self.idle;
            if !keep {
                gone.push(Arc::clone(&entry.downstream));
                ended.push(id.clone());
            } else if entry.last > entry.claimed {
                entry.claimed = now;
                used.push(id.clone());
            }
            keep
        });
        let count = gone.len();
        retire(gone);
        self.release(ended);
        if let Some(replicas) = &self.replicas {
            replicas.reclaim(used, self.claim_ttl());
        }
        count
    }

    /// Drops the claims of `ended` sessions.
    fn release(&self, ended: Vec<String>) {
        if let Some(replicas) = &self.replicas {
            replicas.release(ended);
        }
    }

    /// Every open session's state.
    pub(crate) fn all(&self) -> Vec<Arc<Downstream>> {
        self.table()
            .values()
            .map(|e| Arc::clone(&e.downstream))
            .collect()
    }

    /// How many sessions the table holds (idle ones not yet swept
    /// included).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table().len()
    }

    /// How many sessions are open, and how many upstream clients they
    /// hold.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let table = self.table();
        let clients = table.values().map(|e| e.downstream.clients()).sum();
        (table.len(), clients)
    }
}

/// Closes sessions that ended on the way (idled out), in a task of their
/// own: the request that found them is not made to wait.
fn retire(gone: impl IntoIterator<Item = Arc<Downstream>>) {
    for downstream in gone {
        tokio::spawn(async move { downstream.close().await });
    }
}

/// 128 random bits as 32 hex digits.
pub(crate) fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_connect::protocol::ProtocolVersion;

    #[tokio::test(start_paused = true)]
    async fn an_idle_session_is_gone_and_a_full_table_refuses_until_one_idles_out() {
        let sessions = Sessions::new(Duration::from_secs(60), 2, None);
        let state = || Downstream::new(serde_json::Value::Null, ProtocolVersion::LATEST_LEGACY);
        let a = sessions.open("2025-11-25", state()).unwrap();
        let b = sessions.open("2025-06-18", state()).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(sessions.open("2025-11-25", state()), Err(Refused::Full));
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(sessions.touch(&a).unwrap().0, "2025-11-25");
        tokio::time::sleep(Duration::from_secs(31)).await;
        // `b` idled out; `a` was used 31 s ago.
        assert!(sessions.touch(&b).is_none());
        assert!(sessions.open("2025-11-25", state()).is_ok());
        assert_eq!(sessions.len(), 2);
        assert!(sessions.close(&a).await);
        assert!(!sessions.close(&a).await);
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(sessions.sweep(), 1);
        assert_eq!(sessions.len(), 0);
    }
}
