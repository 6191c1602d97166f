//! Reading one field of an entry with the type it must have: a wrong
//! type is [`EntryProblem::WrongType`] naming the field, an absent field
//! its default.

use serde_json::{Map, Value};

use super::EntryProblem;

/// A field that, when present, must be a boolean; `absent` otherwise.
pub(super) fn flag(
    map: &Map<String, Value>,
    field: &'static str,
    absent: bool,
) -> Result<bool, EntryProblem> {
    match map.get(field) {
        None => Ok(absent),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(EntryProblem::WrongType { field }),
    }
}

/// A field that, when present, must be a string.
pub(super) fn text<'a>(
    entry: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'a str>, EntryProblem> {
    match entry.get(field) {
        None => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.as_str())),
        Some(_) => Err(EntryProblem::WrongType { field }),
    }
}

/// A field that, when present, must be a list of strings.
pub(super) fn list<'a>(
    entry: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Vec<&'a str>, EntryProblem> {
    match entry.get(field) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().ok_or(EntryProblem::WrongType { field }))
            .collect(),
        Some(_) => Err(EntryProblem::WrongType { field }),
    }
}

/// The `(key, value)` pairs of an object of strings (`env`, `headers`).
pub(super) fn strings<'a>(
    entry: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Vec<(&'a str, &'a str)>, EntryProblem> {
    match entry.get(field) {
        None => Ok(Vec::new()),
        Some(Value::Object(pairs)) => pairs
            .iter()
            .map(|(key, value)| match value {
                Value::String(value) => Ok((key.as_str(), value.as_str())),
                _ => Err(EntryProblem::WrongType { field }),
            })
            .collect(),
        Some(_) => Err(EntryProblem::WrongType { field }),
    }
}

/// Every field of both transports, checked for its type whatever the
/// entry's transport: a mistyped `args` on a remote entry (where it is not
/// used) is as much a mistake as on a stdio one.
pub(super) fn check_types(entry: &Map<String, Value>) -> Result<(), EntryProblem> {
    list(entry, "args")?;
    strings(entry, "env")?;
    strings(entry, "headers")?;
    for field in ["cwd", "socket", "cacert"] {
        text(entry, field)?;
    }
    Ok(())
}
