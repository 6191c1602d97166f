//! Tool names as model vendors accept them, and back.
//!
//! MCP tool names may hold `.` and `/` and run to 128 characters; the
//! function-calling APIs of the model vendors accept `^[a-zA-Z0-9_-]{1,64}$`.
//! [`vendor_name`] maps a catalogue name into that set, the same way on
//! every run (an agent that remembers a name across restarts finds the same
//! tool), and [`Catalogue::tool_by_vendor_name`] maps it back, so the glue
//! an agent writes is: offer [`Catalogue::vendor_tools`], then call
//! [`ServerGroup::call_vendor_tool`] with what the model chose.

use std::borrow::Cow;

use serde_json::Value;

use super::{Catalogue, GroupError, Named, ServerGroup};
use crate::protocol::{CallToolResult, Tool};

/// The longest name model vendors accept.
pub const VENDOR_NAME_MAX: usize = 64;

/// `name` as model vendors accept it: unchanged when it already is;
/// otherwise each character outside `[a-zA-Z0-9_-]` becomes `_`, cut to
/// 55 characters, then `_` and 8 hex digits of the name's SHA-256, so
/// two names that read alike once changed stay apart.
pub fn vendor_name(name: &str) -> Cow<'_, str> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= VENDOR_NAME_MAX && name.chars().all(allowed) {
        return Cow::Borrowed(name);
    }
    let kept: String = name
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .take(VENDOR_NAME_MAX - 9)
        .collect();
    let digest = crate::redact::hex(&crate::redact::fingerprint(&[name.as_bytes()])[..4]);
    Cow::Owned(format!("{kept}_{digest}"))
}

impl Catalogue {
    /// Every tool with the name to offer a model vendor.
    pub fn vendor_tools(&self) -> impl Iterator<Item = (Cow<'_, str>, &Named<Tool>)> {
        self.tools()
            .iter()
            .map(|tool| (vendor_name(&tool.name), tool))
    }

    /// The tool offered to a vendor as `vendor`.
    pub fn tool_by_vendor_name(&self, vendor: &str) -> Option<&Named<Tool>> {
        self.tools()
            .iter()
            .find(|tool| vendor_name(&tool.name) == vendor)
    }
}

impl ServerGroup {
    /// Calls the tool a model chose by its vendor name (see
    /// [`Catalogue::vendor_tools`]).
    pub async fn call_vendor_tool(
        &self,
        vendor: &str,
        arguments: &Value,
    ) -> Result<CallToolResult, GroupError> {
        let name = self
            .catalogue()
            .tool_by_vendor_name(vendor)
            .map(|tool| tool.name.clone())
            .ok_or_else(|| GroupError::UnknownTool {
                name: vendor.to_owned(),
            })?;
        self.call_tool(&name, arguments).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_names_are_in_the_vendors_set_stable_and_apart() {
        let valid = |n: &str| {
            (1..=VENDOR_NAME_MAX).contains(&n.len())
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        assert_eq!(vendor_name("py__add"), "py__add");
        let long = "x".repeat(128);
        for name in ["files.read", "files/read", "", &long, "ünï"] {
            let vendor = vendor_name(name);
            assert!(valid(&vendor), "{name:?} -> {vendor}");
            assert_eq!(vendor, vendor_name(name), "stable");
        }
        assert_ne!(vendor_name("files.read"), vendor_name("files/read"));
        assert_ne!(vendor_name("files.read"), "files_read");
    }
}
