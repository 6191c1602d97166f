//! Protocol versions and eras.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Whether an HTTP status is how a server refuses a request of an era or
/// version it does not serve: 400 (the version header refused), 404 or 405
/// (no such endpoint or method, as a 2024 server answers a POST). The one
/// home of this set: the era ladder, the fallback to HTTP+SSE, the
/// remembered discover and the recovery policy read it here.
pub(crate) fn is_era_refusal(status: Option<u16>) -> bool {
    matches!(status, Some(400 | 404 | 405))
}

/// An MCP protocol revision such as `2025-11-25`.
///
/// Versions are date strings and compare as strings, which orders the
/// released revisions correctly.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProtocolVersion(Cow<'static, str>);

/// The era a version belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// Every revision before 2026-07-28: `initialize`, sessions.
    Legacy,
    /// 2026-07-28 and later: stateless, `server/discover`, per-request `_meta`.
    Modern,
}

impl Era {
    /// `"legacy"` or `"modern"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }

    /// The cheapest request that tells whether a server is up: `ping`, or
    /// on the modern era (which has none) `server/discover`.
    pub fn liveness_method(self) -> &'static str {
        match self {
            Era::Legacy => super::methods::PING,
            Era::Modern => super::methods::SERVER_DISCOVER,
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ProtocolVersion {
    /// The first revision: stdio and HTTP+SSE.
    pub const V2024_11_05: Self = Self::from_static("2024-11-05");
    /// Streamable HTTP and sessions.
    pub const V2025_03_26: Self = Self::from_static("2025-03-26");
    /// Adds the `MCP-Protocol-Version` header.
    pub const V2025_06_18: Self = Self::from_static("2025-06-18");
    /// The last legacy revision.
    pub const V2025_11_25: Self = Self::from_static("2025-11-25");
    /// The first modern revision.
    pub const V2026_07_28: Self = Self::from_static("2026-07-28");

    /// The newest legacy revision this client speaks.
    pub const LATEST_LEGACY: Self = Self::V2025_11_25;
    /// The newest modern revision this client speaks.
    pub const LATEST_MODERN: Self = Self::V2026_07_28;

    /// Every revision this client speaks, oldest first.
    pub const SUPPORTED: &'static [ProtocolVersion] = &[
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// A version from a static string.
    pub const fn from_static(version: &'static str) -> Self {
        ProtocolVersion(Cow::Borrowed(version))
    }

    /// A version from any string. Unknown versions are representable so that
    /// a server's answer can be reported; [`is_supported`](Self::is_supported)
    /// tells whether this client speaks it.
    pub fn new(version: impl Into<String>) -> Self {
        let version = version.into();
        match Self::SUPPORTED
            .iter()
            .find(|known| known.as_str() == version)
        {
            Some(known) => known.clone(),
            None => ProtocolVersion(Cow::Owned(version)),
        }
    }

    /// The version string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The version string when it is a `'static` one (the known versions).
    pub(crate) fn static_str(&self) -> Option<&'static str> {
        match self.0 {
            Cow::Borrowed(text) => Some(text),
            Cow::Owned(_) => None,
        }
    }

    /// The era of this version.
    pub fn era(&self) -> Era {
        if *self >= Self::V2026_07_28 {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// Whether the string has a revision's shape, `YYYY-MM-DD` (digits,
    /// month 01-12, day 01-31). Only well-formed versions compare
    /// meaningfully as strings, so a ceiling must be one.
    pub fn is_well_formed(&self) -> bool {
        let b = self.0.as_bytes();
        let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
        let number = |range: std::ops::Range<usize>| {
            b[range]
                .iter()
                .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'))
        };
        b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && digits(0..4)
            && digits(5..7)
            && digits(8..10)
            && (1..=12).contains(&number(5..7))
            && (1..=31).contains(&number(8..10))
    }

    /// Whether this client speaks this version.
    pub fn is_supported(&self) -> bool {
        Self::SUPPORTED.contains(self)
    }
}

impl fmt::Debug for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for ProtocolVersion {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ProtocolVersion::new(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_strings_and_split_into_eras() {
        assert!(ProtocolVersion::V2024_11_05 < ProtocolVersion::V2025_11_25);
        assert!(ProtocolVersion::V2025_11_25 < ProtocolVersion::V2026_07_28);
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Legacy);
        assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Modern);
        assert_eq!(ProtocolVersion::new("2027-01-01").era(), Era::Modern);
        assert!(!ProtocolVersion::new("2027-01-01").is_supported());
        assert!(ProtocolVersion::new("2025-06-18").is_supported());
    }

    #[test]
    fn only_dates_are_well_formed() {
        for good in ["2025-11-25", "2026-07-28", "2030-01-01"] {
            assert!(ProtocolVersion::new(good).is_well_formed(), "{good}");
        }
        for bad in [
            "2026",
            "garbage",
            "2025-13-01",
            "2025-11-32",
            "2025-1-01",
            "2025-11-25 ",
            "２０２５-11-25",
        ] {
            assert!(!ProtocolVersion::new(bad).is_well_formed(), "{bad}");
        }
    }
}
