//! The issuer's signing keys (its JWKS), found through its metadata
//! (RFC 8414, else OpenID Connect discovery), fetched on the first token
//! and again when a token names a key the set does not have: at most once
//! per refetch interval, one fetch at a time, so a stream of tokens with
//! made-up key ids costs the issuer nothing.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey};
use tokio::time::Instant;
use url::Url;

use super::fetch::{Fetch, FetchError};
use super::TokenRefused;

/// The algorithms a token may be signed with: asymmetric only, so a key
/// set's public key can never be used as an HMAC secret.
pub(crate) const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::EdDSA,
];

/// A key of the set: what verifies, and the algorithm it is for when the
/// set says so.
#[derive(Clone)]
pub(crate) struct Key {
    pub(crate) key: DecodingKey,
    pub(crate) algorithm: Option<Algorithm>,
}

#[derive(Default)]
struct Known {
    by_id: HashMap<String, Key>,
    /// The keys without an id (usable only when the set has one key).
    anonymous: Vec<Key>,
}

/// The issuer's endpoints, as its metadata names them.
#[derive(Debug, Clone, serde::Deserialize)]
pub(crate) struct IssuerMetadata {
    pub(crate) issuer: String,
    #[serde(default)]
    pub(crate) jwks_uri: Option<String>,
    #[serde(default)]
    pub(crate) introspection_endpoint: Option<String>,
}

pub(crate) struct KeySet {
    fetch: Fetch,
    issuer: Url,
    refetch: Duration,
    known: RwLock<Arc<Known>>,
    /// When the set was last fetched; held across a fetch, so that one
    /// fetch serves every token waiting for it.
    fetched: tokio::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field("issuer", &self.issuer.as_str())
            .finish_non_exhaustive()
    }
}

impl KeySet {
    pub(crate) fn new(fetch: Fetch, issuer: Url, refetch: Duration) -> Self {
        KeySet {
            fetch,
            issuer,
            refetch,
            known: RwLock::default(),
            fetched: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) fn set_refetch(&mut self, interval: Duration) {
        self.refetch = interval;
    }

    fn known(&self) -> Arc<Known> {
        Arc::clone(&self.known.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The key a token's header names.
    pub(crate) async fn key(&self, id: Option<&str>) -> Result<Key, TokenRefused> {
        if let Some(key) = pick(&self.known(), id) {
            return Ok(key);
        }
        let mut fetched = self.fetched.lock().await;
        // Another token's fetch may have brought it while this one waited.
        if let Some(key) = pick(&self.known(), id) {
            return Ok(key);
        }
        if fetched.is_some_and(|at| at.elapsed() < self.refetch) {
            return Err(TokenRefused::UnknownKey);
        }
        let set = self.fetch_set().await;
        *fetched = Some(Instant::now());
        let known = Arc::new(known_keys(set.map_err(TokenRefused::KeysUnavailable)?));
        *self.known.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&known);
        pick(&known, id).ok_or(TokenRefused::UnknownKey)
    }

    async fn fetch_set(&self) -> Result<JwkSet, FetchError> {
        let metadata = issuer_metadata(&self.fetch, &self.issuer).await?;
        let jwks = (metadata.jwks_uri.as_deref()).and_then(|uri| Url::parse(uri).ok());
        let jwks = jwks.ok_or(FetchError::Answer {
            status: http::StatusCode::OK,
        })?;
        self.fetch.get(&jwks).await
    }
}

fn pick(known: &Known, id: Option<&str>) -> Option<Key> {
    match id {
        Some(id) => known.by_id.get(id).cloned(),
        None if known.by_id.is_empty() && known.anonymous.len() == 1 => {
            known.anonymous.first().cloned()
        }
        None => None,
    }
}

fn known_keys(set: JwkSet) -> Known {
    let mut known = Known::default();
    for jwk in set.keys {
        let Some(key) = usable(&jwk) else { continue };
        match jwk.common.key_id {
            Some(id) => {
                known.by_id.insert(id, key);
            }
            None => known.anonymous.push(key),
        }
    }
    known
}

/// A key for verifying signatures: not a symmetric one, not one marked for
/// encryption only.
fn usable(jwk: &Jwk) -> Option<Key> {
    use jsonwebtoken::jwk::{AlgorithmParameters, PublicKeyUse};
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        return None;
    }
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let algorithm = match jwk.common.key_algorithm {
        Some(named) => Some(named.to_string().parse::<Algorithm>().ok()?),
        None => None,
    };
    if algorithm.is_some_and(|a| !ALGORITHMS.contains(&a)) {
        return None;
    }
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key { key, algorithm })
}

/// The issuer's metadata: RFC 8414's well-known URL (the issuer's path
/// after it), else OpenID Connect's (after the issuer's path); its
/// `issuer` must be the one asked for.
pub(crate) async fn issuer_metadata(
    fetch: &Fetch,
    issuer: &Url,
) -> Result<IssuerMetadata, FetchError> {
    let path = issuer.path().trim_end_matches('/');
    let mut oauth = issuer.clone();
    oauth.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut oidc = issuer.clone();
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    let mut last = None;
    for url in [oauth, oidc] {
        match fetch.get::<IssuerMetadata>(&url).await {
            Ok(metadata) if same_issuer(&metadata.issuer, issuer) => return Ok(metadata),
            Ok(_) => {
                last = Some(FetchError::Answer {
                    status: http::StatusCode::OK,
                })
            }
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or(FetchError::Timeout))
}

pub(crate) fn same_issuer(named: &str, issuer: &Url) -> bool {
    named.trim_end_matches('/') == issuer.as_str().trim_end_matches('/')
}
