//! The vocabulary every layer shares: whether a failure allows a fresh
//! attempt ([`Decision`], taken by the classifier) and the trait that lets the
//! recovery layer read it off an error ([`Decided`]). Why attempts stopped
//! (`Stop`) sits with `Failure`, which every layer reads. It lives apart
//! from the layers so that none of them depends on another.

use crate::Failure;

/// Whether a failure allows a fresh attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// A fresh attempt may follow.
    Eligible,
    /// The policy's rules refuse a fresh attempt because of this failure.
    Ineligible(Failure),
    /// The application vetoed a fresh attempt because of this failure.
    Vetoed(Failure),
}

/// An error that carries a recovery decision (a
/// `Classified` error does).
#[diagnostic::on_unimplemented(
    message = "`{Self}` carries no recovery decision: the service under `FreshSessionRecoveryLayer` must fail with `Classified` errors",
    label = "not a `Classified` error",
    note = "add `.layer(FailureClassifierLayer::new())` under `.layer(FreshSessionRecoveryLayer::new(..))`"
)]
pub trait Decided {
    /// The decision taken on this error.
    fn decision(&self) -> &Decision;
}
