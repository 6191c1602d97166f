//! Catalogue names: the tool-name rules of the 2026-07-28 specification,
//! and what a group does when two servers offer the same name.
//!
//! The rules (a `SHOULD` in the specification, enforced by several model
//! APIs): 1 to 128 characters, only ASCII letters, digits, `_`, `-` and `.`.
//! Many servers break them (a `/` in a name, a space); a catalogue is
//! usually handed to a model, so every name it shows is made to fit: a
//! character outside the set becomes `_`. The catalogue remembers which
//! server and which original name each catalogue name stands for, so a
//! changed name still reaches the right tool.
//!
//! The separator `__` belongs to the group, never to a server. A name a
//! server gives that holds it (a tool literally named `files__read`) is
//! always shown under its own server's prefix (`evil__files__read`), and a
//! server's name in a prefix never holds it nor ends in `_`, so the first
//! `__` of a catalogue name always ends the name of the server it routes
//! to: no server can take or block a name in another server's namespace,
//! whether that server is up, down or removed.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// The longest tool name the rules allow.
pub const MAX_TOOL_NAME: usize = 128;

/// Between the server's name and the tool's in a prefixed name.
pub const SEPARATOR: &str = "__";

/// Whether `name` follows the 2026-07-28 tool-name rules: 1 to 128
/// characters from `A-Z a-z 0-9 _ - .`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_TOOL_NAME && name.bytes().all(allowed)
}

fn allowed(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.')
}

/// `name` with every character the rules do not allow replaced by `_`
/// (an empty name becomes `_`). Not shortened: a name that is still too
/// long is left out of the catalogue rather than cut into one that may
/// mean another tool.
pub fn fit(name: &str) -> Cow<'_, str> {
    if name.is_empty() {
        return Cow::Borrowed("_");
    }
    if name.bytes().all(allowed) {
        return Cow::Borrowed(name);
    }
    name.chars()
        .map(|c| match u8::try_from(c) {
            Ok(byte) if allowed(byte) => c,
            _ => '_',
        })
        .collect()
}

