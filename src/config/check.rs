//! What a check of a config file shows: each server's launch as the reader
//! normalized it, with no secret in it, and where in the text a refused
//! entry is.
//!
//! A launch is shown from the entry *as written* where a value may hold a
//! secret: arguments keep their `${...}` references unexpanded, the URL
//! its references too, with userinfo and every query value masked, and of
//! the environment and the headers only the names. The program and the
//! working directory are shown as written too: a reference in them may
//! name a secret as well as a path.

use std::fmt;

use serde_json::{Map, Value};

use super::Format;
use crate::request::Target;

/// Shown instead of a value that may be a secret.
const MASK: &str = "***";

/// A server's launch with every secret value masked: what
/// [`ServerConfig::launch`](super::ServerConfig::launch) gives and its
/// `Display` prints on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Launch {
    /// A process the client starts.
    Stdio {
        /// The program and the arguments, as written (references unexpanded).
        argv: Vec<String>,
        /// The names of the variables set for it.
        env: Vec<String>,
        /// Its working directory as written, when one is set.
        cwd: Option<String>,
    },
    /// A server reached over HTTP.
    Http {
        /// The URL as written, userinfo and query values masked.
        url: String,
        /// The names of the headers sent.
        headers: Vec<String>,
        /// The Unix socket it is reached over, when one is set.
        socket: Option<String>,
    },
}

impl Launch {
    /// The launch of an entry the reader accepted (so every field it
    /// reads here has its type).
    pub(super) fn of(target: &Target, written: &Map<String, Value>) -> Launch {
        let text = |field| {
            super::text(written, field)
                .ok()
                .flatten()
                .map(str::to_owned)
        };
        match target {
            Target::Stdio(_) => {
                let mut argv = vec![text("command").unwrap_or_default()];
                argv.extend(
                    (super::list(written, "args").unwrap_or_default().into_iter())
                        .map(str::to_owned),
                );
                let env = super::strings(written, "env").unwrap_or_default();
                Launch::Stdio {
                    argv,
                    env: env.into_iter().map(|(name, _)| name.to_owned()).collect(),
                    cwd: text("cwd"),
                }
            }
            Target::Http { headers, .. } => Launch::Http {
                url: masked_url(&text("url").unwrap_or_default()),
                headers: headers
                    .keys()
                    .map(|name| name.as_str().to_owned())
                    .collect(),
                socket: text("socket"),
            },
        }
    }
}

impl Launch {
    /// The launch of a server resolved from a registry `server.json`: the
    /// program and arguments it gives (none is the user's: variables are
    /// set in the environment, whose names alone are shown), or the
    /// remote's URL template, userinfo and query values masked, and the
    /// header names.
    #[cfg(feature = "registry")]
    pub(super) fn of_resolved(target: &Target, url_template: Option<&str>) -> Launch {
        match target {
            Target::Stdio(command) => {
                let argv = std::iter::once(command.program())
                    .chain(command.arguments())
                    .map(|part| part.to_string_lossy().into_owned())
                    .collect();
                let env = (command.environment().iter())
                    .map(|(name, _)| name.to_string_lossy().into_owned())
                    .collect();
                Launch::Stdio {
                    argv,
                    env,
                    cwd: None,
                }
            }
            Target::Http { headers, .. } => Launch::Http {
                url: masked_url(url_template.unwrap_or_default()),
                headers: (headers.keys())
                    .map(|name| name.as_str().to_owned())
                    .collect(),
                socket: None,
            },
        }
    }
}

impl super::ServerConfig {
    /// How the server is started or reached, every secret value masked
    /// (see [`Launch`]).
    pub fn launch(&self) -> &Launch {
        &self.launch
    }
}

impl fmt::Display for Launch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Launch::Stdio { argv, env, cwd } => {
                write!(f, "stdio: {}", argv.join(" "))?;
                if !env.is_empty() {
                    write!(f, "; env {}", env.join(", "))?;
                }
                if let Some(cwd) = cwd {
                    write!(f, "; cwd {cwd}")?;
                }
                Ok(())
            }
            Launch::Http {
                url,
                headers,
                socket,
            } => {
                write!(f, "http: {url}")?;
                if !headers.is_empty() {
                    write!(f, "; headers {}", headers.join(", "))?;
                }
                if let Some(socket) = socket {
                    write!(f, "; socket {socket}")?;
                }
                Ok(())
            }
        }
    }
}

