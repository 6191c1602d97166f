//! `${...}` references in a config value, and where they are answered from.
//!
//! Hosts write secrets into config files as references (`"Bearer
//! ${env:GITHUB_TOKEN}"`), so a value is expanded before it is used and
//! the references never reach a request. A reference that cannot be
//! answered is an error, never an empty string: an empty token would be
//! sent as one. The forms, from the hosts that write them:
//!
//! - `${NAME}`, `${env:NAME}`: the environment (Claude Desktop, Cursor, VS
//!   Code); `${NAME:-default}` and `${env:NAME:-default}` take `default`
//!   when the variable is unset or empty, as a shell does;
//! - `${env:A | env:B | value:literal}`: the first alternative that has a
//!   value (the draft standard `mcp.json`);
//! - `${input:id}`: a value the application supplies
//!   ([`Variables::with_input`]), as VS Code asks a person for its
//!   `inputs`; the command prompts for them on a terminal;
//! - `${workspaceFolder}` (when the application says which,
//!   [`Variables::with_workspace_folder`]) and `${userHome}` (`HOME`).

use std::collections::HashMap;
use std::fmt;

use super::EntryProblem;

/// Where a config file's `${...}` references are answered from: the
/// environment, the inputs the application supplies, and the workspace
/// folder. Printing one shows the inputs' ids, never their values.
pub struct Variables<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    inputs: HashMap<String, String>,
    workspace_folder: Option<String>,
}

impl<'a> Variables<'a> {
    /// References answered from `env` alone.
    pub fn new(env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Variables {
            env,
            inputs: HashMap::new(),
            workspace_folder: None,
        }
    }

    /// `${input:id}` is `value` (a password a person typed, a key from a
    /// vault). Never printed.
    #[must_use]
    pub fn with_input(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.inputs.insert(id.into(), value.into());
        self
    }

    /// `${workspaceFolder}` is `folder`.
    #[must_use]
    pub fn with_workspace_folder(mut self, folder: impl Into<String>) -> Self {
        self.workspace_folder = Some(folder.into());
        self
    }

    /// The input `name`: how a registry server's variable is answered
    /// when the entry's own `env` does not (never the environment: a
    /// document would read any variable it names).
    #[cfg(feature = "registry")]
    pub(super) fn input(&self, name: &str) -> Option<String> {
        self.inputs.get(name).cloned()
    }

    /// One alternative of a reference, or `None` when it has no value.
    fn answer(&self, alternative: &str) -> Result<Option<String>, EntryProblem> {
        let (kind, rest) = match alternative.split_once(':') {
            Some((kind @ ("env" | "input" | "value"), rest)) => (kind, rest),
            Some((name, default)) if default.starts_with('-') && is_name(name) => ("", alternative),
            Some(_) => return Err(EntryProblem::UnknownVariableKind),
            None => ("", alternative),
        };
        match kind {
            "value" => Ok(Some(rest.to_owned())),
            "input" => Ok(self.inputs.get(rest).cloned()),
            _ => {
                let (name, default) = match rest.split_once(":-") {
                    Some((name, default)) => (name, Some(default)),
                    None => (rest, None),
                };
                if !is_name(name) {
                    return Err(EntryProblem::BadVariableName);
                }
                let found = match (kind, name) {
                    ("", "workspaceFolder") => self.workspace_folder.clone(),
                    ("", "userHome") => (self.env)("HOME"),
                    _ => (self.env)(name),
                };
                Ok(match (found, default) {
                    (Some(value), Some(default)) if value.is_empty() => Some(default.to_owned()),
                    (None, Some(default)) => Some(default.to_owned()),
                    (found, _) => found,
                })
            }
        }
    }

    /// The problem of a reference none of whose alternatives has a value:
    /// its first one's.
    fn missing(alternative: &str) -> EntryProblem {
        match alternative.split_once(':') {
            Some(("input", id)) => EntryProblem::MissingInputs {
                ids: vec![id.to_owned()],
            },
            Some(("env", name)) => EntryProblem::MissingVariable {
                variable: name.to_owned(),
            },
            _ => EntryProblem::MissingVariable {
                variable: alternative.to_owned(),
            },
        }
    }
}

impl fmt::Debug for Variables<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids: Vec<_> = self.inputs.keys().collect();
        ids.sort();
        f.debug_struct("Variables")
            .field("inputs", &ids)
            .field("workspace_folder", &self.workspace_folder.is_some())
            .finish_non_exhaustive()
    }
}

