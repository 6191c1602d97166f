//! What replicas share (feature `redis`): stores that implement this
//! crate's store traits over Redis, so a fleet of services authorizes
//! once, refreshes once, and learns each server once.
//!
//! - [`RedisTokenStore`]: tokens per protected resource, sealed
//!   (XChaCha20-Poly1305 under the application's [`SealingKey`]; never in
//!   clear unless the application says so), with the refresh lease and the
//!   compare-and-set that [`TokenStore`](crate::auth::TokenStore) asks for,
//!   each one Redis command or script, so one replica refreshes and the
//!   others use its tokens.
//! - [`RedisEraStore`]: what each server speaks, and its remembered
//!   `server/discover`, for [`EraCache::with_store`](crate::era_cache::EraCache::with_store):
//!   a replica started after another learnt a server sends it no probe.
//! - [`RedisResponseStore`]: the SEP-2549 response cache's entries, for
//!   [`ResponseCache::with_store`](crate::response_cache::ResponseCache::with_store):
//!   a listing one replica fetched serves the others while it is fresh.
//! - [`RedisListingStore`]: the listings lazy servers start from, for
//!   [`RememberedListings::from_store`](crate::group::RememberedListings::from_store):
//!   a replica lists a server another replica reached, without connecting.
//!
//! Every Redis operation is bounded ([`RedisTokenStore::with_timeout`]): a
//! Redis that is down or slow is a [`StoreError`](crate::auth::StoreError)
//! after at most that long, and the authorization stage then goes on with
//! the tokens its process holds. An outage is one warning per store when
//! it starts and one info event when it ends (target `mcp_connect::store`),
//! and tokens obtained during it are written to Redis once it answers,
//! never over newer ones. A Redis that answers something else than
//! what was stored (another type, a value that does not open) is a
//! `StoreError` too, never a panic.
//!
//! The `redis` crate speaks RESP over one multiplexed connection per store,
//! replaced when it breaks. `rediss://` (with the `rustls` feature) is TLS
//! made here with the HTTP client's rustls settings, ring and its roots
//! (Mozilla's, the platform's with `native-roots`, a private CA through
//! `with_root_certificates_pem`), the stream then handed to the redis
//! crate: its own TLS features would bring a second root policy.

mod connection;
mod eras;
mod listings;
mod responses;
mod seal;
mod token_writes;
mod tokens;

pub use connection::StoreConfigError;
pub use eras::RedisEraStore;
pub use listings::RedisListingStore;
pub use responses::RedisResponseStore;
pub use seal::{SealError, SealingKey};
pub use tokens::RedisTokenStore;
