//! Where a server is: an HTTP endpoint with its headers, or a command to
//! start. Printing a target never shows a header value, a query or userinfo.

use std::fmt;

use http::header::HeaderMap;
use http::Uri;

use super::redact::SafeUri;
use super::StdioCommand;

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
        /// The Unix socket the HTTP goes over, when it does not go to the
        /// URL's host ([`ConnectRequest::with_unix_socket`](crate::ConnectRequest::with_unix_socket)).
        socket: Option<std::path::PathBuf>,
    },
    /// A server started as a child process.
    Stdio(StdioCommand),
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Http {
                url,
                headers,
                socket,
            } => f
                .debug_struct("Http")
                .field("url", &SafeUri(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("socket", socket)
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
    /// Who this server is, as a key that reveals no secret: for HTTP the
    /// scheme, host, port and path in clear, then a 128-bit SHA-256
    /// fingerprint of everything else that can select a server or a
    /// principal (the whole URL with its userinfo and query, and every
    /// header but `Authorization`, which the authorization context of a
    /// private result holds instead); for stdio a fingerprint of the
    /// program, arguments, environment and working directory
    /// ([`StdioCommand::fingerprint`]). Every cache keys its entries by it,
    /// so a hosted service's `?api_key=` or a second token in `env` is a
    /// second server, never sharing anything with the first.
    pub fn identity(&self) -> String {
        match self {
            Target::Http {
                url,
                headers,
                socket,
            } => {
                use sha2::{Digest, Sha256};
                let mut hash = Sha256::new();
                hash.update(b"mcp-connect http server v2\0");
                let whole = url.to_string();
                hash.update((whole.len() as u64).to_be_bytes());
                hash.update(whole.as_bytes());
                // `Authorization` names the principal, not the server: it is
                // the authorization context's (with the OAuth token), so a
                // result the server marks public is shared across it.
                let mut pairs: Vec<(&str, &[u8])> = headers
                    .iter()
                    .filter(|(name, _)| **name != http::header::AUTHORIZATION)
                    .map(|(name, value)| (name.as_str(), value.as_bytes()))
                    .collect();
                pairs.sort_unstable();
                for (name, value) in pairs {
                    hash.update((name.len() as u64).to_be_bytes());
                    hash.update(name.as_bytes());
                    hash.update((value.len() as u64).to_be_bytes());
                    hash.update(value);
                }
                if let Some(socket) = socket {
                    use std::os::unix::ffi::OsStrExt;
                    let socket = socket.as_os_str().as_bytes();
                    hash.update(b"unix socket\0");
                    hash.update((socket.len() as u64).to_be_bytes());
                    hash.update(socket);
                }
                let digest = crate::transport::redact::hex(&hash.finalize()[..16]);
                format!("http {} {digest}", SafeUri(url))
            }
            Target::Stdio(command) => format!("stdio {}", command.fingerprint()),
        }
    }

    /// The headers every HTTP request carries (none for stdio).
    pub(crate) fn headers(&self) -> Option<&http::HeaderMap> {
        match self {
            Target::Http { headers, .. } => Some(headers),
            Target::Stdio(_) => None,
        }
    }

    /// The Unix socket of an HTTP target that goes over one.
    pub fn unix_socket(&self) -> Option<&std::path::Path> {
        match self {
            Target::Http { socket, .. } => socket.as_deref(),
            Target::Stdio(_) => None,
        }
    }

    /// The URL of an HTTP target.
    pub(crate) fn http_url(&self) -> Option<&Uri> {
        match self {
            Target::Http { url, .. } => Some(url),
            Target::Stdio(_) => None,
        }
    }

    /// The program of a stdio target, when it is text.
    pub(crate) fn program(&self) -> Option<&str> {
        match self {
            Target::Stdio(command) => command.program().to_str(),
            Target::Http { .. } => None,
        }
    }
}
