//! `${VAR}` and `${env:VAR}` in a config value, from the environment.
//!
//! Hosts write secrets into config files as references (`"Bearer
//! ${env:GITHUB_TOKEN}"`), so a value is expanded before it is used and
//! the references never reach a request. A reference this reader cannot
//! satisfy is an error, never an empty string: an empty token would be
//! sent as one. VS Code's `${input:...}` asks a person and has no answer
//! here.

use super::EntryProblem;

/// `value` with every `${NAME}` and `${env:NAME}` replaced by `env(NAME)`.
pub(super) fn expand(
    value: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, EntryProblem> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(EntryProblem::UnterminatedVariable)?;
        let reference = &after[..end];
        let name = match reference.split_once(':') {
            None => reference,
            Some(("env", name)) => name,
            Some(("input", _)) => return Err(EntryProblem::InputVariable),
            Some(_) => return Err(EntryProblem::UnknownVariableKind),
        };
        if !is_name(name) {
            return Err(EntryProblem::BadVariableName);
        }
        let found = env(name).ok_or_else(|| EntryProblem::MissingVariable {
            variable: name.to_owned(),
        })?;
        out.push_str(&found);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
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
        (name == "TOKEN").then(|| "t0k".to_owned())
    }

    #[test]
    fn both_forms_expand_and_failures_are_typed() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer t0k");
        assert_eq!(expand("${env:TOKEN}/${TOKEN}", &env).unwrap(), "t0k/t0k");
        assert_eq!(expand("no references", &env).unwrap(), "no references");
        assert_eq!(expand("$TOKEN and $", &env).unwrap(), "$TOKEN and $");
        assert!(matches!(
            expand("${MISSING}", &env),
            Err(EntryProblem::MissingVariable { variable }) if variable == "MISSING"
        ));
        assert!(matches!(
            expand("${TOKEN", &env),
            Err(EntryProblem::UnterminatedVariable)
        ));
        assert!(matches!(
            expand("${input:key}", &env),
            Err(EntryProblem::InputVariable)
        ));
        assert!(matches!(
            expand("${cmd:x}", &env),
            Err(EntryProblem::UnknownVariableKind)
        ));
        assert!(matches!(
            expand("${9x}", &env),
            Err(EntryProblem::BadVariableName)
        ));
        assert!(matches!(
            expand("${}", &env),
            Err(EntryProblem::BadVariableName)
        ));
    }
}
