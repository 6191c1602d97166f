//! Which reader a config file needs: JSON (with JSONC), Codex's TOML, or
//! the draft standard's strict JSON.

use std::path::Path;

/// How a config file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// JSON or JSONC: `mcpServers`, `servers`, `mcp.servers`.
    Json,
    /// Codex's `config.toml`: `[mcp_servers.NAME]`.
    Toml,
    /// The draft standard `mcp.json` (SEP-2633), read strictly: `type`
    /// required, no field of the other transport, standard names. Never
    /// guessed from a path (Cursor's `mcp.json` is not the standard).
    Standard,
}

impl Format {
    /// TOML for a path ending in `.toml`, JSON for any other.
    pub fn of_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(extension) if extension.eq_ignore_ascii_case("toml") => Format::Toml,
            _ => Format::Json,
        }
    }
}
