//! What every store of this crate shares, whatever it keeps (tokens, what
//! servers speak, responses): the one error a store fails with, and how a
//! failing store is said (once per outage). A neutral home: the token
//! store, the era cache, the response cache and the Redis stores all use
//! it, and it depends on none of them.

mod file;
mod health;

pub(crate) use file::write_private;
pub(crate) use health::StoreHealth;

/// A store failed. The source says why (for [`FileTokenStore`](crate::auth::FileTokenStore), the I/O
/// error; for a Redis store, what Redis or TLS said); never a value.
///
/// Two kinds, told apart by [`is_configuration`](Self::is_configuration):
/// a store that is down or slow fails for a while and is passed over (the
/// process goes on with what it holds), while one that cannot work as
/// configured (a refused login, an ACL that denies a command, an
/// untrusted certificate, a sealing key that opens nothing the fleet
/// wrote) fails until someone changes the configuration, and is reported
/// as such: the token store's fails the authorization
/// ([`AuthError::Store`](crate::auth::AuthError::Store), a configuration
/// failure, never retried).
#[derive(Debug, thiserror::Error)]
#[error("{}", if self.configuration { "the store cannot be used as configured" } else { "the token store failed" })]
pub struct StoreError {
    #[source]
    source: crate::transport::error::BoxError,
    configuration: bool,
}

impl StoreError {
    /// A failure that may pass (the store down, slow, or answering
    /// something unexpected).
    pub fn new(source: impl Into<crate::transport::error::BoxError>) -> Self {
        StoreError {
            source: source.into(),
            configuration: false,
        }
    }

    /// A failure that lasts until the configuration changes.
    pub fn configuration(source: impl Into<crate::transport::error::BoxError>) -> Self {
        StoreError {
            source: source.into(),
            configuration: true,
        }
    }

    /// Whether the store cannot work as configured (see the type's docs).
    pub fn is_configuration(&self) -> bool {
        self.configuration
    }
}

impl health::StoreFailure for StoreError {
    fn is_configuration(&self) -> bool {
        self.configuration
    }
}

impl From<std::io::Error> for StoreError {
    fn from(error: std::io::Error) -> Self {
        StoreError::new(error)
    }
}
