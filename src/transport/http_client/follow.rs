//! Following the default client's redirects: which ones is
//! [`RedirectPolicy`]'s business (redirect.rs); this makes the hops.
//!
//! A hop repeats the request (307 and 308 keep method and body), so what a
//! hop needs is kept before each request goes: method, URI, version,
//! headers, body (a `Bytes` clone). Nothing else is added: the response
//! comes back as it came, with no extension map of the URI it came from,
//! which tower-http's `FollowRedirect` put on every response, redirected or
//! not.

use bytes::Bytes;
use http::header::LOCATION;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::Full;
use tower::ServiceExt;

use super::super::error::BoxError;
use super::super::redirect::RedirectPolicy;
use super::{HttpBody, Inner};

/// Sends `request` through `inner`, following redirects as `policy` says.
pub(super) async fn send(
    inner: Inner,
    policy: &RedirectPolicy,
    mut request: Request<Full<Bytes>>,
) -> Result<Response<HttpBody>, BoxError> {
    let mut follow = policy.for_request();
    follow.on_request(&mut request);
    loop {
        let method = request.method().clone();
        let uri = request.uri().clone();
        let version = request.version();
        let headers = request.headers().clone();
        let body = request.body().clone();
        let response = inner.clone().oneshot(request).await?;
        let status = response.status();
        if !is_redirect(status) {
            return Ok(response);
        }
        // A redirect without a usable location is the status it is.
        let Some(location) = response
            .headers()
            .get(LOCATION)
            .and_then(|value| resolve(value.to_str().ok()?, &uri))
        else {
            return Ok(response);
        };
        follow.decide(status, &uri, &location)?;
        let mut next = Request::new(body);
        *next.method_mut() = method;
        *next.uri_mut() = location;
        *next.version_mut() = version;
        *next.headers_mut() = headers;
        follow.on_request(&mut next);
        request = next;
    }
}

/// The statuses that carry a `Location` to go to.
fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// `location` (absolute, or relative to `base`) as a URI.
fn resolve(location: &str, base: &Uri) -> Option<Uri> {
    let base = url::Url::parse(&base.to_string()).ok()?;
    let resolved = base.join(location).ok()?;
    Uri::try_from(String::from(resolved)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_against_the_request() {
        let base: Uri = "http://a.test:8080/mcp/v1?x=1".parse().unwrap();
        let cases = [
            ("/mcp/", "http://a.test:8080/mcp/"),
            ("v2", "http://a.test:8080/mcp/v2"),
            ("https://b.test/mcp", "https://b.test/mcp"),
            ("//c.test/p", "http://c.test/p"),
        ];
        for (location, want) in cases {
            assert_eq!(resolve(location, &base).unwrap().to_string(), want);
        }
        assert!(resolve("http://[bad", &base).is_none());
    }
}
