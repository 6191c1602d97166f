//! What [`ConnectRequest::validate`] checks before any I/O.

use mcp_connect_layers::Establishment as _;

use super::{ConnectRequest, Target, TransportMode};
use crate::error::{ConfigError, Error};

impl ConnectRequest {
    /// Checks what can be checked before any I/O: the version policy, that
    /// the transport fits the target, a non-empty stdio command and non-zero
    /// limits. Every establishment runs this first; a command-line tool can
    /// run it to report a usage error before connecting.
    pub fn validate(&self) -> Result<(), Error> {
        self.settings.versions.validate().map_err(Error::config)?;
        let fits = matches!(
            (&*self.target, self.settings.mode),
            (_, TransportMode::Auto)
                | (
                    Target::Http { .. },
                    TransportMode::StreamableHttp | TransportMode::Sse
                )
                | (Target::Stdio(_), TransportMode::Stdio)
        );
        if !fits {
            return Err(Error::config(ConfigError::TransportMismatch {
                // Never `auto` here: auto fits every target.
                transport: self.label(),
            }));
        }
        match &*self.target {
            Target::Stdio(command) if command.program().is_empty() => {
                return Err(Error::config(ConfigError::EmptyCommand));
            }
            Target::Http {
                url,
                socket: Some(_),
                ..
            } if url.scheme_str() != Some("http") => {
                return Err(Error::config(ConfigError::SocketNeedsHttp));
            }
            _ => {}
        }
        let limits = &self.settings.limits;
        for (name, value) in [
            ("probe_timeout", limits.probe_timeout),
            ("handshake_timeout", limits.handshake_timeout),
            ("request_timeout", limits.request_timeout),
        ] {
            if value.is_zero() {
                return Err(Error::config(ConfigError::ZeroLimit { limit: name }));
            }
        }
        if limits.max_message_bytes == 0 {
            return Err(Error::config(ConfigError::ZeroLimit {
                limit: "max_message_bytes",
            }));
        }
        Ok(())
    }
}
