//! Time limits as config files write them: whole or fractional seconds
//! (TOML and JSON allow fractions), or whole milliseconds.

use std::time::Duration;

use serde_json::{Map, Value};

use super::EntryProblem;

/// A positive, finite number of seconds (TOML and JSON allow fractions).
pub(super) fn seconds(
    entry: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<Duration>, EntryProblem> {
    duration(entry, field, |value| {
        let seconds = value.as_f64().filter(|s| s.is_finite() && *s > 0.0)?;
        Duration::try_from_secs_f64(seconds).ok()
    })
}

/// A positive whole number of milliseconds.
pub(super) fn milliseconds(
    entry: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<Duration>, EntryProblem> {
    duration(entry, field, |value| {
        value
            .as_u64()
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    })
}

/// `field` read by `read`: absent is `None`, unreadable a `BadDuration`.
fn duration(
    entry: &Map<String, Value>,
    field: &'static str,
    read: impl Fn(&Value) -> Option<Duration>,
) -> Result<Option<Duration>, EntryProblem> {
    entry
        .get(field)
        .map(|value| read(value).ok_or(EntryProblem::BadDuration { field }))
        .transpose()
}