/// `url` with its userinfo and every query value replaced by the mask.
fn masked_url(url: &str) -> String {
    let (before_fragment, _) = url.split_once('#').unwrap_or((url, ""));
    let (base, query) = match before_fragment.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (before_fragment, None),
    };
    let mut shown = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = match authority.rsplit_once('@') {
                Some((_, host)) => format!("{MASK}@{host}"),
                None => authority.to_owned(),
            };
            format!("{scheme}://{host}{path}")
        }
        None => base.to_owned(),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) => format!("{key}={MASK}"),
                None => pair.to_owned(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&pairs.join("&"));
    }
    shown
}

/// Where the entry `name` is in `text` (line and column from 1): its key in
/// a JSON servers object, its `[mcp_servers.NAME]` table in TOML; the key
/// `field` inside it (at any depth) when given and found there. `None`
/// when the entry cannot be found.
pub(super) fn position(
    text: &str,
    format: Format,
    name: &str,
    field: Option<&str>,
) -> Option<(usize, usize)> {
    // JSON is searched with its comments blanked and without a BOM; lines
    // and columns are the same, offsets are of the text searched.
    let blanked;
    let text = match format {
        Format::Json | Format::Standard => {
            blanked = super::jsonc::to_json(text);
            blanked.as_str()
        }
        Format::Toml => text,
    };
    let at = match format {
        Format::Toml => [
            format!("[mcp_servers.{name}]"),
            format!("[mcp_servers.\"{name}\"]"),
        ]
        .iter()
        .find_map(|table| text.find(table.as_str()))?,
        Format::Json | Format::Standard => json_key(text, name)?,
    };
    let within = field.and_then(|field| match format {
        Format::Json | Format::Standard => json_field(text, at, field),
        Format::Toml => toml_field(text, at, name, field),
    });
    Some(line_and_column(text, within.unwrap_or(at)))
}

