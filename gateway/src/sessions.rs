//! The 2025 sessions the gateway gave out: each an id of 128 random bits,
//! the version it was opened under and when it was last used. Bounded
//! twice: a session idle past its bound is gone at its next use (or when
//! the table is full), and the table never holds more than its cap. No
//! upstream session belongs to a downstream one yet: the group's members
//! are shared by every client of this (unauthenticated) gateway.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// One session.
#[derive(Debug)]
struct Entry {
    version: String,
    last: Instant,
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
}

impl Sessions {
    pub(crate) fn new(idle: Duration, cap: usize) -> Self {
        Sessions {
            idle,
            cap,
            table: Mutex::new(HashMap::new()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // Nothing under the lock panics half-way: a poisoned one is taken.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session under `version`, its id.
    pub(crate) fn open(&self, version: &str) -> Result<String, Refused> {
        let id = new_id().ok_or(Refused::NoRandomness)?;
        let now = Instant::now();
        let mut table = self.table();
        if table.len() >= self.cap {
            table.retain(|_, entry| now.duration_since(entry.last) < self.idle);
            if table.len() >= self.cap {
                return Err(Refused::Full);
            }
        }
        let entry = Entry {
            version: version.to_owned(),
            last: now,
        };
        table.insert(id.clone(), entry);
        Ok(id)
    }

    /// The version of session `id` when it is open (it counts as used
    /// now); `None` when there is no such session or it idled out.
    pub(crate) fn touch(&self, id: &str) -> Option<String> {
        let now = Instant::now();
        let mut table = self.table();
        let entry = table.get_mut(id)?;
        if now.duration_since(entry.last) >= self.idle {
            table.remove(id);
            return None;
        }
        entry.last = now;
        Some(entry.version.clone())
    }

    /// Ends session `id`; whether it was open.
    pub(crate) fn close(&self, id: &str) -> bool {
        self.table().remove(id).is_some()
    }

    /// How many sessions the table holds (idle ones not yet swept
    /// included).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table().len()
    }
}

/// 128 random bits as 32 hex digits.
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_idle_session_is_gone_and_a_full_table_refuses_until_one_idles_out() {
        let sessions = Sessions::new(Duration::from_secs(60), 2);
        let a = sessions.open("2025-11-25").unwrap();
        let b = sessions.open("2025-06-18").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(sessions.open("2025-11-25"), Err(Refused::Full));
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(sessions.touch(&a).as_deref(), Some("2025-11-25"));
        tokio::time::sleep(Duration::from_secs(31)).await;
        // `b` idled out; `a` was used 31 s ago.
        assert!(sessions.touch(&b).is_none());
        assert!(sessions.open("2025-11-25").is_ok());
        assert_eq!(sessions.len(), 2);
        assert!(sessions.close(&a));
        assert!(!sessions.close(&a));
    }
}
