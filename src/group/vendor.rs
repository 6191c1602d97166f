//! Tool names as model vendors accept them, and back.
//!
//! MCP tool names may hold `.` and `/` and run to 128 characters; the
//! function-calling APIs of the model vendors accept `^[a-zA-Z0-9_-]{1,64}$`.
//! [`vendor_name`] maps a catalogue name into that set, the same way on
//! every run (an agent that remembers a name across restarts finds the same
//! tool), and [`Catalogue::tool_by_vendor_name`] maps it back, so the glue
//! an agent writes is: offer [`Catalogue::vendor_tools`], then call
//! [`ServerGroup::call_vendor_tool`] with what the model chose.
//!
//! Vendor names and catalogue names are one namespace: a server may name
//! a tool literally as another tool's vendor name (`files_read_1a2b3c4d`
//! beside `files.read`). Such a collision is never settled by list order
//! (where a hostile server's tool would win): every tool in it is given a
//! longer name of its own, derived from its catalogue name alone, again
//! until no two tools share one, so the names are a function of the
//! catalogue and the name that collided reaches no tool at all. A tool
//! still colliding after a few rounds is not offered.

use std::borrow::Cow;

use serde_json::Value;

use super::{Catalogue, GroupError, Named, ServerGroup};
use crate::protocol::{CallToolResult, Tool};

pub use super::catalogue::{vendor_name, VENDOR_NAME_MAX};

impl Catalogue {
    /// Every tool offered to a model vendor, with its vendor name: one
    /// namespace with the catalogue names (see the module docs).
    pub fn vendor_tools(&self) -> impl Iterator<Item = (Cow<'_, str>, &Named<Tool>)> {
        let vendor = self.vendor_names();
        (self.tools().iter().zip(&vendor.names))
            .filter_map(|(tool, name)| Some((Cow::Borrowed(name.as_deref()?), tool)))
    }

    /// The tool offered to a vendor as `vendor`.
    pub fn tool_by_vendor_name(&self, vendor: &str) -> Option<&Named<Tool>> {
        let at = *self.vendor_names().by_vendor.get(vendor)?;
        self.tools().get(at)
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
        if let Some(outcome) = self.call_meta_tool(vendor, arguments).await {
            return outcome;
        }
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
