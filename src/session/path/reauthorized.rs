//! Authorization on a session's requests: the token refreshed ahead of its
//! expiry, and a request the server refused before running it (a 401, or a
//! 403 `insufficient_scope`) sent once more after authorizing again, by the
//! rule the establishment follows too ([`crate::auth::Reauthorization`]).
//! A session without authorization has nothing to do here.
//!
//! Like `tower::retry::Policy`, the step hands back the work to await
//! (the refresh, the authorization) instead of awaiting it itself, and
//! that work's future is made in the `await` that runs it. An
//! authorization flow is the deepest and the largest future a request can
//! hold: one more `async` level around it cost an application awaiting a
//! group call 8 levels of the compiler's recursion limit, and a future
//! made before the `await` is held twice (the request's future grew from
//! 4.9 to 14.7 KB, and moving it cost 28,000 more instructions per call
//! under callgrind, which counts the bytes a large copy moves).

use std::future::Future;

use super::Answer;
use crate::auth::{AuthError, Authorized, Authorizer, Reauthorization};
use crate::error::{Error, TransportError};
use crate::session::Session;

/// One exchange's authorizing so far.
#[derive(Default)]
pub(super) struct Reauthorized(Reauthorization);

impl Reauthorized {
    /// The refresh of the token ahead of its expiry, when the session
    /// authorizes.
    pub(super) fn refreshing(session: &Session) -> Option<Refreshing<'_>> {
        session.auth.as_deref().map(Refreshing)
    }

    /// A refresh that cannot be had now (the authorization server slow or
    /// down) leaves the token in force, which works until it expires; a
    /// store that cannot work as configured is the answer.
    pub(super) fn refreshed(outcome: Result<(), AuthError>) -> Result<(), Error> {
        match outcome {
            Err(error @ AuthError::Store(_)) => Err(Error::authorization(error)),
            _ => Ok(()),
        }
    }

    /// The authorizing that may cure the refusal in `answer`, if any.
    pub(super) fn judge<'a>(
        &mut self,
        session: &'a Session,
        answer: &Answer,
    ) -> Result<Option<Authorizing<'a>>, Error> {
        let Some(auth) = &session.auth else {
            return Ok(None);
        };
        let permit = self.0.permit(auth, refusal_status(answer));
        let allow_new = permit.map_err(Error::authorization)?;
        Ok(allow_new.map(|allow_new| Authorizing { auth, allow_new }))
    }

    /// Records the authorization [`judge`](Self::judge) asked for.
    pub(super) fn record(&mut self, outcome: Result<Authorized, AuthError>) -> Result<(), Error> {
        self.0.record(outcome.map_err(Error::authorization)?);
        Ok(())
    }
}

/// A refresh ahead of expiry [`Reauthorized::refreshing`] asked for.
pub(super) struct Refreshing<'a>(&'a Authorizer);

impl<'a> Refreshing<'a> {
    /// The refresh, made where it is awaited (as [`Authorizing::run`]).
    pub(super) fn run(self) -> impl Future<Output = Result<(), AuthError>> + Send + 'a {
        self.0.refresh_ahead()
    }
}

/// An authorization [`Reauthorized::judge`] asked for.
pub(super) struct Authorizing<'a> {
    auth: &'a Authorizer,
    /// Whether it may ask for a new grant, not only refresh.
    allow_new: bool,
}

impl<'a> Authorizing<'a> {
    /// The authorization, made where it is awaited so that the request's
    /// future holds it once (it is the largest future a request holds).
    pub(super) fn run(self) -> impl Future<Output = Result<Authorized, AuthError>> + Send + 'a {
        self.auth.run(None, self.allow_new)
    }
}

/// The HTTP status of a refusal, which may be one authorizing cures.
fn refusal_status(answer: &Answer) -> Option<u16> {
    match answer {
        Err(TransportError::Status { status, .. }) => Some(*status),
        Ok(Err(rpc)) => rpc.http_status(),
        _ => None,
    }
}
