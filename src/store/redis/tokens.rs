//! [`RedisTokenStore`]: tokens in Redis, sealed, one entry per
//! [`TokenKey`].
//!
//! Keys are namespaced by the application's prefix, then by each part of
//! the token key, hashed (no URL, client id or principal in clear):
//! `PREFIX:tokens:ISSUER:CLIENT:PRINCIPAL:RESOURCE`. Each entry is a hash
//! with `v` (the sealed tokens), `rt` (the SHA-256 of the refresh token,
//! which the compare-and-set compares, so no script needs the sealing key)
//! and `ts` (when this process obtained them, Unix milliseconds). Leases
//! are `PREFIX:lease:KIND:...` with the same parts, set with `NX PX` and
//! released only by the holder's id. A dynamically registered client is
//! `PREFIX:registration:SHA256(issuer)`, sealed (it may hold a secret).
//! Tokens without a refresh token expire from Redis with the access token;
//! tokens with one stay until replaced.
//!
//! A write that fails (Redis down or slow) is not lost: it is written back
//! when Redis answers again ([`super::token_writes`]), unless newer tokens
//! got there first.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use sha2::{Digest as _, Sha256};

use super::connection::{hex, unix_ms, Connection};
use super::token_writes::{run_write, Shared, TokenWrite, WriteBack};
use crate::store::{Lease, LeaseKind, Registration, StoreError, TokenKey, TokenStore, Tokens};

/// A lease ends only by its holder's id.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// Tokens shared through Redis by every replica that opens it with the
/// same prefix and key.
///
/// ```no_run
/// use mcp_connect::auth::Authorization;
/// use mcp_connect::store::redis::{RedisStores, SealingKey};
///
/// # fn run(key_bytes: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// // The password comes in the URL (or REDIS_URL); it is never printed.
/// let url = std::env::var("REDIS_URL")?;
/// let redis = RedisStores::new(&url, "billing", SealingKey::from_bytes(key_bytes)?)?;
/// let auth = Authorization::client_credentials("billing", std::env::var("SECRET")?)
///     .with_token_store(redis.tokens());
/// # drop(auth); Ok(()) }
/// ```
pub struct RedisTokenStore {
    shared: Arc<Shared>,
}

impl RedisTokenStore {
    /// The store over `redis` ([`RedisStores::tokens`](super::RedisStores::tokens)).
    pub(super) fn over(redis: Connection) -> Self {
        RedisTokenStore {
            shared: Arc::new(Shared {
                redis,
                unwritten: WriteBack::default(),
            }),
        }
    }

    fn redis(&self) -> &Connection {
        &self.shared.redis
    }

    /// The entry of `key`: one hashed segment per part.
    fn place(&self, key: &TokenKey) -> String {
        self.redis().key_of("tokens", &key_parts(key))
    }

    fn lease_place(&self, key: &TokenKey, kind: LeaseKind) -> String {
        self.redis()
            .key_of(&format!("lease:{}", kind.as_str()), &key_parts(key))
    }

    /// `tokens` ready to go in at `place`.
    fn write_of(&self, place: &str, tokens: &Tokens) -> TokenWrite {
        let json = serde_json::to_vec(tokens).expect("tokens serialize");
        TokenWrite {
            sealed: self.redis().seal(place, &json),
            fingerprint: fingerprint(tokens.refresh_token()),
            expire_at: expire_at(tokens),
            obtained_ms: unix_ms(SystemTime::now()),
        }
    }

    /// Runs one write in `mode`; one that fails is kept for write-back.
    async fn write(
        &self,
        place: String,
        mode: &'static str,
        expected: &str,
        write: TokenWrite,
    ) -> Result<bool, StoreError> {
        match run_write(self.redis(), &place, mode, expected, &write).await {
            Ok(done) => {
                self.shared.unwritten.settled(&place);
                Ok(done)
            }
            Err(error) => {
                WriteBack::keep(&self.shared, place, write);
                Err(error)
            }
        }
    }
}

/// The parts a token key is namespaced by, outermost first.
fn key_parts(key: &TokenKey) -> [&str; 4] {
    [
        key.issuer(),
        key.client(),
        key.principal().unwrap_or(""),
        key.resource(),
    ]
}

/// The digest the compare-and-set compares: of the refresh token, "" for
/// none.
fn fingerprint(tokens: Option<&str>) -> String {
    tokens.map_or_else(String::new, |t| hex(&Sha256::digest(t)))
}

/// When Redis should drop the entry: with the access token when nothing
/// can renew it, else never ("0").
fn expire_at(tokens: &Tokens) -> String {
    match (tokens.refresh_token(), tokens.expires_at()) {
        // Within what EXPIREAT takes, so the write is never half done.
        (None, Some(at)) => at.min(crate::store::LATEST_EXPIRY).to_string(),
        _ => "0".into(),
    }
}

impl TokenStore for RedisTokenStore {
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        Box::pin(async move {
            let place = self.place(key);
            let value: Option<Vec<u8>> = self
                .redis()
                .query(redis::cmd("HGET").arg(&place).arg("v").clone())
                .await?;
            value
                .map(|v| {
                    serde_json::from_slice(&self.redis().unseal(&place, &v)?)
                        .map_err(StoreError::new)
                })
                .transpose()
        })
    }

    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let place = self.place(key);
            let write = self.write_of(&place, tokens);
            self.write(place, "save", "", write).await.map(|_| ())
        })
    }

    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let place = self.place(key);
            self.shared.unwritten.settled(&place);
            self.redis()
                .query(redis::cmd("DEL").arg(&place).clone())
                .await
        })
    }

    fn replace<'a>(
        &'a self,
        key: &'a TokenKey,
        from: Option<&'a str>,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let place = self.place(key);
            let write = self.write_of(&place, tokens);
            self.write(place, "replace", &fingerprint(from), write)
                .await
        })
    }

    fn lease<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lasting: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        Box::pin(async move {
            let place = self.lease_place(key, kind);
            let mut id = [0u8; 16];
            getrandom::fill(&mut id).map_err(StoreError::new)?;
            let id = hex(&id);
            let millis = u64::try_from(lasting.as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            let granted: Option<String> = self
                .redis()
                .query(
                    redis::cmd("SET")
                        .arg(&place)
                        .arg(&id)
                        .arg("NX")
                        .arg("PX")
                        .arg(millis)
                        .clone(),
                )
                .await?;
            Ok(granted.map(|_| Lease(id)))
        })
    }

    fn release<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let place = self.lease_place(key, kind);
            let _: i64 = self
                .redis()
                .script(RELEASE, &place, &[lease.0.as_bytes()])
                .await?;
            Ok(())
        })
    }

    fn load_registration<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<Registration>, StoreError>> {
        Box::pin(async move {
            let place = self.redis().key("registration", issuer);
            self.redis().get_json(&place).await
        })
    }

    fn save_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let place = self.redis().key("registration", issuer);
            self.redis().set_json(&place, registration, None).await
        })
    }
}

impl fmt::Debug for RedisTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTokenStore")
            .field("redis", self.redis())
            .finish_non_exhaustive()
    }
}
