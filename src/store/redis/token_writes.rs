//! Every write of tokens to Redis, and the writes that failed, written
//! back when Redis answers again.
//!
//! One Lua script makes every write ([`WRITE`]), so the hash's layout
//! (`v`, `rt`, `ts`) and the three rules (always, compare-and-set,
//! write-back) are in one place.
//!
//! A replica that refreshes or authorizes during an outage goes on with
//! its tokens; the write that failed is kept (the newest per entry) and
//! retried by one background task, once a second, until Redis takes it.
//! A write-back goes in only over no entry or over tokens obtained before
//! it, so tokens another replica stored since then stay: the store ends
//! holding the newest tokens any replica obtained. The task holds the
//! store weakly and ends with it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use super::connection::Connection;
use crate::store::StoreError;

/// Every write of tokens, by `ARGV[1]`: `save` (always), `replace` (over
/// no entry, or over the tokens whose refresh token's digest is `ARGV[2]`,
/// "" for none: the compare-and-set), `back` (a write-back: over no entry,
/// or over tokens obtained before these, so newer ones stay).
const WRITE: &str = r"
local mode = ARGV[1]
local expire = tonumber(ARGV[5])
if expire == nil or expire < 0 or expire > 253402300799 then
  return redis.error_reply('the expiry is out of range')
end
if mode == 'replace' then
  local current = redis.call('HGET', KEYS[1], 'rt')
  if current and current ~= ARGV[2] then return 0 end
elseif mode == 'back' then
  local current = tonumber(redis.call('HGET', KEYS[1], 'ts') or '0') or 0
  if current >= tonumber(ARGV[6]) then return 0 end
end
redis.call('HSET', KEYS[1], 'v', ARGV[3], 'rt', ARGV[4], 'ts', ARGV[6])
if ARGV[5] == '0' then redis.call('PERSIST', KEYS[1]) else redis.call('EXPIREAT', KEYS[1], ARGV[5]) end
return 1
";

/// What the store and its write-back task share.
pub(super) struct Shared {
    pub(super) redis: Connection,
    pub(super) unwritten: WriteBack,
}

/// How often the task tries Redis again.
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// One write of tokens, ready to run: the sealed value and what the
/// scripts compare.
#[derive(Clone)]
pub(super) struct TokenWrite {
    pub(super) sealed: Vec<u8>,
    pub(super) fingerprint: String,
    pub(super) expire_at: String,
    pub(super) obtained_ms: u64,
}

/// The writes waiting for Redis, by key.
#[derive(Default)]
pub(super) struct WriteBack {
    waiting: Mutex<HashMap<String, TokenWrite>>,
    running: AtomicBool,
}

impl WriteBack {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, TokenWrite>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A write to `place` went through: an older one waiting is moot.
    pub(super) fn settled(&self, place: &str) {
        self.waiting().remove(place);
    }

    /// Keeps `write` for `place` and makes sure the task runs.
    pub(super) fn keep(shared: &Arc<Shared>, place: String, write: TokenWrite) {
        let this = &shared.unwritten;
        {
            let mut waiting = this.waiting();
            if waiting
                .get(&place)
                .is_none_or(|kept| kept.obtained_ms <= write.obtained_ms)
            {
                waiting.insert(place, write);
            }
        }
        if !this.running.swap(true, Ordering::AcqRel) {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(retry(Arc::downgrade(shared)))),
                Err(_) => this.running.store(false, Ordering::Release),
            }
        }
    }

    /// The writes waiting now; when there are none, the task stops (unless
    /// one arrived meanwhile).
    fn next_round(&self) -> Option<Vec<(String, TokenWrite)>> {
        loop {
            let round: Vec<_> = self
                .waiting()
                .iter()
                .map(|(place, write)| (place.clone(), write.clone()))
                .collect();
            if !round.is_empty() {
                return Some(round);
            }
            self.running.store(false, Ordering::Release);
            if self.waiting().is_empty() || self.running.swap(true, Ordering::AcqRel) {
                return None;
            }
        }
    }

    /// `write` reached Redis (or was superseded there): forgotten, unless
    /// a newer one for `place` arrived meanwhile.
    fn done(&self, place: &str, write: &TokenWrite) {
        let mut waiting = self.waiting();
        if waiting
            .get(place)
            .is_some_and(|kept| kept.obtained_ms == write.obtained_ms)
        {
            waiting.remove(place);
        }
    }
}

/// One run of [`WRITE`].
pub(super) async fn run_write(
    redis: &Connection,
    place: &str,
    mode: &str,
    expected: &str,
    write: &TokenWrite,
) -> Result<bool, StoreError> {
    let obtained = write.obtained_ms.to_string();
    let args: [&[u8]; 6] = [
        mode.as_bytes(),
        expected.as_bytes(),
        &write.sealed,
        write.fingerprint.as_bytes(),
        write.expire_at.as_bytes(),
        obtained.as_bytes(),
    ];
    let written: i64 = redis.script(WRITE, place, &args).await?;
    Ok(written == 1)
}

async fn retry(shared: Weak<Shared>) {
    loop {
        tokio::time::sleep(RETRY_EVERY).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Some(round) = shared.unwritten.next_round() else {
            return;
        };
        for (place, write) in round {
            match run_write(&shared.redis, &place, "back", "", &write).await {
                Ok(written) => {
                    shared.unwritten.done(&place, &write);
                    tracing::info!(
                        target: "mcp_connect::fleet",
                        newer_there = !written,
                        "tokens obtained while the token store failed were written back"
                    );
                }
                // Still down: the next round tries again.
                Err(_) => break,
            }
        }
    }
}
