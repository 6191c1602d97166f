//! A session that started from a remembered `server/discover` has not
//! heard from the server yet: its first answer confirms the version, or
//! refuses it, and then the era cache forgets the server and the session
//! ends with [`VersionError::RememberedRefused`](crate::error::VersionError::RememberedRefused)
//! (what counts as a refusal is `Session::judge_remembered`, beside the
//! cache).

use super::Answer;
use crate::error::Error;
use crate::session::Session;

/// The answer stands, or the remembered version was refused.
pub(super) async fn judge(session: &Session, answer: &Answer) -> Result<(), Error> {
    match session.judge_remembered(answer).await {
        Some(refused) => Err(refused),
        None => Ok(()),
    }
}
