//! Where a server is: an HTTP endpoint with its headers, or a command to
//! start. Printing a target never shows a header value, a query or userinfo.

use std::fmt;

use http::header::HeaderMap;
use http::Uri;

use crate::redact::SafeUri;
use crate::transport::StdioCommand;

/// Where the server is.
#[derive(Clone)]
#[non_exhaustive]
pub enum Target {
    /// An HTTP endpoint, with headers sent on every request.
    Http {
        /// The endpoint URL.
        url: Uri,
        /// Extra headers (authorization and the like). Never printed.
        headers: HeaderMap,
    },
    /// A server started as a child process.
    Stdio(StdioCommand),
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &SafeUri(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
            Target::Stdio(command) => f.debug_tuple("Stdio").field(command).finish(),
        }
    }
}

impl fmt::Display for Target {
    /// The URL without userinfo, query or fragment, or the stdio program.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Http { url, .. } => SafeUri(url).fmt(f),
            Target::Stdio(command) => f.write_str(&command.program().to_string_lossy()),
        }
    }
}

impl Target {
    /// The headers every HTTP request carries (none for stdio).
    pub(crate) fn headers(&self) -> Option<&http::HeaderMap> {
        match self {
            Target::Http { headers, .. } => Some(headers),
            Target::Stdio(_) => None,
        }
    }

    /// The URL of an HTTP target.
    #[cfg(feature = "otel")]
    pub(crate) fn http_url(&self) -> Option<&http::Uri> {
        match self {
            Target::Http { url, .. } => Some(url),
            _ => None,
        }
    }
}
