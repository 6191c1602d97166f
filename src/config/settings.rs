//! The per-server settings a config entry may carry beside its launch: which
//! tools to show and how long to wait, under the names each host writes.
//!
//! Tools: Codex's `enabled_tools` / `disabled_tools`, Gemini CLI's
//! `includeTools` / `excludeTools`, and TBXark's mcp-proxy `toolFilter`
//! (`{"mode": "allow" | "block", "list": [...]}`); names or globs (`*`, `?`),
//! matched against the name the server gave. FastMCP's `include_tags` /
//! `exclude_tags` select tools by the tags a FastMCP server gives them;
//! 1MCP's `tags` label the server itself, for an application choosing
//! servers by label. Time: Codex's
//! `startup_timeout_sec` (or `startup_timeout_ms`) and `tool_timeout_sec`.
//! A bare `timeout` is left alone: Cline writes seconds there and Gemini CLI
//! milliseconds, so no reading of it is right for both. Coming back, this
//! crate's own: `keepTrying` (the pace a group tries the server again after
//! an outage) and `coolDown` (the pace of reconnects after its session
//! died), each `{ "baseMs": 1000, "maxMs": 60000 }`: full jitter under a
//! ceiling doubling from the base to the max.

use std::time::Duration;

use serde_json::{Map, Value};

use super::durations::{milliseconds, seconds};
use super::EntryProblem;
use crate::client::CallPolicies;
use crate::layers::recovery::Backoff;
use crate::request::Limits;

/// The fields read here.
pub(super) const FIELDS: &[&str] = &[
    "enabled_tools",
    "disabled_tools",
    "includeTools",
    "excludeTools",
    "toolFilter",
    "tools",
    "prefix",
    "include_tags",
    "exclude_tags",
    "tags",
    "keepTrying",
    "coolDown",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    super::policies::FIELD,
    super::oauth::FIELD,
];

/// What an entry says of its tools and its time.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Settings {
    /// Names or globs a tool must match one of (none: every tool).
    pub(super) include_tools: Vec<String>,
    /// Names or globs of tools left out.
    pub(super) exclude_tools: Vec<String>,
    /// Tool tags a tool must carry one of (none: every tool).
    pub(super) include_tags: Vec<String>,
    /// Tool tags whose tools are left out.
    pub(super) exclude_tags: Vec<String>,
    /// The server's own labels.
    pub(super) tags: Vec<String>,
    /// What the server's names are prefixed with instead of its name.
    pub(super) prefix: Option<String>,
    /// The pace of trying again after an outage (`keepTrying`).
    pub(super) keep_trying: Option<Backoff>,
    /// The pace of reconnects after the session died (`coolDown`).
    pub(super) cool_down: Option<Backoff>,
    /// How long starting the server and its handshake may take.
    pub(super) startup_timeout: Option<Duration>,
    /// How long each call on the session may take.
    pub(super) tool_timeout: Option<Duration>,
    /// The entry's `policies` block.
    pub(super) policies: CallPolicies,
    /// The entry's `oauth` block.
    pub(super) oauth: Option<super::OAuthSettings>,
}

