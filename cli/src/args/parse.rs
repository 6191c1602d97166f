//! The values of the command's options that clap cannot read alone:
//! versions, limits and durations.

use std::time::Duration;

use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::VersionPolicy;

/// A `--pin`: exactly a version this client speaks.
pub(super) fn parse_pin(text: &str) -> Result<ProtocolVersion, String> {
    let version = ProtocolVersion::new(text);
    VersionPolicy::Pin(version.clone())
        .validate()
        .map(|()| version)
        .map_err(|_| {
            format!(
                "{text:?} is not a protocol version this client speaks ({})",
                known()
            )
        })
}

/// A `--ceiling`: a well-formed revision date, checked by the same rule as
/// the library's.
pub(super) fn parse_ceiling(text: &str) -> Result<ProtocolVersion, String> {
    let version = ProtocolVersion::new(text);
    VersionPolicy::Ceiling(version.clone())
        .validate()
        .map(|()| version)
        .map_err(|_| {
            format!(
                "{text:?} is not a YYYY-MM-DD revision no older than {}",
                ProtocolVersion::SUPPORTED[0]
            )
        })
}

fn known() -> String {
    ProtocolVersion::SUPPORTED
        .iter()
        .map(ProtocolVersion::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A limit: a duration greater than zero.
pub(super) fn parse_limit(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        limit if limit.is_zero() => Err(format!("{text:?}: a limit must be greater than zero")),
        limit => Ok(limit),
    }
}

/// Parses `1500ms`, `2s`, `1m` (a bare number is seconds).
pub(super) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 2s or 1500ms"))?;
    let seconds = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("{text:?}: unit must be ms, s or m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text:?} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_ms_s_and_m() {
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5h").is_err());
        assert!(parse_limit("0").is_err());
        assert!(parse_limit("0ms").is_err());
        assert_eq!(parse_limit("1ms"), Ok(Duration::from_millis(1)));
    }

    #[test]
    fn pins_and_ceilings_parse_by_the_library_rules() {
        assert!(parse_pin("2025-11-25").is_ok());
        assert!(parse_pin("2099-01-01").is_err());
        assert!(parse_ceiling("2025-12-01").is_ok());
        for bad in ["garbage", "2026", "2024-01-01", ""] {
            assert!(parse_ceiling(bad).is_err(), "{bad}");
        }
    }
}
