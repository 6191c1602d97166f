//! `private_key_jwt` client authentication (RFC 7523 §2.2): the client
//! proves who it is with a short-lived JWT signed by its private key, so no
//! shared secret crosses the network. Signing is `jsonwebtoken`'s; this
//! module only fills the claims the specification asks for.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

/// A private key that signs client assertions. `Debug` shows the algorithm
/// only.
#[derive(Clone)]
pub struct SigningKey {
    algorithm: Algorithm,
    key: EncodingKey,
}

/// The key could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The algorithm is not one of ES256, ES384, RS256, RS384, RS512,
    /// PS256, PS384, PS512, EdDSA.
    #[error("unsupported signing algorithm")]
    Algorithm,
    /// The PEM does not hold a key for that algorithm.
    #[error("the PEM does not hold a usable private key")]
    Pem,
}

impl SigningKey {
    /// A PKCS#8 PEM private key for `algorithm` (`"ES256"`, `"RS256"`, ...).
    pub fn from_pem(algorithm: &str, pem: &[u8]) -> Result<Self, KeyError> {
        let algorithm: Algorithm = algorithm.parse().map_err(|_| KeyError::Algorithm)?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
            _ => return Err(KeyError::Algorithm),
        }
        .map_err(|_| KeyError::Pem)?;
        Ok(SigningKey { algorithm, key })
    }

    /// A client assertion for `client_id`, addressed to `audience` (the
    /// authorization server's issuer), valid for a minute.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Option<String> {
        #[derive(Serialize)]
        struct Claims<'a> {
            iss: &'a str,
            sub: &'a str,
            aud: &'a str,
            iat: u64,
            exp: u64,
            jti: String,
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
        let claims = Claims {
            iss: client_id,
            sub: client_id,
            aud: audience,
            iat: now,
            exp: now + 60,
            jti: super::pkce::random_token(),
        };
        jsonwebtoken::encode(&Header::new(self.algorithm), &claims, &self.key).ok()
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}
