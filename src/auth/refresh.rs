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
//!
//! The same runs ahead of the expiry (`flow::refresh_ahead`, before each
//! request of a session): tokens within [`REFRESH_AHEAD`](super::REFRESH_AHEAD)
//! of their expiry are never taken from the store as they are, and are
//! refreshed once for all holders before a server sees them expire.

use std::time::{Duration, SystemTime};

use super::endpoint::{identity, TokenEndpoint};
use super::http::AuthHttp;
use super::{AuthError, Authorization, Authorized};
use crate::auth::discovery::Discovered;
use crate::store::Tokens;
use crate::store::{LeaseKind, TokenKey};

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
            match auth.store_said("read", store.load(key).await)? {
                Some(stored) => stored,
                None => {
                    shared = false;
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
            match auth.store_said("lease", store.lease(key, LeaseKind::Refresh, lasting).await)? {
                Some(Some(lease)) => {
                    // Another holder may have stored its tokens and given
                    // the lease back between the read above and this
                    // lease: refreshing with `base` now would reuse a
                    // rotated refresh token. Look once more, holding it.
                    let now = auth.read_holding(key, LeaseKind::Refresh, &lease).await?;
                    if now.is_some_and(|s| s.access_token() != base.access_token()) {
                        auth.give_back(key, LeaseKind::Refresh, &lease).await;
                        continue;
                    }
                    Some(lease)
                }
                Some(None) => {
                    // Another holder is refreshing: its tokens, or its
                    // lease's end, then look again.
                    wait_for_change(auth, key, &base, lasting).await;
                    continue;
                }
                None => None,
            }
        } else {
            None
        };
        let outcome = refresh(auth, key, token, http, discovered, &base, &refresh_token).await;
        if let Some(lease) = &lease {
            auth.give_back(key, LeaseKind::Refresh, lease).await;
        }
        return outcome;
    }
}

/// Whether `stored` should be used instead of the tokens this holder was
/// refused with (or is refreshing ahead of their expiry): another access
/// token, not expiring (see [`REFRESH_AHEAD`](super::REFRESH_AHEAD)).
fn usable_instead_of(stored: &Tokens, refused: Option<&Tokens>) -> bool {
    refused.is_none_or(|r| r.access_token() != stored.access_token())
        && !stored.expiring(SystemTime::now())
}

/// Waits until the stored tokens are no longer `base`, or `lasting` has
/// passed (the lease holder may have died). A store that fails meanwhile
/// (slow, or gone) is looked at again until then: refreshing with `base`
/// while its holder may be refreshing too would cost the grant.
async fn wait_for_change(auth: &Authorization, key: &TokenKey, base: &Tokens, lasting: Duration) {
    let until = tokio::time::Instant::now() + lasting;
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(WAIT_STEP).await;
        let stored = auth.store_said("read", auth.settings.store.load(key).await);
        if stored
            .ok()
            .flatten()
            .flatten()
            .is_some_and(|s| s.access_token() != base.access_token())
        {
            return;
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
    // Refused (newer tokens are there), ours work too: they stay here.
    let _ = auth.store_said(
        "write",
        store.replace(key, Some(refresh_token), &tokens).await,
    );
    auth.state.set_tokens(outcome.map(|_| tokens));
    Ok(outcome)
}
