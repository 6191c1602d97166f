//! Which protocol versions a connection may end on.

use crate::error::ConfigError;
use crate::protocol::{Era, ProtocolVersion};

/// The caller's rule for protocol versions.
///
/// A pin is exact and holds on every attempt; a ceiling caps what is offered;
/// neither is ever cleared by a fallback.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum VersionPolicy {
    /// Any version this client speaks; the newest the server allows wins.
    #[default]
    Auto,
    /// Any version this client speaks up to and including this one.
    Ceiling(ProtocolVersion),
    /// Exactly this version, or fail.
    Pin(ProtocolVersion),
}

impl VersionPolicy {
    /// Checks the policy: a pin must be a version this client speaks; a
    /// ceiling must be a well-formed `YYYY-MM-DD` revision no older than the
    /// oldest one this client speaks (it may name a revision between or
    /// after the known ones: it only caps).
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            VersionPolicy::Auto => Ok(()),
            VersionPolicy::Pin(v) if !v.is_supported() => Err(ConfigError::Version(v.clone())),
            VersionPolicy::Ceiling(v)
                if !v.is_well_formed() || *v < ProtocolVersion::SUPPORTED[0] =>
            {
                Err(ConfigError::Version(v.clone()))
            }
            _ => Ok(()),
        }
    }

    /// Whether a connection may end on `version`.
    pub fn allows(&self, version: &ProtocolVersion) -> bool {
        version.is_supported()
            && match self {
                VersionPolicy::Auto => true,
                VersionPolicy::Ceiling(ceiling) => version <= ceiling,
                VersionPolicy::Pin(pin) => version == pin,
            }
    }

    /// The newest allowed version of `era` among `candidates`.
    pub(crate) fn best_of<'a>(
        &self,
        era: Era,
        candidates: impl IntoIterator<Item = &'a ProtocolVersion>,
    ) -> Option<ProtocolVersion> {
        candidates
            .into_iter()
            .filter(|v| v.era() == era && self.allows(v))
            .max()
            .cloned()
    }

    /// The newest allowed version of `era` this client speaks.
    pub(crate) fn newest(&self, era: Era) -> Option<ProtocolVersion> {
        self.best_of(era, ProtocolVersion::SUPPORTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_ceiling_bound_every_choice() {
        let pin = VersionPolicy::Pin(ProtocolVersion::V2025_06_18);
        assert_eq!(pin.newest(Era::Legacy), Some(ProtocolVersion::V2025_06_18));
        assert_eq!(pin.newest(Era::Modern), None);
        let ceiling = VersionPolicy::Ceiling(ProtocolVersion::V2025_11_25);
        assert_eq!(ceiling.newest(Era::Modern), None);
        assert_eq!(
            ceiling.newest(Era::Legacy),
            Some(ProtocolVersion::V2025_11_25)
        );
        assert_eq!(
            VersionPolicy::Auto.newest(Era::Modern),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert!(!VersionPolicy::Auto.allows(&ProtocolVersion::new("2099-01-01")));
        assert!(VersionPolicy::Pin(ProtocolVersion::new("2099-01-01"))
            .validate()
            .is_err());
        for bad in ["2026", "garbage", "2024-01-01"] {
            assert!(VersionPolicy::Ceiling(ProtocolVersion::new(bad))
                .validate()
                .is_err());
        }
        assert!(VersionPolicy::Ceiling(ProtocolVersion::new("2025-12-01"))
            .validate()
            .is_ok());
    }
}