/// A server's name as a prefix: made to fit, every run of `_` made one
/// and a trailing `_` dropped, so it never holds the separator nor runs
/// into it (`a_` and `__b` would make `a___b` ambiguous).
pub(crate) fn fit_server(server: &str) -> String {
    let fitted = fit(server);
    let mut out = String::with_capacity(fitted.len());
    for c in fitted.chars() {
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_end_matches('_');
    if trimmed.is_empty() {
        "server".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The common prefixed form, `server__tool`, both parts made to fit.
pub fn prefixed(server: &str, name: &str) -> String {
    format!("{}{SEPARATOR}{}", fit_server(server), fit(name))
}

/// Whether a server-given name, made to fit, holds the group's separator
/// and so must never be shown without its own server's prefix.
fn holds_separator(name: &str) -> bool {
    fit(name).contains(SEPARATOR)
}

/// What a naming rule is asked for one tool or prompt.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct NameRequest<'a> {
    /// The server's name in the group.
    pub server: &'a str,
    /// What its names are prefixed with: its own prefix
    /// ([`Server::with_prefix`](super::Server::with_prefix)), else its name.
    pub prefix: &'a str,
    /// The name the server gave it.
    pub name: &'a str,
    /// Whether another server in the catalogue offers the same name (after
    /// [`fit`]), for the same kind of item.
    pub collides: bool,
}

type Custom = Arc<dyn Fn(&NameRequest<'_>) -> String + Send + Sync>;

/// How the catalogue names tools and prompts.
///
/// Whatever the rule, every resulting name is checked: one that breaks the
/// rules ([`is_valid_tool_name`]) or that two items share is left out of
/// the catalogue and listed in
/// [`Catalogue::left_out`](super::Catalogue::left_out), never guessed at.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Naming {
    /// The default: a name only one server offers is kept (made to fit);
    /// a name several servers offer becomes `server__name` on every one of
    /// them, so the servers a group starts with get the same names on every
    /// start, whichever comes up first. Once the group has settled, a name
    /// handed out keeps meaning the same tool while that tool is in the
    /// catalogue: a server that joins later with the same name is the one
    /// prefixed, and a prefixed name stays prefixed when the other server
    /// leaves, so a model's next call, made with the name it was given,
    /// still reaches the tool. A name that holds `__` is always prefixed
    /// (see the module docs).
    #[default]
    OnCollision,
    /// Every name becomes `server__name`: stable whatever other servers
    /// join, at the price of longer names.
    Always,
    /// Names as the servers give them (made to fit), never prefixed: a
    /// name two servers offer is refused, left out of the catalogue with
    /// both servers named ([`LeftOut::others`](super::LeftOut::others)),
    /// for the application to settle (a filter, a prefix of its own, or
    /// another mode). Once the group has settled, a name handed out stays
    /// with its holder and the newcomer's tool is the one refused.
    Never,
    /// The application's own rule.
    Custom(Custom),
}

impl Naming {
    /// A rule of the application's own: `rule` gets the server, the
    /// original name and whether it collides, and returns the catalogue
    /// name.
    pub fn custom(rule: impl Fn(&NameRequest<'_>) -> String + Send + Sync + 'static) -> Self {
        Naming::Custom(Arc::new(rule))
    }

    /// The catalogue name for one item.
    pub(crate) fn name(&self, request: &NameRequest<'_>) -> String {
        match self {
            Naming::OnCollision if !request.collides && !holds_separator(request.name) => {
                fit(request.name).into_owned()
            }
            Naming::OnCollision | Naming::Always => prefixed(request.prefix, request.name),
            Naming::Never => fit(request.name).into_owned(),
            Naming::Custom(rule) => rule(request),
        }
    }
}

impl From<crate::config::PrefixMode> for Naming {
    fn from(mode: crate::config::PrefixMode) -> Self {
        match mode {
            crate::config::PrefixMode::Always => Naming::Always,
            crate::config::PrefixMode::Never => Naming::Never,
            _ => Naming::OnCollision,
        }
    }
}

impl fmt::Debug for Naming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Naming::OnCollision => "OnCollision",
            Naming::Always => "Always",
            Naming::Never => "Never",
            Naming::Custom(_) => "Custom",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_are_the_2026_ones() {
        assert!(is_valid_tool_name("getUser"));
        assert!(is_valid_tool_name("DATA_EXPORT_v2"));
        assert!(is_valid_tool_name("admin.tools.list"));
        assert!(is_valid_tool_name(&"a".repeat(128)));
        assert!(!is_valid_tool_name(&"a".repeat(129)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("user/update"));
        assert!(!is_valid_tool_name("two words"));
        assert!(!is_valid_tool_name("caf\u{e9}"));
    }

    #[test]
    fn names_are_made_to_fit_and_prefixed_on_collision() {
        assert_eq!(fit("user/update"), "user_update");
        assert_eq!(fit("caf\u{e9}"), "caf_");
        assert_eq!(prefixed("my files", "read"), "my_files__read");
        let request = |collides| NameRequest {
            server: "files",
            prefix: "files",
            name: "read",
            collides,
        };
        assert_eq!(Naming::OnCollision.name(&request(false)), "read");
        assert_eq!(Naming::OnCollision.name(&request(true)), "files__read");
        assert_eq!(Naming::Always.name(&request(false)), "files__read");
        let dotted = Naming::custom(|r| format!("{}.{}", r.server, r.name));
        assert_eq!(dotted.name(&request(false)), "files.read");
        assert_eq!(Naming::Never.name(&request(true)), "read");
        let own = NameRequest {
            prefix: "gh",
            ..request(true)
        };
        assert_eq!(Naming::OnCollision.name(&own), "gh__read");
        assert_eq!(Naming::Always.name(&own), "gh__read");
    }

    /// Issue 40, item 3: a server's name never holds the separator nor
    /// runs into it, and a server-given name holding it is prefixed.
    #[test]
    fn the_separator_is_the_groups() {
        assert_eq!(fit_server("my__files"), "my_files");
        assert_eq!(fit_server("a_"), "a");
        assert_eq!(fit_server("__"), "server");
        assert_eq!(prefixed("a_", "_b"), "a___b");
        let squatter = NameRequest {
            server: "evil",
            prefix: "evil",
            name: "files__read",
            collides: false,
        };
        assert_eq!(Naming::OnCollision.name(&squatter), "evil__files__read");
        let slashed = NameRequest {
            name: "files//read",
            ..squatter
        };
        assert_eq!(Naming::OnCollision.name(&slashed), "evil__files__read");
    }
}
