//! Which of a server's tools the catalogue shows: include and exclude
//! lists of exact names and globs (`*` any run of characters, `?` one),
//! matched against the name the server gave, and FastMCP's tag filters,
//! matched against the tags a FastMCP server puts in a tool's `_meta`
//! (`fastmcp.tags`, or `_fastmcp.tags` before FastMCP 3).

use std::fmt;

use serde_json::Value;
use wildmatch::WildMatch;

use crate::protocol::Tool;

/// A server's tool filter. Empty, it shows every tool. With includes, a
/// tool must match one of them; a tool matching any exclude is left out
/// whatever the includes say.
#[derive(Clone, Default)]
pub struct ToolFilter {
    include: Vec<(String, WildMatch)>,
    exclude: Vec<(String, WildMatch)>,
    include_tags: Vec<String>,
    exclude_tags: Vec<String>,
}

impl ToolFilter {
    /// A filter that shows every tool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shows only tools matching one of `patterns` (and any earlier
    /// includes).
    #[must_use]
    pub fn include<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.include.extend(compiled(patterns));
        self
    }

    /// Leaves out tools matching any of `patterns`.
    #[must_use]
    pub fn exclude<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.exclude.extend(compiled(patterns));
        self
    }

    /// Shows only tools carrying one of `tags` (and any earlier included
    /// tags): FastMCP's `include_tags`. A tool without tags is left out.
    #[must_use]
    pub fn include_tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.include_tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Leaves out tools carrying any of `tags`: FastMCP's `exclude_tags`.
    #[must_use]
    pub fn exclude_tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.exclude_tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Whether the tool named `name` is shown, by name alone.
    pub fn allows(&self, name: &str) -> bool {
        let included =
            self.include.is_empty() || self.include.iter().any(|(_, glob)| glob.matches(name));
        included && !self.exclude.iter().any(|(_, glob)| glob.matches(name))
    }

    /// The include and exclude patterns that match none of `names` (a
    /// mistyped pattern, or a tool the server renamed): each a warning,
    /// never an error.
    pub fn unmatched<'a>(&self, names: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
        (self.include.iter().chain(&self.exclude))
            .filter(|(_, glob)| !names.clone().any(|name| glob.matches(name)))
            .map(|(pattern, _)| pattern.clone())
            .collect()
    }

    /// Whether `tool` is shown: by its name, then by its FastMCP tags.
    pub fn allows_tool(&self, tool: &Tool) -> bool {
        if !self.allows(&tool.name) {
            return false;
        }
        if self.include_tags.is_empty() && self.exclude_tags.is_empty() {
            return true;
        }
        let tags = fastmcp_tags(tool);
        let carries = |wanted: &[String]| tags.clone().any(|tag| wanted.iter().any(|w| w == tag));
        (self.include_tags.is_empty() || carries(&self.include_tags))
            && !carries(&self.exclude_tags)
    }
}

/// The tags a FastMCP server put on `tool`: `_meta.fastmcp.tags`
/// (FastMCP 3), else `_meta._fastmcp.tags` (FastMCP 2); entries that are
/// not strings are ignored.
fn fastmcp_tags(tool: &Tool) -> impl Iterator<Item = &str> + Clone {
    let meta = tool.meta.as_ref();
    let namespace = meta
        .and_then(|meta| meta.get("fastmcp").filter(|value| value.is_object()))
        .or_else(|| meta.and_then(|meta| meta.get("_fastmcp")));
    namespace
        .and_then(|namespace| namespace.get("tags"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn compiled<I, S>(patterns: I) -> impl Iterator<Item = (String, WildMatch)>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    patterns.into_iter().map(|pattern| {
        let pattern = pattern.into();
        let glob = WildMatch::new(&pattern);
        (pattern, glob)
    })
}

impl fmt::Debug for ToolFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let patterns = |list: &[(String, WildMatch)]| -> Vec<String> {
            list.iter().map(|(pattern, _)| pattern.clone()).collect()
        };
        f.debug_struct("ToolFilter")
            .field("include", &patterns(&self.include))
            .field("exclude", &patterns(&self.exclude))
            .field("include_tags", &self.include_tags)
            .field("exclude_tags", &self.exclude_tags)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_narrow_and_excludes_win() {
        let all = ToolFilter::new();
        assert!(all.allows("anything"));
        let filter = ToolFilter::new()
            .include(["read_*", "list"])
            .exclude(["read_secret?"]);
        assert!(filter.allows("read_file"));
        assert!(filter.allows("list"));
        assert!(!filter.allows("listing"), "an exact name is exact");
        assert!(!filter.allows("write_file"));
        assert!(!filter.allows("read_secrets"));
        assert!(filter.allows("read_secret"), "? is exactly one character");
        let only_excluded = ToolFilter::new().exclude(["delete_*"]);
        assert!(only_excluded.allows("read"));
        assert!(!only_excluded.allows("delete_repo"));
        assert!(format!("{filter:?}").contains("read_*"));
        let names = ["read_file", "list"];
        assert_eq!(filter.unmatched(names.into_iter()), ["read_secret?"]);
        let typo = ToolFilter::new()
            .include(["raed_*", "list"])
            .exclude(["*_delete"]);
        assert_eq!(typo.unmatched(names.into_iter()), ["raed_*", "*_delete"]);
    }

    fn tool(name: &str, meta: Value) -> Tool {
        serde_json::from_value(serde_json::json!({ "name": name, "_meta": meta })).unwrap()
    }

    #[test]
    fn fastmcp_tags_in_either_namespace_select_tools() {
        let v3 = tool(
            "search",
            serde_json::json!({ "fastmcp": { "tags": ["read", "web"] } }),
        );
        let v2 = tool(
            "delete",
            serde_json::json!({ "_fastmcp": { "tags": ["admin"] } }),
        );
        let untagged = tool("plain", serde_json::json!({}));
        let all = ToolFilter::new();
        assert!(all.allows_tool(&v3) && all.allows_tool(&untagged));
        let reads = ToolFilter::new().include_tags(["read"]);
        assert!(reads.allows_tool(&v3));
        assert!(
            !reads.allows_tool(&v2),
            "a tool without the tag is left out"
        );
        assert!(!reads.allows_tool(&untagged), "so is a tool without tags");
        let no_admin = ToolFilter::new().exclude_tags(["admin"]);
        assert!(no_admin.allows_tool(&v3) && no_admin.allows_tool(&untagged));
        assert!(!no_admin.allows_tool(&v2));
        let both = ToolFilter::new()
            .include_tags(["read"])
            .exclude_tags(["web"]);
        assert!(!both.allows_tool(&v3), "an excluded tag wins");
        let by_name = ToolFilter::new().exclude(["search"]).include_tags(["read"]);
        assert!(!by_name.allows_tool(&v3), "the name filter still applies");
        let newer_wins = tool(
            "x",
            serde_json::json!({ "fastmcp": { "tags": ["new"] }, "_fastmcp": { "tags": ["old"] } }),
        );
        assert!(ToolFilter::new()
            .include_tags(["new"])
            .allows_tool(&newer_wins));
        assert!(!ToolFilter::new()
            .include_tags(["old"])
            .allows_tool(&newer_wins));
    }
}
