//! The command's stores: a token store (a file, or Redis) whose failed
//! saves the person is told about, and the Redis era and listing stores,
//! sealed with the key `--store-key-env` names, trusting `--cacert` for
//! `rediss://`.
//! Neither a Redis URL nor a key is ever in a message.

use futures_util::future::BoxFuture;
use mcp_connect::store::redis::{RedisStores, SealingKey};
use mcp_connect::store::{
    Lease, LeaseKind, Registration, StoreError, TokenKey, TokenStore, Tokens,
};

use super::args::Args;
use super::output::chain;

/// `place` as a Redis URL, when it names one (`redis://` or `rediss://`,
/// any case), with REDIS_PASSWORD put in when the URL has no password of
/// its own; `None` for a file path. A Redis URL that cannot be used is a
/// usage error naming `option`, never a file: a file store's path never
/// comes from a URL (it would hold the password in its name and the
/// tokens in clear although sealing was asked for). The message names
/// neither the URL nor the password.
pub(super) fn redis_url(place: &str, option: &str) -> Result<Option<String>, String> {
    let scheme = place.split_once("://").map(|(scheme, _)| scheme);
    if !scheme.is_some_and(|s| s.eq_ignore_ascii_case("redis") || s.eq_ignore_ascii_case("rediss"))
    {
        return Ok(None);
    }
    let unusable = || format!("{option}: not a usable Redis URL (redis://[:PASSWORD@]HOST:PORT/)");
    let mut url = url::Url::parse(place).map_err(|_| unusable())?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(unusable());
    }
    if url.password().is_none() {
        if let Ok(password) = std::env::var("REDIS_PASSWORD") {
            url.set_password(Some(&password)).map_err(|()| unusable())?;
        }
    }
    Ok(Some(url.into()))
}

/// How long one Redis operation of the command may take: a run is a new
/// process whose first connection (and `AUTH`) may meet a busy machine,
/// and waiting two seconds is cheaper for a person than a refresh made
/// without the others.
const COMMAND_STORE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The Redis stores `option redis://...` asks for: sealed with the key
/// from `--store-key-env`, or in clear only with `--store-in-clear`;
/// bounded by [`COMMAND_STORE_TIMEOUT`]; trusting `--cacert` for
/// `rediss://`. Neither the URL nor the key is ever in a message.
pub(super) fn redis_stores(args: &Args, url: &str, option: &str) -> Result<RedisStores, String> {
    let stores = match sealing_key(args, option)? {
        Some(key) => RedisStores::new(url, "mcp-connect", key),
        None => RedisStores::in_clear(url, "mcp-connect"),
    };
    let stores = stores
        .map(|stores| stores.with_timeout(COMMAND_STORE_TIMEOUT))
        .map_err(|e| redis_url_problem(option, &e))?;
    match redis_cacert(args)? {
        #[cfg(feature = "rustls")]
        Some(pem) => {
            (stores.with_root_certificates_pem(&pem)).map_err(|e| format!("--cacert: {e}"))
        }
        _ => Ok(stores),
    }
}

/// What is wrong with a Redis URL the command was given, never the URL.
fn redis_url_problem(option: &str, error: &mcp_connect::store::StoreError) -> String {
    match std::error::Error::source(error)
        .and_then(|e| e.downcast_ref::<mcp_connect::store::redis::StoreConfigError>())
    {
        Some(problem) => format!("{option}: {problem}"),
        None => format!("{option}: not a usable Redis URL"),
    }
}

/// `serve --state-store`: the Redis stores the sessions' owners are kept
/// in ([`RedisStores::owners`]), and this replica's address as the others
/// reach it when `--replica-url` gives it (else the one it listens on). Sealing is required: a replica hands
/// a client's request (and its token) to the address it reads there.
pub(super) fn replica_owners(
    args: &Args,
) -> Result<Option<(RedisStores, Option<http::Uri>)>, String> {
    let Some(place) = &args.state_store else {
        return Ok(None);
    };
    let option = "--state-store";
    let Some(url) = redis_url(place, option)? else {
        return Err(format!(
            "{option}: a Redis URL (redis://... or rediss://...)"
        ));
    };
    if args.store_in_clear {
        return Err(format!(
            "{option}: replicas hand requests to the address Redis holds; it must be sealed (--store-key-env, not --store-in-clear)"
        ));
    }
    if args.replica_url.is_none() && args.listen.ip().is_unspecified() {
        return Err(format!(
            "{option}: --listen on every address needs --replica-url"
        ));
    }
    let me = (args.replica_url.as_ref())
        .map(|me| {
            me.parse()
                .ok()
                .filter(|u: &http::Uri| matches!(u.scheme_str(), Some("http" | "https")))
                .ok_or("--replica-url: not an http(s) URL")
        })
        .transpose()?;
    Ok(Some((redis_stores(args, &url, option)?, me)))
}

