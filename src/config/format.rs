//! Which reader a config file needs: JSON (with JSONC) or Codex's TOML.

use std::path::Path;

/// How a config file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// JSON or JSONC: `mcpServers`, `servers`, `mcp.servers`.
    Json,
    /// Codex's `config.toml`: `[mcp_servers.NAME]`.
    Toml,
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
