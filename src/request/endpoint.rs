//! Turning the caller's URL into an HTTP target: the checks, userinfo
//! moved into a sensitive Basic `Authorization` header, and the headers a
//! caller may not set.

use std::sync::Arc;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Uri;

use super::ConnectRequest;
use crate::error::{ConfigError, Error};
use crate::request::Target;

impl ConnectRequest {
    /// Reaches this HTTP server over the Unix socket at `path` instead of
    /// the URL's host, as curl's `--unix-socket` (the URL still gives the
    /// path and `Host`; it must be `http://`): the same transports, eras,
    /// authorization and policies. The socket is part of the server's
    /// [`identity`](crate::request::Target::identity), so every cache keys
    /// by it. Sets the request's HTTP client to
    /// `HttpClient::builder().unix_socket(path).build()`; for other client
    /// settings (redirects, a counter) pass your own built with
    /// [`HttpClientBuilder::unix_socket`](crate::transport::HttpClientBuilder::unix_socket)
    /// to [`with_http_client`](Self::with_http_client) afterwards. A stdio
    /// request is left as it is.
    #[must_use]
    pub fn with_unix_socket(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        let path = path.into();
        let Target::Http { socket, .. } = Arc::make_mut(&mut self.target) else {
            return self;
        };
        *socket = Some(path.clone());
        let client = crate::transport::HttpClient::builder()
            .unix_socket(path)
            .build();
        self.with_http_client(client)
    }

    /// This request for another HTTP endpoint of the same server, a replica
    /// (see [`ReplicasLayer`](crate::client::ReplicasLayer)): the
    /// configuration is shared, not copied. Fails as [`http`](Self::http)
    /// does.
    ///
    /// What can authenticate or select the server goes only to its own
    /// origin (scheme, host and port): a replica at the primary's origin
    /// gets its headers, its Unix socket and its authorization; a replica
    /// at another origin gets none of them (a bearer sent there would be
    /// sent to whoever runs it), and no socket (its traffic goes to its own
    /// URL, never to the primary's socket): only what its own URL gives
    /// (userinfo becomes its `Authorization`), reached through the
    /// connector's HTTP client. Give such a replica its own credentials
    /// with [`with_header`](Self::with_header) or
    /// [`with_authorization`](Self::with_authorization) on what this returns.
    pub fn for_replica(&self, url: &str) -> Result<Self, Error> {
        let (url, own) = http_parts(url)?;
        let primary = match &*self.target {
            Target::Http {
                url: primary,
                headers,
                socket,
            } => Some((primary, headers, socket)),
            Target::Stdio(_) => None,
        };
        let mut request = self.clone();
        let (mut headers, socket) = match primary {
            Some((primary, headers, socket))
                if crate::transport::origin::same_origin(primary, &url) =>
            {
                (headers.clone(), socket.clone())
            }
            // Another origin: none of the primary's credentials, no socket.
            primary => {
                if primary.is_some_and(|(_, _, socket)| socket.is_some()) {
                    request.settings_mut().http = None;
                }
                request.settings_mut().auth = None;
                (HeaderMap::new(), None)
            }
        };
        headers.extend(own);
        request.target = Arc::new(Target::Http {
            url,
            headers,
            socket,
        });
        Ok(request)
    }
}

/// The target of [`ConnectRequest::http`](super::ConnectRequest::http).
pub(super) fn http(url: &str) -> Result<Target, Error> {
    let (url, headers) = http_parts(url)?;
    Ok(Target::Http {
        url,
        headers,
        socket: None,
    })
}