/// The `--cacert` file, which a `rediss://` store trusts too.
fn redis_cacert(args: &Args) -> Result<Option<Vec<u8>>, String> {
    args.cacert
        .as_ref()
        .map(|path| {
            std::fs::read(path).map_err(|error| format!("--cacert: cannot read the file: {error}"))
        })
        .transpose()
}

/// The key from `--store-key-env`; `None` only with `--store-in-clear`.
pub(super) fn sealing_key(args: &Args, option: &str) -> Result<Option<SealingKey>, String> {
    if args.store_in_clear {
        return Ok(None);
    }
    let Some(var) = &args.store_key_env else {
        return Err(format!(
            "{option} redis://... needs --store-key-env VAR (or --store-in-clear)"
        ));
    };
    let hex = std::env::var(var).map_err(|_| format!("--store-key-env: {var} is not set"))?;
    decode_hex(hex.trim())
        .and_then(|bytes| SealingKey::from_bytes(&bytes).ok())
        .map(Some)
        .ok_or_else(|| format!("--store-key-env: {var} is not 64 hex digits"))
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The command's token store (a file, or Redis), whose failed saves the
/// person is told about on stderr (the next run would ask them again).
/// Everything else, the refresh lease and the compare-and-set included,
/// goes to the store as it is.
pub(super) struct Reported<S>(pub(super) S);

impl<S: TokenStore> TokenStore for Reported<S> {
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        self.0.load(key)
    }

    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(
            async move { reported(self.0.save(key, tokens).await, "the tokens were not saved") },
        )
    }

    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(
            async move { reported(self.0.forget(key).await, "refused tokens were not removed") },
        )
    }

    fn replace<'a>(
        &'a self,
        key: &'a TokenKey,
        from: Option<&'a str>,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            reported(
                self.0.replace(key, from, tokens).await,
                "the tokens were not saved",
            )
        })
    }

    fn lease<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lasting: std::time::Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        self.0.lease(key, kind, lasting)
    }

    fn release<'a>(
        &'a self,
        key: &'a TokenKey,
        kind: LeaseKind,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.release(key, kind, lease)
    }

    fn load_registration<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<Registration>, StoreError>> {
        self.0.load_registration(issuer)
    }

    fn save_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.save_registration(issuer, registration)
    }
}

fn reported<T>(result: Result<T, StoreError>, what: &str) -> Result<T, StoreError> {
    if let Err(error) = &result {
        eprintln!("mcp-connect: --token-store: {what}: {}", chain(error));
    }
    result
}

/// What `--catalogue-cache` names: a file, or a Redis store
/// (`redis://...`, sealed like the others). A Redis that cannot be read
/// now is a warning, and the servers start without remembered listings;
/// one that cannot work as configured is a usage error.
pub(super) async fn remembered_listings(
    args: &Args,
) -> Result<Option<mcp_connect::group::RememberedListings>, String> {
    let Some(place) = &args.catalogue_cache else {
        return Ok(None);
    };
    let redis = (place.to_str())
        .map(|place| redis_url(place, "--catalogue-cache"))
        .transpose()?
        .flatten();
    let Some(url) = redis else {
        return mcp_connect::group::RememberedListings::file(place)
            .map(Some)
            .map_err(|error| format!("--catalogue-cache: {}", chain(&error)));
    };
    let stores = redis_stores(args, &url, "--catalogue-cache")?;
    match mcp_connect::group::RememberedListings::from_store(stores.listings()).await {
        Ok(listings) => Ok(Some(listings)),
        Err(error) if error.is_configuration() => {
            Err(format!("--catalogue-cache: {}", chain(&error)))
        }
        Err(error) => {
            eprintln!(
                "mcp-connect: --catalogue-cache: {}; the servers start without remembered listings",
                chain(&error)
            );
            Ok(None)
        }
    }
}

/// Writes the --catalogue-cache listings once more at the end of a run;
/// a file that cannot be written costs a line on stderr.
pub(super) async fn save_listings(remembered: Option<&mcp_connect::group::RememberedListings>) {
    if let Some(listings) = remembered {
        if let Err(error) = listings.save().await {
            eprintln!(
                "mcp-connect: --catalogue-cache: cannot write: {}",
                super::output::chain(&error)
            );
        }
    }
}
