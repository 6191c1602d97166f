//! What an application reads of one server of the file: its name, its
//! request, what the entry says of starting it, and the fields this reader
//! does not know; printed without a secret.

use std::fmt;

use serde_json::{Map, Value};

use super::ServerConfig;
use crate::ConnectRequest;

impl ServerConfig {
    /// The server's name (its key in the file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A request for the server, named after it: add a handler, limits,
    /// authorization or a deadline, then connect it.
    pub fn request(&self) -> ConnectRequest {
        self.request.clone()
    }

    /// A fingerprint of the entry as written, for
    /// [`Server::with_revision`](crate::group::Server::with_revision): a
    /// reload replaces a server whose entry changed in any field.
    pub fn revision(&self) -> [u8; 16] {
        self.revision
    }

    /// Whether the entry is to be started: not `"enabled": false` (Codex,
    /// the draft standard) nor `"disabled": true` (Claude Desktop, Cline).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Whether the entry says `"required": true`: the group's start fails
    /// when this server fails
    /// ([`Server::required`](crate::group::Server::required)).
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// Whether the entry says `"lazy": true`: connect the server on its
    /// first call, not at start ([`Server::lazy`](crate::group::Server::lazy)).
    pub fn is_lazy(&self) -> bool {
        self.lazy
    }

    /// The fields this reader does not know, as written.
    pub fn unknown(&self) -> &Map<String, Value> {
        &self.unknown
    }

    /// The names of the fields this reader does not know.
    pub fn unknown_fields(&self) -> impl Iterator<Item = &str> {
        self.unknown.keys().map(String::as_str)
    }
}

/// The name, whether it is a command or a URL, the transport and the
/// unknown fields' names: never the URL (a variable may put a key in its
/// path), a header or environment value, an argument, or an unknown
/// field's value.
impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = match self.request.target() {
            crate::request::Target::Http { .. } => "url",
            crate::request::Target::Stdio(_) => "command",
        };
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("target", &target)
            .field("mode", &self.request.mode())
            .field("unknown", &self.unknown.keys().collect::<Vec<_>>())
            .finish()
    }
}
