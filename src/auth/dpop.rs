//! DPoP (RFC 9449; MCP's SEP-1932): tokens bound to a key the client holds.
//!
//! A bearer token works for whoever holds it; a DPoP-bound token works only
//! with a fresh proof signed by the client's private key, so a token that
//! leaks (a log, a proxy, a stolen store) is useless alone. The client:
//!
//! - sends a proof (`DPoP` header) with the token request, so the
//!   authorization server binds the token to its key (`cnf.jkt`);
//! - presents the token as `Authorization: DPoP <token>` with a fresh proof
//!   on every request to the resource (`htm`, `htu` without query and
//!   fragment, `iat`, a unique `jti`, and `ath`, the token's hash);
//! - answers a server's `use_dpop_nonce` refusal (RFC 9449 §8, §9) by
//!   sending once more with the nonce it gave (`DPoP-Nonce`), remembered per
//!   origin for the requests after it; a second refusal is the answer
//!   ([`AuthError::DpopNonce`](super::AuthError::DpopNonce)), never a loop.
//!
//! The key is ES256, made in memory by `DpopKey::generate` (feature
//! `signing`) and never written anywhere; a [`DpopSigner`] plugs in another (a hardware key, a
//! key service). Proofs are compact JWS written here rather than with
//! `jsonwebtoken`, whose encoder takes only keys it holds itself: a
//! pluggable signer needs the signing input, and the header must carry the
//! public JWK. Proofs and keys are secrets: header values are marked
//! sensitive, and no `Debug` shows either.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use http::HeaderValue;
use serde_json::{json, Value};

use crate::transport::error::BoxError;

/// The request header that carries a proof, and the response header that
/// carries a server's nonce.
pub(crate) const DPOP: &str = "dpop";
pub(crate) const DPOP_NONCE: &str = "dpop-nonce";

/// What signs DPoP proofs: an asymmetric key whose private half stays with
/// it. Implement it to keep the key in a hardware module or a key service;
/// `DpopKey::generate` (feature `signing`) makes an in-memory ES256 key.
pub trait DpopSigner: Send + Sync + 'static {
    /// The JWS algorithm (`"ES256"`, `"EdDSA"`, ...); never `"none"` or a
    /// symmetric one.
    fn algorithm(&self) -> &str;
    /// The public key as a JWK (RFC 7517), without any private member.
    fn public_jwk(&self) -> Value;
    /// The JWS signature over `signing_input` (RFC 7515 §5.1), in the
    /// algorithm's JWS encoding (for ECDSA, `r || s`).
    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, BoxError>;
}

/// The key a client proves possession of. Cheap to clone; clones are the
/// same key. `Debug` shows the algorithm only.
#[derive(Clone)]
pub struct DpopKey {
    signer: Arc<dyn DpopSigner>,
}

impl DpopKey {
    /// A key held by `signer`.
    pub fn from_signer(signer: impl DpopSigner) -> Self {
        DpopKey {
            signer: Arc::new(signer),
        }
    }

    /// The JWS algorithm of the proofs.
    pub fn algorithm(&self) -> &str {
        self.signer.algorithm()
    }

    /// A proof for a `method` request to `url` (query and fragment left
    /// out), bound to `access_token` when given, carrying `nonce` when the
    /// server asked for one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<HeaderValue, BoxError> {
        let header = json!({
            "typ": "dpop+jwt",
            "alg": self.signer.algorithm(),
            "jwk": self.signer.public_jwk(),
        });
        let mut claims = json!({
            "jti": super::pkce::random_token(),
            "htm": method,
            "htu": target_uri(url),
            "iat": SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs(),
        });
        if let Some(token) = access_token {
            let hash = <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes());
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(hash));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.signer.sign(signing_input.as_bytes())?;
        let mut value = HeaderValue::try_from(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("algorithm", &self.signer.algorithm())
            .finish_non_exhaustive()
    }
}

/// `htu` (RFC 9449 §4.2): the request URI without query and fragment.
fn target_uri(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// Who gave a nonce: an authorization server and a resource on one origin
/// keep theirs apart (RFC 9449 §8, §9 are separate nonces).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Party {
    AuthorizationServer,
    Resource,
}

/// The last nonce each server gave, shared by every request of one
/// [`Authorization`](super::Authorization).
#[derive(Default)]
pub(crate) struct Nonces {
    by_server: Mutex<HashMap<(Party, String), String>>,
}

impl Nonces {
    pub(crate) fn get(&self, party: Party, origin: &str) -> Option<String> {
        self.by_server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(party, origin.to_owned()))
            .cloned()
    }

    /// Keeps the `DPoP-Nonce` a response from `party` at `origin` carried,
    /// if any.
    pub(crate) fn keep(&self, party: Party, origin: &str, headers: &http::HeaderMap) {
        let Some(nonce) = headers.get(DPOP_NONCE).and_then(|v| v.to_str().ok()) else {
            return;
        };
        self.by_server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((party, origin.to_owned()), nonce.to_owned());
    }
}

/// `scheme://host:port` of a URL, the key nonces are kept under.
pub(crate) fn origin_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(url) => url.origin().ascii_serialization(),
        Err(_) => String::new(),
    }
}