/// [`http`]'s URL, and the header its userinfo became.
pub(super) fn http_parts(url: &str) -> Result<(Uri, HeaderMap), Error> {
    let url: Uri = url.parse().map_err(|_| Error::config(ConfigError::Url))?;
    match (url.scheme_str(), url.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => {}
        _ => return Err(Error::config(ConfigError::Url)),
    }
    if !crate::request::uri::port_is_valid(&url) {
        return Err(Error::config(ConfigError::Port));
    }
    let mut headers = HeaderMap::new();
    let split = url
        .authority()
        .and_then(|a| a.as_str().rsplit_once('@'))
        .map(|(userinfo, host)| (userinfo.to_owned(), host.to_owned()));
    let url = match split {
        None => url,
        Some((userinfo, host)) => {
            use base64::Engine as _;
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(basic_credentials(&userinfo));
            let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
                .map_err(|_| Error::config(ConfigError::Header))?;
            value.set_sensitive(true);
            headers.insert(http::header::AUTHORIZATION, value);
            let mut parts = url.into_parts();
            parts.authority = Some(host.parse().map_err(|_| Error::config(ConfigError::Url))?);
            Uri::from_parts(parts).map_err(|_| Error::config(ConfigError::Url))?
        }
    };
    Ok((url, headers))
}

/// Headers the caller may not set (see [`ConnectRequest::with_header`]).
pub(super) fn is_reserved(name: &HeaderName) -> bool {
    const RESERVED: &[&str] = &[
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "content-type",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ];
    RESERVED.contains(&name.as_str())
}

/// The `user:password` bytes of HTTP Basic credentials from URL userinfo:
/// split at the first `:` (a user cannot hold one unencoded), each part
/// percent-decoded (RFC 3986 section 3.2.1).
fn basic_credentials(userinfo: &str) -> Vec<u8> {
    use percent_encoding::percent_decode_str;
    let (user, password) = match userinfo.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (userinfo, None),
    };
    let mut credentials: Vec<u8> = percent_decode_str(user).collect();
    credentials.push(b':');
    if let Some(password) = password {
        credentials.extend(percent_decode_str(password));
    }
    credentials
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_at_the_same_origin_keeps_the_headers_and_takes_its_userinfo() {
        let primary = ConnectRequest::http("http://a.example/mcp")
            .unwrap()
            .with_header("x-api-key", "k")
            .unwrap();
        let replica = primary.for_replica("http://u:p@a.example/other").unwrap();
        let Target::Http { url, headers, .. } = replica.target() else {
            panic!("an HTTP target");
        };
        assert_eq!(url.to_string(), "http://a.example/other");
        assert_eq!(headers["x-api-key"], "k");
        assert!(headers.contains_key(http::header::AUTHORIZATION));
        assert!(primary.for_replica("ftp://b.example/").is_err());
    }

    /// Issue 63, item 8: a replica at another origin gets none of the
    /// primary's credentials, nor its socket; one at the same origin gets
    /// them all and shares the configuration.
    #[test]
    fn credentials_and_the_socket_stay_with_their_origin() {
        let primary = ConnectRequest::http("https://a.example/mcp")
            .unwrap()
            .with_header("authorization", "Bearer primary-token")
            .unwrap()
            .with_authorization(crate::auth::Authorization::client_credentials(
                "id", "secret",
            ));
        let same = primary.for_replica("https://A.example:443/other").unwrap();
        let Target::Http { headers, .. } = same.target() else {
            panic!("an HTTP target");
        };
        assert_eq!(headers["authorization"], "Bearer primary-token");
        assert!(std::sync::Arc::ptr_eq(&primary.settings, &same.settings));
        for elsewhere in [
            "https://b.example/mcp",
            "http://a.example/mcp",
            "https://a.example:8443/mcp",
        ] {
            let replica = primary.for_replica(elsewhere).unwrap();
            let Target::Http {
                headers, socket, ..
            } = replica.target()
            else {
                panic!("an HTTP target");
            };
            assert!(headers.is_empty(), "{elsewhere}");
            assert!(socket.is_none());
            assert!(replica.settings.auth.is_none(), "{elsewhere}");
        }
        let local = ConnectRequest::http("http://localhost/mcp")
            .unwrap()
            .with_unix_socket("/run/mcp.sock");
        let Target::Http { socket, .. } = local
            .for_replica("http://localhost/b")
            .unwrap()
            .target()
            .clone()
        else {
            panic!("an HTTP target");
        };
        assert!(socket.is_some(), "the same origin goes over the socket");
        let away = local.for_replica("http://b.example/mcp").unwrap();
        let Target::Http { socket, .. } = away.target() else {
            panic!("an HTTP target");
        };
        assert!(
            socket.is_none() && away.http_client().is_none(),
            "not the primary's socket"
        );
    }
}
