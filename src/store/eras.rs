//! The era cache's store ([`EraStore`]) and what it keeps: each server's
//! [`Verdict`], with a remembered `server/discover`. The cache itself is
//! [`era_cache`](crate::era_cache); one shared through Redis is
//! [`RedisEraStore`](super::redis::RedisEraStore) (feature `redis`).

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StoreError;
use crate::protocol::ProtocolVersion;
use crate::transport::TransportKind;

/// What a server turned out to speak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "era", rename_all = "kebab-case")]
pub enum Verdict {
    /// A modern server, at this version.
    Modern {
        /// The version it was reached on.
        version: ProtocolVersion,
        /// Its `server/discover` result, while the server said it is
        /// fresh.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        discover: Option<RememberedDiscover>,
    },
    /// A legacy server.
    Legacy {
        /// The transport it was reached on (never
        /// [`TransportKind::Memory`]).
        transport: TransportKind,
        /// The version it answered.
        version: ProtocolVersion,
    },
}

/// A `server/discover` result the server said may be reused, until when,
/// and for whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedDiscover {
    /// The result as the server sent it.
    pub(crate) result: Value,
    /// Fresh until this time (milliseconds since the Unix epoch).
    pub(crate) expires_ms: u64,
    /// The authorization context of a private result (a fingerprint);
    /// absent for a public one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<String>,
}

/// Where replicas share verdicts, keyed by [`EraCache::key`](crate::era_cache::EraCache::key).
pub trait EraStore: Send + Sync + 'static {
    /// The verdict kept under `key`, if any.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Verdict>, StoreError>>;
    /// Keeps `verdict` under `key`.
    fn put<'a>(
        &'a self,
        key: &'a str,
        verdict: &'a Verdict,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Forgets the verdict under `key`.
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}
