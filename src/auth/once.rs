//! A person's authorization once for every holder of the store.
//!
//! When a new authorization code flow is needed, the holder that takes the
//! store's authorization lease asks the person; the others (replicas of one
//! service, sessions of one process) wait for the tokens it stores, within
//! the person's own limit, and then use them. None starts a second browser
//! flow; one that waited the person's whole limit fails with
//! [`AuthError::PendingElsewhere`]. A store that fails is passed over: this
//! holder asks the person itself.

use std::time::Duration;

use mcp_connect_layers::deadline::DeadlinePause;

use super::{AuthError, Authorization};
use crate::store::Lease;
use crate::store::Tokens;
use crate::store::{LeaseKind, TokenKey};

/// How often a holder waiting for another's person looks at the store.
const WAIT_STEP: Duration = Duration::from_millis(100);

/// Whose turn it is to ask the person.
pub(super) enum Turn {
    /// This holder's, under this lease (none when the store failed).
    Mine(Option<Lease>),
    /// Another holder's, whose tokens are these.
    Theirs(Tokens),
}

/// Takes the authorization lease of `key`, or waits for the tokens
/// its holder stores.
pub(super) async fn turn(
    auth: &Authorization,
    key: &TokenKey,
    pause: Option<&DeadlinePause>,
) -> Result<Turn, AuthError> {
    let store = &*auth.settings.store;
    let limit = auth.settings.person_timeout;
    let Some(before) = auth.store_said("read", store.load(key).await)? else {
        return Ok(Turn::Mine(None));
    };
    let before = before.map(|t| t.access_token().to_owned());
    let lasting = limit + Duration::from_secs(5);
    let lease = store.lease(key, LeaseKind::Authorization, lasting).await;
    match auth.store_said("lease", lease)? {
        Some(Some(lease)) => {
            // Another holder's person may have finished, and its lease
            // been given back, since the read above: their tokens, then.
            let now = auth
                .read_holding(key, LeaseKind::Authorization, &lease)
                .await?;
            return match now.filter(|t| Some(t.access_token()) != before.as_deref()) {
                Some(theirs) => {
                    done(auth, key, Some(lease)).await;
                    Ok(Turn::Theirs(theirs))
                }
                None => Ok(Turn::Mine(Some(lease))),
            };
        }
        Some(None) => {}
        None => return Ok(Turn::Mine(None)),
    }
    // Another holder is asking the person: their wait, not the machine's,
    // so the establishment deadline does not count it either.
    let _paused = pause.map(DeadlinePause::pause);
    let until = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(WAIT_STEP).await;
        if let Some(Some(stored)) = auth.store_said("read", store.load(key).await)? {
            if Some(stored.access_token()) != before.as_deref() {
                return Ok(Turn::Theirs(stored));
            }
        }
    }
    Err(AuthError::PendingElsewhere)
}

/// Gives the authorization lease back.
pub(super) async fn done(auth: &Authorization, key: &TokenKey, lease: Option<Lease>) {
    if let Some(lease) = lease {
        auth.give_back(key, LeaseKind::Authorization, &lease).await;
    }
}
