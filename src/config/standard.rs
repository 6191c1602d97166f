//! The draft standard `mcp.json` (SEP-2633), read strictly when asked for
//! with [`Format::Standard`](super::Format::Standard): what a file must be
//! to be shared between clients, beyond what this reader takes from any
//! host. `type` is required and one of `stdio`, `sse`, `streamable-http`
//! (no `http`); a stdio entry has no `url`, `headers` or `oauth`, a remote
//! one no `command`, `args` or `env`; a server's name matches
//! `[a-zA-Z0-9_\[\]-]+`. Everything else is read as for any JSON file.

use serde_json::Value;

use super::EntryProblem;

/// The fields only a remote entry has, and those only a stdio entry has.
const REMOTE: &[&str] = &["url", "headers", "oauth"];
const STDIO: &[&str] = &["command", "args", "env"];

/// Why `entry`, called `name`, is not a standard entry, if it is not.
pub(super) fn check(name: &str, entry: &Value) -> Result<(), EntryProblem> {
    let named = |c: char| c.is_ascii_alphanumeric() || "_-[]".contains(c);
    if name.is_empty() || !name.chars().all(named) {
        return Err(EntryProblem::NonStandardName);
    }
    let Value::Object(entry) = entry else {
        return Err(EntryProblem::NotAnObject);
    };
    let foreign = match entry.get("type").map(Value::as_str) {
        None => return Err(EntryProblem::MissingType),
        Some(Some("stdio")) => REMOTE,
        Some(Some("sse" | "streamable-http")) => STDIO,
        Some(_) => return Err(EntryProblem::NonStandardType),
    };
    match foreign.iter().find(|field| entry.contains_key(**field)) {
        Some(field) => Err(EntryProblem::FieldNotForType { field }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_the_standard_refuses() {
        let stdio = json!({ "type": "stdio", "command": "srv", "args": [] });
        let remote = json!({ "type": "streamable-http", "url": "https://a/mcp" });
        assert!(check("github", &stdio).is_ok());
        assert!(check("a_b-[1]", &remote).is_ok());
        let refused = [
            ("x", json!({ "command": "srv" }), "MissingType"),
            (
                "x",
                json!({ "type": "http", "url": "https://a/mcp" }),
                "NonStandardType",
            ),
            (
                "x",
                json!({ "type": "stdio", "command": "s", "headers": {} }),
                "FieldNotForType",
            ),
            (
                "x",
                json!({ "type": "sse", "url": "https://a/sse", "env": {} }),
                "FieldNotForType",
            ),
            ("my server", remote.clone(), "NonStandardName"),
            ("", remote, "NonStandardName"),
        ];
        for (name, entry, problem) in refused {
            let found = format!("{:?}", check(name, &entry).unwrap_err());
            assert!(found.starts_with(problem), "{name} {entry}: {found}");
        }
    }
}
