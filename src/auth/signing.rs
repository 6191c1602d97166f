//! Keys this process holds and signs with (feature `signing`): the
//! `private_key_jwt` client assertion (RFC 7523 §2.2) and an in-memory
//! DPoP key. Without the feature a service that never signs builds neither
//! `jsonwebtoken` nor this crate's use of `ring`, and DPoP still works with
//! the application's own [`DpopSigner`].
//!
//! A client assertion lets the client prove who it is with a short-lived JWT
//! signed by its private key, so no shared secret crosses the network.
//! Signing is `jsonwebtoken`'s; this module only fills the claims the
//! specification asks for. The DPoP key is ES256 (P-256), made with
//! `ring`.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;
use serde_json::{json, Value};

use super::dpop::{DpopKey, DpopSigner};
use super::{Authorization, Grant};
use crate::transport::error::BoxError;

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

impl DpopKey {
    /// A new ES256 (P-256) key, held in memory for the life of the value.
    pub fn generate() -> Result<Self, KeyError> {
        Ok(Self::from_signer(Es256::generate()?))
    }
}

impl Authorization {
    /// The `client_credentials` grant, the client authenticating with a JWT
    /// signed by its private key (`private_key_jwt`, RFC 7523).
    pub fn client_credentials_with_key(client_id: impl Into<String>, key: SigningKey) -> Self {
        let mut auth = Self::with_grant(Grant::ClientCredentials).with_client_id(client_id);
        auth.settings().client_key = Some(key);
        auth
    }
}

/// An ES256 key made with `ring`.
struct Es256 {
    pair: ring::signature::EcdsaKeyPair,
    rng: ring::rand::SystemRandom,
    jwk: Value,
}

impl Es256 {
    fn generate() -> Result<Self, KeyError> {
        use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
        let rng = ring::rand::SystemRandom::new();
        let alg = &ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|_| KeyError::Pem)?;
        let pair =
            EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).map_err(|_| KeyError::Pem)?;
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Es256 { pair, rng, jwk })
    }
}

impl DpopSigner for Es256 {
    fn algorithm(&self) -> &str {
        "ES256"
    }

    fn public_jwk(&self) -> Value {
        self.jwk.clone()
    }

    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, BoxError> {
        let signature = self
            .pair
            .sign(&self.rng, signing_input)
            .map_err(|_| "the DPoP proof could not be signed")?;
        Ok(signature.as_ref().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_is_a_verifiable_es256_jws_with_the_rfc_9449_claims() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://mcp.example/mcp?x=1#f",
                Some("token"),
                Some("n-1"),
            )
            .unwrap();
        assert!(proof.is_sensitive());
        let text = proof.to_str().unwrap();
        let parts: Vec<&str> = text.split('.').collect();
        assert_eq!(parts.len(), 3);
        let (header, claims) = (decode(parts[0]), decode(parts[1]));
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private member");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        let ath = URL_SAFE_NO_PAD.encode(<sha2::Sha256 as sha2::Digest>::digest(b"token"));
        assert_eq!(claims["ath"], ath.as_str());
        // The signature verifies with the public key in the header.
        let jwk = &header["jwk"];
        let mut point = vec![4u8];
        point.extend(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap());
        point.extend(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap());
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            point,
        );
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let input = format!("{}.{}", parts[0], parts[1]);
        public.verify(input.as_bytes(), &signature).unwrap();
    }

    #[test]
    fn every_proof_has_its_own_jti() {
        let key = DpopKey::generate().unwrap();
        let jti = |_| {
            let proof = key
                .proof("GET", "http://127.0.0.1/mcp", None, None)
                .unwrap();
            decode(proof.to_str().unwrap().split('.').nth(1).unwrap())["jti"].clone()
        };
        let seen: std::collections::HashSet<String> = (0..50)
            .map(jti)
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(seen.len(), 50);
    }
}