impl Settings {
    pub(super) fn read(entry: &Map<String, Value>) -> Result<Self, EntryProblem> {
        let mut settings = Settings {
            include_tools: names(entry, "enabled_tools")?,
            exclude_tools: names(entry, "disabled_tools")?,
            include_tags: names(entry, "include_tags")?,
            exclude_tags: names(entry, "exclude_tags")?,
            tags: names(entry, "tags")?,
            keep_trying: backoff(entry, "keepTrying")?,
            cool_down: backoff(entry, "coolDown")?,
            ..Settings::default()
        };
        settings.include_tools.extend(names(entry, "includeTools")?);
        if let Some(tools) = entry.get("tools") {
            let wrong = || EntryProblem::WrongType { field: "tools" };
            let Value::Object(tools) = tools else {
                return Err(wrong());
            };
            if tools.keys().any(|key| key != "include" && key != "exclude") {
                return Err(wrong());
            }
            let list = |field| names(tools, field).map_err(|_| wrong());
            settings.include_tools.extend(list("include")?);
            settings.exclude_tools.extend(list("exclude")?);
        }
        settings.prefix = match entry.get("prefix") {
            None => None,
            Some(Value::String(prefix)) if !prefix.is_empty() => Some(prefix.clone()),
            Some(_) => return Err(EntryProblem::WrongType { field: "prefix" }),
        };
        settings.exclude_tools.extend(names(entry, "excludeTools")?);
        if let Some(filter) = entry.get("toolFilter") {
            let wrong = EntryProblem::WrongType {
                field: "toolFilter",
            };
            let Value::Object(filter) = filter else {
                return Err(wrong);
            };
            let list = names(filter, "list")?;
            match filter.get("mode").and_then(Value::as_str) {
                Some("allow") => settings.include_tools.extend(list),
                Some("block") => settings.exclude_tools.extend(list),
                _ => return Err(EntryProblem::UnknownFilterMode),
            }
        }
        settings.startup_timeout = match seconds(entry, "startup_timeout_sec")? {
            Some(limit) => Some(limit),
            None => milliseconds(entry, "startup_timeout_ms")?,
        };
        settings.tool_timeout = seconds(entry, "tool_timeout_sec")?;
        let cap = settings
            .tool_timeout
            .unwrap_or(Limits::default().request_timeout);
        settings.policies = super::policies::read(entry, cap)?;
        Ok(settings)
    }

    /// `limits` with this entry's time limits: the start-up limit bounds the
    /// probe and each handshake request (for a stdio server, its start and
    /// its answer to `initialize`); the tool limit every request on the
    /// session.
    pub(super) fn limits(&self, limits: &Limits) -> Limits {
        let mut limits = *limits;
        if let Some(startup) = self.startup_timeout {
            limits = limits
                .with_handshake_timeout(startup)
                .with_probe_timeout(limits.probe_timeout.min(startup));
        }
        if let Some(tool) = self.tool_timeout {
            limits = limits.with_request_timeout(tool);
        }
        limits
    }
}

impl super::ServerConfig {
    /// The tool names or globs the entry shows only (`enabled_tools`,
    /// `includeTools`, a `toolFilter` in `allow` mode); empty: every tool.
    pub fn included_tools(&self) -> &[String] {
        &self.settings.include_tools
    }

    /// The tool names or globs the entry leaves out (`disabled_tools`,
    /// `excludeTools`, a `toolFilter` in `block` mode).
    pub fn excluded_tools(&self) -> &[String] {
        &self.settings.exclude_tools
    }

    /// The tool tags the entry shows only (FastMCP's `include_tags`): a
    /// tool must carry one of them; empty: every tool.
    pub fn included_tags(&self) -> &[String] {
        &self.settings.include_tags
    }

    /// The tool tags whose tools the entry leaves out (FastMCP's
    /// `exclude_tags`).
    pub fn excluded_tags(&self) -> &[String] {
        &self.settings.exclude_tags
    }

    /// The server's own labels (1MCP's `tags`), for an application that
    /// starts only the servers carrying a label.
    pub fn tags(&self) -> &[String] {
        &self.settings.tags
    }

    /// What the entry's `"prefix"` puts before its tools' names instead of
    /// the server's name ([`Server::with_prefix`](crate::group::Server::with_prefix)).
    pub fn prefix(&self) -> Option<&str> {
        self.settings.prefix.as_deref()
    }

    /// Whether the server is labelled `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.settings.tags.iter().any(|own| own == tag)
    }

    /// The pace of trying the server again after an outage
    /// (`keepTrying`), for [`Server::with_retry`](crate::group::Server::with_retry).
    pub fn keep_trying(&self) -> Option<Backoff> {
        self.settings.keep_trying
    }

    /// The pace of reconnects after the server's session died
    /// (`coolDown`), for [`Server::with_cool_down`](crate::group::Server::with_cool_down).
    pub fn cool_down(&self) -> Option<Backoff> {
        self.settings.cool_down
    }

    /// The entry's start-up limit (`startup_timeout_sec` or `_ms`), already
    /// in [`request`](Self::request)'s limits as its probe and handshake
    /// limits.
    pub fn startup_timeout(&self) -> Option<Duration> {
        self.settings.startup_timeout
    }

    /// The entry's limit on each call (`tool_timeout_sec`), already in
    /// [`request`](Self::request)'s limits as its request limit.
    pub fn tool_timeout(&self) -> Option<Duration> {
        self.settings.tool_timeout
    }

    /// The call policies of the entry's `policies` block (bulkhead,
    /// breaker, rate-limit retry, idle timeout, hedging); empty without one.
    pub fn policies(&self) -> &CallPolicies {
        &self.settings.policies
    }

    /// `base` with the entry's time limits over it: for an application (or
    /// the command) that sets its own limits on [`request`](Self::request)
    /// and still wants what the entry says of its server.
    pub fn limits_over(&self, base: Limits) -> Limits {
        self.settings.limits(&base)
    }
}

