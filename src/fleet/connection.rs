//! One Redis connection as the fleet's stores use it: opened lazily, every
//! operation bounded, keys under the application's prefix, values sealed.

use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::aio::ConnectionManager;
use sha2::{Digest as _, Sha256};

pub(super) use crate::redact::hex;

use super::seal::SealingKey;
use crate::auth::StoreError;

/// How long one Redis operation may take by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);

pub(super) struct Connection {
    client: redis::Client,
    /// The connection in use and its generation (which connect made it):
    /// locked only to take a handle or to replace a broken one, so
    /// operations run side by side on the one multiplexed connection.
    connection: tokio::sync::Mutex<Option<(u64, ConnectionManager)>>,
    connects: std::sync::atomic::AtomicU64,
    prefix: String,
    sealing: Option<SealingKey>,
    pub(super) timeout: Duration,
}

impl Connection {
    pub(super) fn open(
        url: &str,
        prefix: String,
        sealing: Option<SealingKey>,
    ) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(|e| StoreError(Box::new(e)))?;
        Ok(Connection {
            client,
            connection: tokio::sync::Mutex::new(None),
            connects: std::sync::atomic::AtomicU64::new(0),
            prefix,
            sealing,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// `PREFIX:KIND:SHA256(name)`: no name (a URL, a resource) in clear.
    pub(super) fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{}", self.prefix, hex(&Sha256::digest(name)))
    }

    /// `PREFIX:KIND:H1:H2:...`: one hashed segment (128 bits of SHA-256)
    /// per part, outermost first, so keys group by their leading parts
    /// (`SCAN PREFIX:tokens:H1:*` lists one issuer's) and name nothing in
    /// clear.
    pub(super) fn key_of(&self, kind: &str, parts: &[&str]) -> String {
        let mut key = format!("{}:{kind}", self.prefix);
        for part in parts {
            key.push(':');
            key.push_str(&hex(&Sha256::digest(part)[..16]));
        }
        key
    }

    /// Runs `operation` on the shared connection within the timeout,
    /// connecting first when there is none yet. A connection that broke
    /// (Redis restarted, the socket dropped) is replaced and the operation
    /// run once more on the new one, within the same bound: the first
    /// operation after a restart would otherwise fail for nothing.
    pub(super) async fn run<T, F>(&self, operation: F) -> Result<T, StoreError>
    where
        F: for<'c> Fn(&'c mut ConnectionManager) -> BoxFuture<'c, redis::RedisResult<T>>,
    {
        let work = async {
            for fresh in [false, true] {
                let (generation, mut connection) = self.connection_in_use().await?;
                match operation(&mut connection).await {
                    Err(e) if !fresh && (e.is_io_error() || e.is_connection_dropped()) => {
                        // Replaced, unless another operation already has.
                        let mut held = self.connection.lock().await;
                        if held.as_ref().is_some_and(|(g, _)| *g == generation) {
                            *held = None;
                        }
                    }
                    outcome => return outcome,
                }
            }
            unreachable!("the second pass returns")
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result.map_err(|e| StoreError(Box::new(e))),
            Err(elapsed) => Err(StoreError(Box::new(elapsed))),
        }
    }

    /// A handle on the connection in use, connecting first when there is
    /// none (under the lock, so concurrent operations share one connect).
    async fn connection_in_use(&self) -> redis::RedisResult<(u64, ConnectionManager)> {
        let mut held = self.connection.lock().await;
        if let Some(in_use) = held.as_ref() {
            return Ok(in_use.clone());
        }
        let generation = self
            .connects
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // No retries of its own: an operation is bounded by `timeout`, a
        // broken connection is replaced by `run`, and a refusal (a wrong
        // password, an unknown user, a bad database) must reach the caller
        // as itself, not as the bound running out while it retries.
        let config = redis::aio::ConnectionManagerConfig::new().set_number_of_retries(0);
        let connection = ConnectionManager::new_with_config(self.client.clone(), config).await?;
        *held = Some((generation, connection.clone()));
        Ok((generation, connection))
    }

    /// One command.
    pub(super) async fn query<T: redis::FromRedisValue + Send>(
        &self,
        command: redis::Cmd,
    ) -> Result<T, StoreError> {
        self.run(move |c| {
            let command = command.clone();
            Box::pin(async move { command.query_async(c).await })
        })
        .await
    }

    /// A Lua script on one key, with its arguments.
    pub(super) async fn script<T: redis::FromRedisValue + Send>(
        &self,
        source: &'static str,
        key: &str,
        args: &[&[u8]],
    ) -> Result<T, StoreError> {
        let script = redis::Script::new(source);
        let key = key.to_owned();
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        self.run(move |c| {
            let (script, key, args) = (script.clone(), key.clone(), args.clone());
            Box::pin(async move {
                let mut invocation = script.key(key);
                for arg in &args {
                    invocation.arg(arg.as_slice());
                }
                invocation.invoke_async(c).await
            })
        })
        .await
    }

    /// The JSON value sealed at `place`, if any: the one read every
    /// plain-value store here does.
    pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        place: &str,
    ) -> Result<Option<T>, StoreError> {
        let value: Option<Vec<u8>> = self.query(redis::cmd("GET").arg(place).clone()).await?;
        value
            .map(|v| {
                serde_json::from_slice(&self.unseal(place, &v)?)
                    .map_err(|e| StoreError(Box::new(e)))
            })
            .transpose()
    }

    /// Seals `value` as JSON at `place`, expiring at `expires_ms` (Unix
    /// milliseconds) when given.
    pub(super) async fn set_json<T: serde::Serialize>(
        &self,
        place: &str,
        value: &T,
        expires_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_vec(value).map_err(|e| StoreError(Box::new(e)))?;
        let mut set = redis::cmd("SET");
        set.arg(place).arg(self.seal(place, &json));
        if let Some(at) = expires_ms {
            set.arg("PXAT").arg(at);
        }
        self.query(set).await
    }

    /// `plaintext` as it is kept at `place`.
    pub(super) fn seal(&self, place: &str, plaintext: &[u8]) -> Vec<u8> {
        match &self.sealing {
            Some(key) => key.seal(place.as_bytes(), plaintext),
            None => plaintext.to_vec(),
        }
    }

    /// What `value`, kept at `place`, holds.
    pub(super) fn unseal(&self, place: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
        match &self.sealing {
            Some(key) => key
                .open(place.as_bytes(), value)
                .map_err(|e| StoreError(Box::new(e))),
            None => Ok(value.to_vec()),
        }
    }
}

/// `at` in Unix milliseconds (0 before the epoch), as Redis expiries and
/// the token writes' `ts` count time.
pub(super) fn unix_ms(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("prefix", &self.prefix)
            .field("sealed", &self.sealing.is_some())
            .finish_non_exhaustive()
    }
}