/// `value` with every reference replaced by its answer.
pub(super) fn expand(value: &str, variables: &Variables<'_>) -> Result<String, EntryProblem> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(EntryProblem::UnterminatedVariable)?;
        let alternatives: Vec<&str> = after[..end].split('|').map(str::trim).collect();
        let mut answer = None;
        for alternative in &alternatives {
            if let Some(found) = variables.answer(alternative)? {
                answer = Some(found);
                break;
            }
        }
        let answer = answer.ok_or_else(|| Variables::missing(alternatives[0]))?;
        out.push_str(&answer);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The ids of the `${input:...}` references in `value` that nothing
/// answers (each reference's first alternative, as its error names it).
pub(super) fn unanswered_inputs(value: &str, variables: &Variables<'_>, ids: &mut Vec<String>) {
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { return };
        let alternatives: Vec<&str> = after[..end].split('|').map(str::trim).collect();
        let answered = (alternatives.iter()).any(|a| matches!(variables.answer(a), Ok(Some(_))));
        if let (false, Some(("input", id))) = (answered, alternatives[0].split_once(':')) {
            if !ids.iter().any(|known| known == id) {
                ids.push(id.to_owned());
            }
        }
        rest = &after[end + 1..];
    }
}

/// An environment variable's name: a letter or `_`, then letters, digits
/// and `_`.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k".to_owned()),
            "EMPTY" => Some(String::new()),
            "HOME" => Some("/home/ada".to_owned()),
            _ => None,
        }
    }

    fn expand_env(value: &str) -> Result<String, EntryProblem> {
        expand(value, &Variables::new(&env))
    }

    #[test]
    fn both_forms_expand_and_failures_are_typed() {
        assert_eq!(expand_env("Bearer ${TOKEN}").unwrap(), "Bearer t0k");
        assert_eq!(expand_env("${env:TOKEN}/${TOKEN}").unwrap(), "t0k/t0k");
        assert_eq!(expand_env("no references").unwrap(), "no references");
        assert_eq!(expand_env("$TOKEN and $").unwrap(), "$TOKEN and $");
        assert!(matches!(
            expand_env("${MISSING}"),
            Err(EntryProblem::MissingVariable { variable }) if variable == "MISSING"
        ));
        assert!(matches!(
            expand_env("${TOKEN"),
            Err(EntryProblem::UnterminatedVariable)
        ));
        assert!(matches!(
            expand_env("${input:key}"),
            Err(EntryProblem::MissingInputs { ids }) if ids == ["key"]
        ));
        assert!(matches!(
            expand_env("${cmd:x}"),
            Err(EntryProblem::UnknownVariableKind)
        ));
        assert!(matches!(
            expand_env("${9x}"),
            Err(EntryProblem::BadVariableName)
        ));
        assert!(matches!(
            expand_env("${}"),
            Err(EntryProblem::BadVariableName)
        ));
    }

    #[test]
    fn defaults_fallbacks_inputs_and_folders() {
        assert_eq!(expand_env("${MISSING:-8080}").unwrap(), "8080");
        assert_eq!(expand_env("${env:EMPTY:-x}").unwrap(), "x");
        assert_eq!(expand_env("${TOKEN:-x}").unwrap(), "t0k");
        assert_eq!(
            expand_env("${env:MISSING | env:TOKEN | value:z}").unwrap(),
            "t0k"
        );
        assert_eq!(expand_env("${env:MISSING | value:a b}").unwrap(), "a b");
        assert!(matches!(
            expand_env("${env:MISSING | env:ALSO}"),
            Err(EntryProblem::MissingVariable { variable }) if variable == "MISSING"
        ));
        assert_eq!(expand_env("${userHome}/srv").unwrap(), "/home/ada/srv");
        assert!(matches!(
            expand_env("${workspaceFolder}"),
            Err(EntryProblem::MissingVariable { variable }) if variable == "workspaceFolder"
        ));
        let variables = Variables::new(&env)
            .with_input("api-key", "s3cret")
            .with_workspace_folder("/w");
        assert_eq!(
            expand("${input:api-key}@${workspaceFolder}", &variables).unwrap(),
            "s3cret@/w"
        );
        assert!(!format!("{variables:?}").contains("s3cret"));
        assert!(format!("{variables:?}").contains("api-key"));
    }
}
