//! Which of a server's tools the catalogue shows: include and exclude
//! lists of exact names and globs (`*` any run of characters, `?` one),
//! matched against the name the server gave.

use std::fmt;

use wildmatch::WildMatch;

/// A server's tool filter. Empty, it shows every tool. With includes, a
/// tool must match one of them; a tool matching any exclude is left out
/// whatever the includes say.
#[derive(Clone, Default)]
pub struct ToolFilter {
    include: Vec<(String, WildMatch)>,
    exclude: Vec<(String, WildMatch)>,
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

    /// Whether the tool named `name` is shown.
    pub fn allows(&self, name: &str) -> bool {
        let included =
            self.include.is_empty() || self.include.iter().any(|(_, glob)| glob.matches(name));
        included && !self.exclude.iter().any(|(_, glob)| glob.matches(name))
    }
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
    }
}
