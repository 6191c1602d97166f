//! Who is calling: the subject of the caller's access token and its
//! issuer. Sessions, and later policy, quotas and audit, are keyed on it,
//! never on a session: a client that opens a new session is still the
//! same principal.

use std::sync::Arc;

/// The caller a request was authenticated as.
///
/// Two principals are the same when their issuer and subject are; their
/// scopes are what this token grants.
#[derive(Clone, Debug)]
pub struct Principal {
    issuer: Arc<str>,
    subject: Arc<str>,
    scopes: Arc<[String]>,
}

impl Principal {
    /// `subject` of `issuer`, granted `scopes`.
    pub fn new(issuer: &str, subject: &str, scopes: Vec<String>) -> Self {
        Principal {
            issuer: issuer.into(),
            subject: subject.into(),
            scopes: scopes.into(),
        }
    }

    /// The issuer that vouches for it.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The token's subject (`sub`).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The scopes this request's token grants.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }
}

impl PartialEq for Principal {
    fn eq(&self, other: &Self) -> bool {
        self.issuer == other.issuer && self.subject == other.subject
    }
}

impl Eq for Principal {}

impl std::hash::Hash for Principal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.issuer.hash(state);
        self.subject.hash(state);
    }
}
