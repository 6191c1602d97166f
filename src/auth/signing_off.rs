//! Without the `signing` feature no key is held here: a client assertion
//! key cannot be made, so an authorization never has one. The type keeps
//! the name the token requests read.

/// Cannot be made without the `signing` feature.
#[derive(Clone, Debug)]
pub(crate) enum SigningKey {}

impl SigningKey {
    pub(crate) fn assertion(&self, _: &str, _: &str) -> Option<String> {
        match *self {}
    }
}
