//! Which HTTP redirects the default client follows.
//!
//! Frameworks answer `/mcp` with a 307 to `/mcp/`, load balancers move a
//! service with a 308. Following those is safe when the method, the body
//! and the origin stay the same; anything else is where credentials leak
//! or a POST silently becomes a GET. So the default follows 307 and 308 on
//! the same origin (scheme, host and port), keeping method and body, at
//! most 3 hops, and refuses the rest with a typed [`RedirectRefused`] that
//! names the status and the reason, never the `Location` (a URL the server chose, which
//! may carry anything). Hops are ordinary requests: the establishment's
//! deadline covers them.
//!
//! Credentials never cross an origin, whatever the policy allows: a hop to
//! another origin (only ever one the application listed) goes without
//! `Authorization`, `Proxy-Authorization`, `Cookie` and every header the
//! application marked sensitive.
//!
//! The hops are made by the default client (http_client/follow.rs), not by
//! tower-http's `FollowRedirect`: that one stops by returning the redirect
//! response (which a transport could only read as "unexpected status"),
//! knows only the standard credential headers, and costs every request
//! that is never redirected an extension map on its response; here a
//! refused hop is a typed [`RedirectRefused`] and a response comes back as
//! it came.

use super::origin::Origin;

use http::{header, Request, StatusCode, Uri};

use super::error::{RedirectReason, RedirectRefused};

/// Which redirects the default HTTP client follows (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectPolicy {
    max_hops: usize,
    /// Other origins a hop may go to, as `scheme://host:port`.
    allowed: Vec<Origin>,
}

impl Default for RedirectPolicy {
    fn default() -> Self {
        RedirectPolicy {
            max_hops: 3,
            allowed: Vec::new(),
        }
    }
}

impl RedirectPolicy {
    /// The default: 307 and 308 on the same origin, at most 3 hops.
    pub fn new() -> Self {
        Self::default()
    }

    /// Never follows: a redirect reaches the transport as the HTTP status
    /// it is (`TransportError::Status`, classified `HttpStatus`), and a
    /// caller of the client sees the response itself.
    pub fn none() -> Self {
        RedirectPolicy {
            max_hops: 0,
            allowed: Vec::new(),
        }
    }

    /// At most `hops` hops per request (0 is [`none`](Self::none)).
    #[must_use]
    pub fn with_max_hops(mut self, hops: usize) -> Self {
        self.max_hops = hops;
        self
    }

    /// Also follows 307 and 308 to `origin` (`https://host[:port]`; a path
    /// is ignored). Credentials still never go there.
    #[must_use]
    pub fn allowing(mut self, origin: &Uri) -> Self {
        if let Some(origin) = Origin::of(origin) {
            self.allowed.push(origin);
        }
        self
    }

    /// The most hops followed per request.
    pub fn max_hops(&self) -> usize {
        self.max_hops
    }

    /// The policy of one request as it is followed.
    pub(crate) fn for_request(&self) -> Follow<'_> {
        Follow {
            policy: self,
            hops: 0,
            first: None,
        }
    }
}

/// The policy of one request as it is followed.
#[derive(Debug)]
pub(crate) struct Follow<'a> {
    policy: &'a RedirectPolicy,
    hops: usize,
    /// The first request's origin, for the credentials rule.
    first: Option<Origin>,
}

impl Follow<'_> {
    /// Whether the `status` answer to a request for `previous` is followed
    /// to `location` (already resolved against `previous`); counts the hop.
    pub(crate) fn decide(
        &mut self,
        status: StatusCode,
        previous: &Uri,
        location: &Uri,
    ) -> Result<(), RedirectRefused> {
        let refused = |reason| RedirectRefused {
            status: status.as_u16(),
            reason,
        };
        if !matches!(
            status,
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        ) {
            return Err(refused(RedirectReason::ChangesMethod));
        }
        if self.hops >= self.policy.max_hops {
            return Err(refused(RedirectReason::TooMany));
        }
        // A location without scheme or host is no origin of ours.
        let (Some(from), Some(to)) = (Origin::of(previous), Origin::of(location)) else {
            return Err(refused(RedirectReason::OtherOrigin));
        };
        if !from.same(&to) && !self.policy.allowed.iter().any(|o| o.same(&to)) {
            return Err(refused(RedirectReason::OtherOrigin));
        }
        self.hops += 1;
        Ok(())
    }

    /// Called on every request before it is sent, the first included: a
    /// request to an origin other than the first goes without credentials.
    pub(crate) fn on_request<B>(&mut self, request: &mut Request<B>) {
        let Some(origin) = Origin::of(request.uri()) else {
            return;
        };
        match &self.first {
            None => self.first = Some(origin),
            Some(first) if !first.same(&origin) => {
                let headers = request.headers_mut();
                for name in [
                    header::AUTHORIZATION,
                    header::PROXY_AUTHORIZATION,
                    header::COOKIE,
                ] {
                    headers.remove(name);
                }
                let sensitive: Vec<_> = headers
                    .iter()
                    .filter(|(_, value)| value.is_sensitive())
                    .map(|(name, _)| name.clone())
                    .collect();
                for name in sensitive {
                    headers.remove(name);
                }
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(uri: &str) -> Origin {
        Origin::of(&uri.parse().unwrap()).unwrap()
    }

    #[test]
    fn origins_compare_by_scheme_host_and_port() {
        assert!(origin("http://Example.test/mcp").same(&origin("http://example.test:80/other")));
        assert!(origin("https://a.test").same(&origin("https://a.test:443/")));
        assert!(!origin("http://a.test").same(&origin("https://a.test")));
        assert!(!origin("http://a.test:8080").same(&origin("http://a.test")));
        assert!(!origin("http://a.test").same(&origin("http://b.test")));
        let shown = format!("{:?}", origin("https://secret-host.test:8443/"));
        assert!(!shown.contains("secret-host"), "{shown}");
        let refused = RedirectRefused {
            status: 307,
            reason: RedirectReason::OtherOrigin,
        };
        assert_eq!(
            refused.to_string(),
            "HTTP 307, not followed: to another origin"
        );
    }
}