/// The offset of the key `field` at any depth of the object that is the
/// value of the key at `entry`.
fn json_field(text: &str, entry: usize, field: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = entry + text[entry..].find('{')?;
    let mut depth = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let (end, read) = json_string(text, i);
                if read.as_deref() == Some(field) {
                    return Some(i);
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The offset of a `field = ...` line in the table at `table` or its
/// subtables (`[mcp_servers.NAME.env]`), before the next other table.
fn toml_field(text: &str, table: usize, name: &str, field: &str) -> Option<usize> {
    let mut offset = table + text[table..].find('\n')? + 1;
    for line in text[offset..].split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && !trimmed.starts_with(&format!("[mcp_servers.{name}."))
            && !trimmed.starts_with(&format!("[mcp_servers.\"{name}\"."))
        {
            return None;
        }
        let key = trimmed.split('=').next().unwrap_or_default().trim();
        if trimmed.contains('=') && key.trim_matches('"') == field {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

/// The line and column (from 1, in characters) of byte `offset`.
pub(super) fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit_once('\n')
        .map_or(before, |(_, tail)| tail)
        .chars()
        .count()
        + 1;
    (line, column)
}

/// The JSON string starting at `start` (its opening quote): the offset
/// just past it, and its decoded text when it is a key (a `:` follows).
fn json_string(text: &str, start: usize) -> (usize, Option<String>) {
    let bytes = text.as_bytes();
    let mut i = start + 1;
    while i < bytes.len() && bytes[i] != b'"' {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    let end = (i + 1).min(bytes.len());
    let key = text[end..]
        .trim_start()
        .starts_with(':')
        .then(|| serde_json::from_str(&text[start..end]).unwrap_or_default());
    (end, key)
}

/// The offset of the key `name` in an object that is the value of a
/// `mcpServers` or `servers` key.
fn json_key(text: &str, name: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    // For each open object or array, the key whose value it is.
    let mut opened_by: Vec<Option<String>> = Vec::new();
    let mut key: Option<String> = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let (end, read) = json_string(text, i);
                let parent = opened_by.last().and_then(Option::as_deref);
                if matches!(parent, Some("mcpServers" | "servers")) && read.as_deref() == Some(name)
                {
                    return Some(i);
                }
                key = read;
                i = end;
                continue;
            }
            b'{' | b'[' => opened_by.push(key.take()),
            b'}' | b']' => {
                opened_by.pop();
            }
            b',' => key = None,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_shows_no_secret_and_a_refused_entry_its_place() {
        let text = r#"{
  "mcpServers": {
    "files": { "command": "srv", "args": ["--token", "${env:T}"],
               "env": { "KEY": "env-canary" }, "cwd": "/tmp" },
    "api": { "url": "https://u:pw-canary@example.test/mcp?key=${env:T}",
             "headers": { "X-Key": "header-canary" } },
    "broken": { "command": "srv", "url": "http://127.0.0.1/" }
  }
}"#;
        let env = |_: &str| Some("var-canary".to_owned());
        let config = super::super::ServersConfig::parse_with(text, &env).unwrap();
        let files = config.get("files").unwrap().launch().to_string();
        assert_eq!(files, "stdio: srv --token ${env:T}; env KEY; cwd /tmp");
        let api = config.get("api").unwrap().launch().to_string();
        assert_eq!(
            api,
            "http: https://***@example.test/mcp?key=***; headers authorization, x-key"
        );
        let broken = config.errors().next().unwrap();
        // `url` is the field the problem names (command and url both).
        assert_eq!(broken.line_column(), Some((7, 35)));
    }

    #[test]
    fn urls_lose_userinfo_and_query_values() {
        assert_eq!(
            masked_url("https://user:pw@example.test:8443/mcp?api_key=${env:KEY}&flag#frag"),
            "https://***@example.test:8443/mcp?api_key=***&flag"
        );
        assert_eq!(masked_url("http://127.0.0.1/mcp"), "http://127.0.0.1/mcp");
    }

    #[test]
    fn entries_are_found_where_they_are_written() {
        let json = "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"a\" },\n    \"command\": {}\n  }\n}";
        assert_eq!(position(json, Format::Json, "a", None), Some((3, 5)));
        assert_eq!(position(json, Format::Json, "command", None), Some((4, 5)));
        let toml = "model = \"x\"\n\n[mcp_servers.files]\ncommand = \"f\"\n";
        assert_eq!(position(toml, Format::Toml, "files", None), Some((3, 1)));
        assert_eq!(position(toml, Format::Toml, "gone", None), None);
        // A BOM and a comment before a multi-byte name: found, no panic.
        let bom = "\u{feff}{ // é\n \"servers\": { \"é\": 1 } }";
        assert_eq!(position(bom, Format::Json, "é", None), Some((2, 15)));
    }

    #[test]
    fn a_problem_in_a_field_points_at_that_field() {
        let json = "{ \"mcpServers\": {\n  \"a\": { \"command\": \"a\",\n    \"policies\": { \"maxInFlight\": 0 } },\n  \"b\": { \"maxInFlight\": 1 } } }";
        // Nested, and never a same-named key of the next entry.
        let at = position(json, Format::Json, "a", Some("maxInFlight"));
        assert_eq!(at, Some((3, 19)));
        assert_eq!(position(json, Format::Json, "a", Some("url")), Some((2, 3)));
        let toml = "[mcp_servers.a]\ncommand = \"a\"\n[mcp_servers.a.policies]\n  maxInFlight = 0\n[mcp_servers.b]\nurl = 1\n";
        let at = position(toml, Format::Toml, "a", Some("maxInFlight"));
        assert_eq!(at, Some((4, 3)));
        // Not found in its own tables: the entry's start.
        assert_eq!(position(toml, Format::Toml, "a", Some("url")), Some((1, 1)));
        let config = super::super::ServersConfig::parse(json).unwrap();
        let refused = config.errors().next().unwrap();
        assert_eq!(refused.problem().field(), Some("maxInFlight"));
        assert_eq!(refused.line_column(), Some((3, 19)));
    }
}
