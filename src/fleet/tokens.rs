//! [`RedisTokenStore`]: tokens per protected resource in Redis, sealed.
//!
//! Each resource is one hash, `PREFIX:tokens:SHA256(resource)`, with `v`
//! (the sealed tokens) and `rt` (the SHA-256 of the refresh token, which
//! the compare-and-set compares, so the script never needs the key). Its
//! refresh lease is `PREFIX:lease:SHA256(resource)`, set with `NX PX` and
//! released only by the holder's id. A dynamically registered client is
//! `PREFIX:registration:SHA256(issuer)`, sealed (it may hold a secret).
//! Tokens without a refresh token expire
//! from Redis with the access token; tokens with one stay until replaced.

use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;
use sha2::{Digest as _, Sha256};

use super::connection::{hex, Connection};
use super::seal::SealingKey;
use crate::auth::{Lease, Registration, StoreError, TokenStore, Tokens};

/// The compare-and-set: the new value goes in over no entry, or over the
/// tokens whose refresh token's digest is `ARGV[1]` ("" for none).
const REPLACE: &str = r"
local current = redis.call('HGET', KEYS[1], 'rt')
if current and current ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'rt', ARGV[3])
if ARGV[4] == '0' then redis.call('PERSIST', KEYS[1]) else redis.call('EXPIREAT', KEYS[1], ARGV[4]) end
return 1
";

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
/// use mcp_connect::fleet::{RedisTokenStore, SealingKey};
///
/// # fn run(key_bytes: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// // The password comes in the URL (or REDIS_URL); it is never printed.
/// let url = std::env::var("REDIS_URL")?;
/// let store = RedisTokenStore::new(&url, "billing", SealingKey::from_bytes(key_bytes)?)?;
/// let auth = Authorization::client_credentials("billing", std::env::var("SECRET")?)
///     .with_token_store(store);
/// # drop(auth); Ok(()) }
/// ```
pub struct RedisTokenStore {
    redis: Connection,
}

impl RedisTokenStore {
    /// A store at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`, or
    /// `rediss://`), its keys under `prefix`, its values sealed with
    /// `key`. Nothing is sent until the store is first used, so a Redis
    /// that is down at start costs nothing but a warning then.
    pub fn new(url: &str, prefix: impl Into<String>, key: SealingKey) -> Result<Self, StoreError> {
        Connection::open(url, prefix.into(), Some(key)).map(|redis| RedisTokenStore { redis })
    }

    /// A store whose values are kept in clear: only for a Redis the
    /// application trusts with its tokens as they are.
    pub fn in_clear(url: &str, prefix: impl Into<String>) -> Result<Self, StoreError> {
        Connection::open(url, prefix.into(), None).map(|redis| RedisTokenStore { redis })
    }

    /// How long one Redis operation may take (500 ms by default): past it
    /// the operation is a `StoreError` and authorization goes on without
    /// the store.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.redis.timeout = timeout;
        self
    }

    fn seal(&self, place: &str, tokens: &Tokens) -> Vec<u8> {
        self.redis.seal(
            place,
            &serde_json::to_vec(tokens).expect("tokens serialize"),
        )
    }

    fn unseal(&self, place: &str, value: &[u8]) -> Result<Tokens, StoreError> {
        serde_json::from_slice(&self.redis.unseal(place, value)?)
            .map_err(|e| StoreError(Box::new(e)))
    }
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
        (None, Some(at)) => at.to_string(),
        _ => "0".into(),
    }
}

impl TokenStore for RedisTokenStore {
    fn load<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("tokens", resource);
            let value: Option<Vec<u8>> = self
                .redis
                .query(redis::cmd("HGET").arg(&key).arg("v").clone())
                .await?;
            value.map(|v| self.unseal(&key, &v)).transpose()
        })
    }

    fn save<'a>(
        &'a self,
        resource: &'a str,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("tokens", resource);
            let mut pipeline = redis::pipe();
            pipeline
                .atomic()
                .cmd("HSET")
                .arg(&key)
                .arg("v")
                .arg(self.seal(&key, tokens))
                .arg("rt")
                .arg(fingerprint(tokens.refresh_token()))
                .ignore();
            match expire_at(tokens).as_str() {
                "0" => pipeline.cmd("PERSIST").arg(&key).ignore(),
                at => pipeline.cmd("EXPIREAT").arg(&key).arg(at).ignore(),
            };
            self.redis.atomically(pipeline).await
        })
    }

    fn forget<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("tokens", resource);
            self.redis.query(redis::cmd("DEL").arg(&key).clone()).await
        })
    }

    fn replace<'a>(
        &'a self,
        resource: &'a str,
        from: Option<&'a str>,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("tokens", resource);
            let sealed = self.seal(&key, tokens);
            let (expected, next, at) = (
                fingerprint(from),
                fingerprint(tokens.refresh_token()),
                expire_at(tokens),
            );
            let args: [&[u8]; 4] = [expected.as_bytes(), &sealed, next.as_bytes(), at.as_bytes()];
            let replaced: i64 = self.redis.script(REPLACE, &key, &args).await?;
            Ok(replaced == 1)
        })
    }

    fn lease<'a>(
        &'a self,
        resource: &'a str,
        lasting: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("lease", resource);
            let mut id = [0u8; 16];
            getrandom::fill(&mut id).map_err(|e| StoreError(Box::new(e)))?;
            let id = hex(&id);
            let millis = u64::try_from(lasting.as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            let granted: Option<String> = self
                .redis
                .query(
                    redis::cmd("SET")
                        .arg(&key)
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

    fn load_registration<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<Registration>, StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("registration", issuer);
            self.redis.get_json(&key).await
        })
    }

    fn save_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("registration", issuer);
            self.redis.set_json(&key, registration, None).await
        })
    }

    fn release<'a>(
        &'a self,
        resource: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = self.redis.key("lease", resource);
            let _: i64 = self
                .redis
                .script(RELEASE, &key, &[lease.0.as_bytes()])
                .await?;
            Ok(())
        })
    }
}

impl fmt::Debug for RedisTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTokenStore")
            .field("redis", &self.redis)
            .finish()
    }
}
