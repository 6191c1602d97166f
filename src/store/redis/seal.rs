//! Sealing values at rest: XChaCha20-Poly1305 (the RustCrypto crate) with
//! a random 192-bit nonce per value and the value's Redis key as
//! associated data, so a sealed value moved to another key does not open.

use std::fmt;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

const NONCE: usize = 24;

/// The application's key for values at rest. `Debug` shows nothing of it.
#[derive(Clone)]
pub struct SealingKey(Key);

/// A value could not be sealed or opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The key is not 32 bytes.
    #[error("a sealing key is 32 bytes")]
    KeyLength,
    /// The value is not one this key sealed for this place (tampered,
    /// another key, another Redis key, or not sealed at all).
    #[error("the value does not open with this key")]
    Open,
}

impl SealingKey {
    /// A key from 32 bytes (from a secrets manager, or a 64-digit hex
    /// variable the application decodes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SealError> {
        if bytes.len() != 32 {
            return Err(SealError::KeyLength);
        }
        Ok(SealingKey(*Key::from_slice(bytes)))
    }

    /// `plaintext` sealed for `place`: the nonce, then the ciphertext.
    pub(crate) fn seal(&self, place: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).expect("the system's random source");
        let cipher = XChaCha20Poly1305::new(&self.0);
        let sealed = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: place,
                },
            )
            .expect("XChaCha20-Poly1305 seals any length Redis can hold");
        let mut out = nonce.to_vec();
        out.extend(sealed);
        out
    }

    /// What `sealed` holds, if this key sealed it for `place`.
    pub(crate) fn open(&self, place: &[u8], sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() < NONCE {
            return Err(SealError::Open);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE);
        XChaCha20Poly1305::new(&self.0)
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: place,
                },
            )
            .map_err(|_| SealError::Open)
    }
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKey").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_opens_only_with_its_key_at_its_place() {
        let key = SealingKey::from_bytes(&[7; 32]).unwrap();
        let sealed = key.seal(b"app:tokens:a", b"canary-token");
        assert!(!sealed.windows(6).any(|w| w == b"canary"));
        assert_eq!(key.open(b"app:tokens:a", &sealed).unwrap(), b"canary-token");
        assert!(key.open(b"app:tokens:b", &sealed).is_err(), "another place");
        let other = SealingKey::from_bytes(&[8; 32]).unwrap();
        assert!(other.open(b"app:tokens:a", &sealed).is_err(), "another key");
        let mut tampered = sealed.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(key.open(b"app:tokens:a", &tampered).is_err());
        assert!(key.open(b"app:tokens:a", b"short").is_err());
        assert!(SealingKey::from_bytes(&[0; 31]).is_err());
        assert_ne!(
            sealed,
            key.seal(b"app:tokens:a", b"canary-token"),
            "a nonce each"
        );
        assert!(!format!("{key:?}").contains('7'));
    }
}
