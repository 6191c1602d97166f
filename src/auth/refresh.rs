//! Before any new authorization: the tokens another holder stored, else one
//! refresh for every holder of the store.
//!
//! Holders are the sessions of one `Authorization`, the `Authorization`s
//! of one process that share a store, and the replicas that share a store
//! backend. When they are refused together (their access token expired
//! for all at once), exactly one of them refreshes, under the store's
//! refresh lease, and the others wait for the tokens it stores: with
//! refresh-token rotation, two refreshes with one refresh token would look
//! like theft to the authorization server and cost the whole grant. The
//! new tokens go in with a compare-and-set, so a holder whose lease ran out
//! mid-refresh cannot overwrite newer ones. A store that fails is passed
//! over (one warning): this process refreshes with what it holds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::endpoint::{identity, TokenEndpoint};
use super::http::AuthHttp;
use super::store::{passed_over, Lease};
use super::token_key::{LeaseKind, TokenKey};
use super::tokens::Tokens;
use super::{AuthError, Authorization, Authorized};
use crate::auth::discovery::Discovered;

/// How often a holder waiting for another's refresh looks at the store.
const WAIT_STEP: Duration = Duration::from_millis(25);

/// The outcome: tokens now in force, or `None` when only a new
/// authorization can help (nothing to refresh, or the refresh was refused).
pub(super) async fn before_new(
    auth: &Authorization,
    key: &TokenKey,
    token: &TokenEndpoint<'_>,
    http: &AuthHttp,
    discovered: &Discovered,
) -> Result<Option<Authorized>, AuthError> {
    let store = &*auth.settings.store;
    let refused = auth.state.tokens();
    // A refresh is one request under the stage's limit: a lease a little
    // longer covers it, and frees itself if its holder died.
    let lasting = http.timeout + Duration::from_secs(1);
    let mut shared = true;
    loop {
        let stored = if shared {
            match store.load(key).await {
                Ok(stored) => stored,
                Err(_) => {
                    shared = false;
                    passed_over("read");
                    None
                }
            }
        } else {
            None
        };
        if let Some(newer) = stored
            .as_ref()
            .filter(|s| usable_instead_of(s, refused.as_ref()))
        {
            auth.state.set_tokens(Some(newer.clone()));
            return Ok(Some(Authorized::Refreshed));
        }
        let Some(base) = stored.or_else(|| refused.clone()) else {
            return Ok(None);
        };
        let Some(refresh_token) = base.refresh_token().map(str::to_owned) else {
            return Ok(None);
        };
        let lease = if shared {
            match store.lease(key, LeaseKind::Refresh, lasting).await {
                Ok(Some(lease)) => Some(lease),
                Ok(None) => {
                    // Another holder is refreshing: its tokens, or its
                    // lease's end, then look again.
                    wait_for_change(auth, key, &base, lasting).await;
                    continue;
                }
                Err(_) => {
                    passed_over("lease");
                    None
                }
            }
        } else {
            None
        };
        let outcome = refresh(auth, key, token, http, discovered, &base, &refresh_token).await;
        if let Some(lease) = &lease {
            release(auth, key, lease).await;
        }
        return outcome;
    }
}

/// Whether `stored` should be used instead of the tokens this holder was
/// refused with: another access token, not known to have expired.
fn usable_instead_of(stored: &Tokens, refused: Option<&Tokens>) -> bool {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    refused.is_none_or(|r| r.access_token() != stored.access_token()) && !stored.expired_at(now)
}

/// Waits until the stored tokens are no longer `base`, or `lasting` has
/// passed (the lease holder may have died). A store that fails meanwhile
/// (slow, or gone) is looked at again until then: refreshing with `base`
/// while its holder may be refreshing too would cost the grant.
async fn wait_for_change(auth: &Authorization, key: &TokenKey, base: &Tokens, lasting: Duration) {
    let until = tokio::time::Instant::now() + lasting;
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(WAIT_STEP).await;
        match auth.settings.store.load(key).await {
            Ok(Some(stored)) if stored.access_token() != base.access_token() => return,
            Ok(_) | Err(_) => {}
        }
    }
}

/// One refresh with `refresh_token`; the new tokens stored only over the
/// ones it started from.
async fn refresh(
    auth: &Authorization,
    key: &TokenKey,
    token: &TokenEndpoint<'_>,
    http: &AuthHttp,
    discovered: &Discovered,
    base: &Tokens,
    refresh_token: &str,
) -> Result<Option<Authorized>, AuthError> {
    let store = &*auth.settings.store;
    let client = identity(auth, http, discovered).await?;
    let form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("resource", key.resource()),
    ];
    let (tokens, outcome) = match token.request(form, &client).await {
        Ok(response) => (
            response.into_tokens(Some(base)),
            Some(Authorized::Refreshed),
        ),
        // Refused once: forgotten, and a new authorization follows.
        Err(_) => (base.clone().without_refresh(), None),
    };
    // Written even when the store failed before: a store that keeps
    // failed writes (the Redis one) writes them back once it answers.
    match store.replace(key, Some(refresh_token), &tokens).await {
        // Newer tokens are there: ours work too, but do not replace them.
        Ok(_) => {}
        Err(_) => passed_over("write"),
    }
    auth.state.set_tokens(outcome.map(|_| tokens));
    Ok(outcome)
}

async fn release(auth: &Authorization, key: &TokenKey, lease: &Lease) {
    if auth
        .settings
        .store
        .release(key, LeaseKind::Refresh, lease)
        .await
        .is_err()
    {
        passed_over("release");
    }
}