/// The smallest `baseMs` a pace (`keepTrying`, `coolDown`) may have: a
/// file cannot make a server be tried again in a tight loop.
pub const PACE_FLOOR: Duration = Duration::from_millis(100);

/// `{ "baseMs": B, "maxMs": M }` with [`PACE_FLOOR`] <= B <= M; absent is
/// `None`.
fn backoff(
    entry: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<Backoff>, EntryProblem> {
    let Some(block) = entry.get(field) else {
        return Ok(None);
    };
    let bad = || EntryProblem::BadDuration { field };
    let Value::Object(block) = block else {
        return Err(EntryProblem::WrongType { field });
    };
    if block.keys().any(|key| key != "baseMs" && key != "maxMs") {
        return Err(bad());
    }
    let base = milliseconds(block, "baseMs").map_err(|_| bad())?;
    let max = milliseconds(block, "maxMs").map_err(|_| bad())?;
    match (base, max) {
        (Some(base), Some(_)) if base < PACE_FLOOR => Err(EntryProblem::BelowFloor {
            field,
            floor_ms: PACE_FLOOR.as_millis() as u64,
        }),
        (Some(base), Some(max)) if base > max => Err(EntryProblem::BaseOverMax { field }),
        (Some(base), Some(max)) => Ok(Some(Backoff::new(base, max))),
        _ => Err(bad()),
    }
}

/// A list of tool names or globs; absent is empty.
fn names(entry: &Map<String, Value>, field: &'static str) -> Result<Vec<String>, EntryProblem> {
    Ok(super::list(entry, field)?
        .into_iter()
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(entry: Value) -> Result<Settings, EntryProblem> {
        Settings::read(entry.as_object().unwrap())
    }

    #[test]
    fn every_hosts_tool_lists_and_times_are_read() {
        let codex = read(
            json!({ "enabled_tools": ["read_*"], "disabled_tools": ["read_secret"],
            "startup_timeout_sec": 2.5, "tool_timeout_sec": 30 }),
        )
        .unwrap();
        assert_eq!(codex.include_tools, ["read_*"]);
        assert_eq!(codex.exclude_tools, ["read_secret"]);
        assert_eq!(codex.startup_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(codex.tool_timeout, Some(Duration::from_secs(30)));
        let gemini = read(json!({ "includeTools": ["a"], "excludeTools": ["b"] })).unwrap();
        assert_eq!(
            (gemini.include_tools, gemini.exclude_tools),
            (vec!["a".to_owned()], vec!["b".to_owned()])
        );
        let allow = read(json!({ "toolFilter": { "mode": "allow", "list": ["x"] } })).unwrap();
        assert_eq!(allow.include_tools, ["x"]);
        let block = read(json!({ "toolFilter": { "mode": "block", "list": ["y"] } })).unwrap();
        assert_eq!(block.exclude_tools, ["y"]);
        let own = read(
            json!({ "tools": { "include": ["read_*"], "exclude": ["*_delete"] },
            "prefix": "gh" }),
        )
        .unwrap();
        assert_eq!(own.include_tools, ["read_*"]);
        assert_eq!(own.exclude_tools, ["*_delete"]);
        assert_eq!(own.prefix.as_deref(), Some("gh"));
        let fastmcp =
            read(json!({ "include_tags": ["read"], "exclude_tags": ["admin"], "tags": ["web"] }))
                .unwrap();
        assert_eq!(fastmcp.include_tags, ["read"]);
        assert_eq!(fastmcp.exclude_tags, ["admin"]);
        assert_eq!(fastmcp.tags, ["web"]);
        let pace = read(json!({ "keepTrying": { "baseMs": 500, "maxMs": 30000 },
            "coolDown": { "baseMs": 100, "maxMs": 100 } }))
        .unwrap();
        let ms = Duration::from_millis;
        assert_eq!(pace.keep_trying, Some(Backoff::new(ms(500), ms(30_000))));
        assert_eq!(pace.cool_down, Some(Backoff::new(ms(100), ms(100))));
        let old = read(json!({ "startup_timeout_ms": 1500 })).unwrap();
        assert_eq!(old.startup_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(read(json!({ "timeout": 60 })).unwrap(), Settings::default());
    }

    #[test]
    fn mistakes_name_their_field() {
        let problem = |entry| read(entry).unwrap_err().to_string();
        assert!(problem(json!({ "enabled_tools": "read" })).contains("enabled_tools"));
        assert!(problem(json!({ "excludeTools": [1] })).contains("excludeTools"));
        assert!(problem(json!({ "toolFilter": ["x"] })).contains("toolFilter"));
        assert!(problem(json!({ "tools": ["x"] })).contains("tools"));
        assert!(problem(json!({ "tools": { "allow": ["x"] } })).contains("tools"));
        assert!(problem(json!({ "tools": { "include": "x" } })).contains("tools"));
        assert!(problem(json!({ "prefix": "" })).contains("prefix"));
        assert!(problem(json!({ "prefix": 1 })).contains("prefix"));
        assert!(problem(json!({ "include_tags": "read" })).contains("include_tags"));
        assert!(problem(json!({ "tags": [true] })).contains("tags"));
        for bad in [
            json!({ "baseMs": 10 }),
            json!({ "baseMs": 0, "maxMs": 5 }),
            json!({ "baseMs": 1, "maxMs": 5, "jitter": false }),
        ] {
            let problem = read(json!({ "keepTrying": bad })).unwrap_err();
            assert!(
                matches!(
                    problem,
                    EntryProblem::BadDuration {
                        field: "keepTrying"
                    }
                ),
                "{problem:?}"
            );
        }
        assert!(problem(json!({ "coolDown": 5 })).contains("coolDown"));
        // Issue 63, items 13 and 17: a pace that would make a reconnect
        // loop is refused, and base over max says so.
        assert!(matches!(
            read(json!({ "keepTrying": { "baseMs": 1, "maxMs": 1 } })),
            Err(EntryProblem::BelowFloor {
                field: "keepTrying",
                floor_ms: 100
            })
        ));
        assert!(matches!(
            read(json!({ "coolDown": { "baseMs": 1, "maxMs": 60000 } })),
            Err(EntryProblem::BelowFloor {
                field: "coolDown",
                ..
            })
        ));
        assert_eq!(
            problem(json!({ "keepTrying": { "baseMs": 500, "maxMs": 200 } })),
            "`keepTrying`'s baseMs is larger than its maxMs"
        );
        assert!(matches!(
            read(json!({ "toolFilter": { "mode": "deny", "list": [] } })),
            Err(EntryProblem::UnknownFilterMode)
        ));
        for bad in [json!(0), json!(-1), json!("10"), json!(1e300)] {
            let problem = read(json!({ "tool_timeout_sec": bad })).unwrap_err();
            assert!(
                matches!(
                    problem,
                    EntryProblem::BadDuration {
                        field: "tool_timeout_sec"
                    }
                ),
                "{problem:?}"
            );
        }
        assert!(read(json!({ "startup_timeout_ms": 1.5 })).is_err());
    }

    #[test]
    fn limits_take_the_entrys_times() {
        let settings = read(json!({ "startup_timeout_sec": 1, "tool_timeout_sec": 7 })).unwrap();
        let limits = settings.limits(&Limits::default());
        assert_eq!(limits.handshake_timeout, Duration::from_secs(1));
        assert!(limits.probe_timeout <= Duration::from_secs(1));
        assert_eq!(limits.request_timeout, Duration::from_secs(7));
        let none = Settings::default().limits(&Limits::default());
        assert_eq!(none.request_timeout, Limits::default().request_timeout);
    }
}
