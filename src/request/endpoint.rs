//! Turning the caller's URL into an HTTP target: the checks, userinfo
//! moved into a sensitive Basic `Authorization` header, and the headers a
//! caller may not set.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Uri;

use crate::error::{ConfigError, Error};
use crate::target::Target;

/// The target of [`ConnectRequest::http`](super::ConnectRequest::http).
pub(super) fn http(url: &str) -> Result<Target, Error> {
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
    Ok(Target::Http { url, headers })
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
