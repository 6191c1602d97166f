//! Tokens and where they are kept.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// What a token endpoint issued. `Debug` shows only which parts exist;
/// the values never leave through a format string.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    /// Seconds since the Unix epoch at which the access token expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    /// Seconds since the Unix epoch at which this process received them:
    /// with `expires_at`, the lifetime that [`REFRESH_AHEAD`] is a share
    /// of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    issued_at: Option<u64>,
    /// `DPoP` for a token bound to the client's DPoP key (RFC 9449 §5);
    /// absent or `Bearer` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_type: Option<String>,
}

/// A token endpoint's success response (RFC 6749 §5.1).
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default, deserialize_with = "lifetime")]
    expires_in: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    token_type: Option<String>,
}

/// How long before its expiry an access token with a refresh token is
/// refreshed, at most: a tenth of its lifetime when that is shorter (a
/// token that lives 30 s is refreshed 3 s before it expires), 60 s when
/// the lifetime is unknown. Refreshing before the expiry matters with
/// servers that revoke a refresh token once they have seen its access
/// token expire (fastmcp's own provider does): a refresh after a 401 would
/// then cost a new authorization.
pub const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// The latest expiry kept: the last second of the year 9999. Every store
/// (Redis's `EXPIREAT` included) takes it; a later one is this.
pub(crate) const LATEST_EXPIRY: u64 = 253_402_300_799;

/// `expires_in` as servers send it: an integer, an integral float
/// (`3600.0`), a numeric string (`"3600"`, as Azure AD v1 sends it); a
/// fraction is cut, a value beyond `u64` saturates, and anything else
/// (negative, not a number, `null`) means no expiry is known rather than a
/// refused token.
fn lifetime<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    let seconds = match &value {
        serde_json::Value::Number(n) => n.as_u64().map(|s| s as f64).or_else(|| n.as_f64()),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    Ok(seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        // `as` saturates at u64::MAX and cuts a fraction.
        .map(|s| value.as_u64().unwrap_or(s as u64)))
}

impl TokenResponse {
    /// The tokens, keeping `previous`'s refresh token when the server did
    /// not issue a new one.
    pub(crate) fn into_tokens(self, previous: Option<&Tokens>) -> Tokens {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        Tokens {
            access_token: self.access_token,
            refresh_token: self
                .refresh_token
                .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
            scope: self.scope,
            expires_at: self
                .expires_in
                .map(|s| now.saturating_add(s).min(LATEST_EXPIRY)),
            issued_at: Some(now),
            token_type: self.token_type,
        }
    }
}

impl Tokens {
    /// The access token, for the `Authorization` header.
    pub fn access_token(&self) -> &str {
        &self.access_token
    }

    /// The refresh token, when one was issued.
    pub fn refresh_token(&self) -> Option<&str> {
        self.refresh_token.as_deref()
    }

    /// The scope granted, when the server said.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether the access token is bound to the client's DPoP key (the
    /// token endpoint said `token_type: DPoP`): it goes with the `DPoP`
    /// scheme and a proof, never as a bearer token.
    pub fn is_dpop_bound(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }

    /// Whether the access token is known to have expired at `now`; a
    /// token without an expiry is taken as live until a server refuses it.
    pub(crate) fn expired_at(&self, now: SystemTime) -> bool {
        let now = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// Whether the access token expires within [`REFRESH_AHEAD`] (or the
    /// tenth of its lifetime) of `now`, or has expired.
    pub(crate) fn expiring(&self, now: SystemTime) -> bool {
        let Some(expires) = self
            .expires_at
            .and_then(|at| SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(at)))
        else {
            return false;
        };
        let lifetime = self
            .issued_at
            .zip(self.expires_at)
            .and_then(|(issued, at)| at.checked_sub(issued))
            .map(Duration::from_secs);
        let ahead = lifetime.map_or(REFRESH_AHEAD, |l| (l / 10).min(REFRESH_AHEAD));
        expires.checked_sub(ahead).is_none_or(|from| now >= from)
    }

    /// The access token's expiry, in seconds since the Unix epoch.
    pub fn expires_at(&self) -> Option<u64> {
        self.expires_at
    }

    /// This value without its refresh token (after the server refused it).
    pub(crate) fn without_refresh(mut self) -> Self {
        self.refresh_token = None;
        self
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("refresh_token", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .field("dpop_bound", &self.is_dpop_bound())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tenth of the lifetime, at most a minute; a minute when the
    /// lifetime is unknown; never for a token without an expiry.
    #[test]
    fn expiring_is_a_tenth_of_the_lifetime_at_most_a_minute() {
        let at = |secs: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let tokens = |issued: Option<u64>, expires: Option<u64>| Tokens {
            access_token: "a".into(),
            refresh_token: Some("r".into()),
            scope: None,
            expires_at: expires,
            issued_at: issued,
            token_type: None,
        };
        let hour = tokens(Some(1_000), Some(4_600));
        assert!(!hour.expiring(at(4_539)));
        assert!(hour.expiring(at(4_540)));
        let short = tokens(Some(1_000), Some(1_030));
        assert!(!short.expiring(at(1_026)));
        assert!(short.expiring(at(1_027)));
        let unknown = tokens(None, Some(1_000));
        assert!(!unknown.expiring(at(939)));
        assert!(unknown.expiring(at(940)));
        assert!(!tokens(Some(0), None).expiring(at(u32::MAX.into())));
        assert!(!tokens(None, Some(LATEST_EXPIRY)).expiring(at(4_000_000_000)));
    }

    /// Issue 40, item 13: the `expires_in` values real servers send.
    #[test]
    fn expires_in_as_servers_send_it() {
        let read = |value: &str| {
            let text = format!(r#"{{"access_token":"a","expires_in":{value}}}"#);
            let response: TokenResponse = serde_json::from_str(&text).expect(value);
            response.expires_in
        };
        assert_eq!(read("3600"), Some(3600));
        assert_eq!(read("3600.0"), Some(3600));
        assert_eq!(read(r#""3600""#), Some(3600));
        assert_eq!(read(r#"" 3600 ""#), Some(3600));
        assert_eq!(read("1e20"), Some(u64::MAX));
        assert_eq!(read("18446744073709551615"), Some(u64::MAX));
        for nonsense in ["-1", "-0.5", r#""soon""#, "null", "true", "{}", "[]"] {
            assert_eq!(read(nonsense), None, "{nonsense}");
        }
        let response: TokenResponse =
            serde_json::from_str(r#"{"access_token":"a","expires_in":1e20}"#).unwrap();
        assert_eq!(response.into_tokens(None).expires_at(), Some(LATEST_EXPIRY));
    }

    #[test]
    fn debug_shows_no_token() {
        let response: TokenResponse = serde_json::from_str(
            r#"{"access_token":"secret-at","refresh_token":"secret-rt","expires_in":60,"token_type":"Bearer"}"#,
        )
        .unwrap();
        let tokens = response.into_tokens(None);
        let shown = format!("{tokens:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert_eq!(tokens.access_token(), "secret-at");
    }
}
