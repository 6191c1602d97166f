//! Codex's `config.toml`: one `[mcp_servers.NAME]` table per server, read
//! into the same entries as the JSON forms (feature `codex`, which brings
//! the toml crate; without it such a file is
//! [`ConfigFileError::CodexUnavailable`]).
//!
//! Codex spells three things its own way, and they are read here for every
//! format (a JSON file may carry them after a copy): `http_headers` (fixed
//! headers), `env_http_headers` (a header whose value is an environment
//! variable's) and `bearer_token_env_var` (`Authorization: Bearer` from a
//! variable). They become `${env:NAME}` references, expanded like any
//! other, so a missing variable is an error, never an empty header.

use serde_json::{Map, Value};

use super::{ConfigFileError, EntryProblem};

/// The `mcp_servers` table of a Codex `config.toml`, as JSON values.
#[cfg(feature = "codex")]
pub(super) fn servers(text: &str) -> Result<Map<String, Value>, ConfigFileError> {
    let table: toml::Table = toml::from_str(text).map_err(|error| {
        let (line, column) = error.span().map_or((1, 1), |span| {
            super::check::line_and_column(text, span.start)
        });
        ConfigFileError::Toml { line, column }
    })?;
    let file = serde_json::to_value(table).map_err(|_| ConfigFileError::NotAnObject)?;
    match file.get("mcp_servers") {
        Some(Value::Object(servers)) => Ok(servers.clone()),
        _ => Err(ConfigFileError::NoServers),
    }
}

/// Without the `codex` feature no TOML is read.
#[cfg(not(feature = "codex"))]
pub(super) fn servers(_: &str) -> Result<Map<String, Value>, ConfigFileError> {
    Err(ConfigFileError::CodexUnavailable)
}

/// The fields this module reads.
pub(super) const FIELDS: &[&str] = &["http_headers", "env_http_headers", "bearer_token_env_var"];

/// Codex's header fields of `entry` as `(name, value)` pairs to add to
/// its `headers`, variables as `${env:NAME}` references.
pub(super) fn headers(entry: &Map<String, Value>) -> Result<Vec<(String, String)>, EntryProblem> {
    let mut headers = Vec::new();
    let object = |field: &'static str| match entry.get(field) {
        None => Ok(Map::new()),
        Some(Value::Object(pairs)) => Ok(pairs.clone()),
        Some(_) => Err(EntryProblem::WrongType { field }),
    };
    let text = |value: &Value, field: &'static str| match value {
        Value::String(value) => Ok(value.clone()),
        _ => Err(EntryProblem::WrongType { field }),
    };
    // A variable name goes into a reference: nothing but a name may.
    let variable = |value: &Value, field: &'static str| {
        let name = text(value, field)?;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(EntryProblem::BadVariableName);
        }
        Ok(format!("${{env:{name}}}"))
    };
    for (name, value) in object("http_headers")? {
        headers.push((name, text(&value, "http_headers")?));
    }
    for (name, value) in object("env_http_headers")? {
        headers.push((name, variable(&value, "env_http_headers")?));
    }
    if let Some(value) = entry.get("bearer_token_env_var") {
        let reference = variable(value, "bearer_token_env_var")?;
        headers.push(("Authorization".to_owned(), format!("Bearer {reference}")));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_has_its_line_and_column() {
        let text = "[mcp_servers.docs]\ncommand = \"srv\"\nargs = [\"a\",\n";
        let error = servers(text).unwrap_err();
        assert!(
            matches!(error, ConfigFileError::Toml { line: 3 | 4, .. }),
            "{error:?}"
        );
        let text = "[mcp_servers.docs]\ncommand = = \"srv\"\n";
        assert!(matches!(
            servers(text),
            Err(ConfigFileError::Toml {
                line: 2,
                column: 11
            })
        ));
        assert!(matches!(
            servers("[other]\nx = 1\n"),
            Err(ConfigFileError::NoServers)
        ));
    }
}
