//! An entry's `policies` block: this crate's own field, the per-server call
//! policies of [`CallPolicies`] under the names the command's flags have.
//!
//! ```json
//! "policies": { "maxInFlight": 4, "breaker": true, "retryRateLimited": true,
//!               "idleTimeoutSec": 30, "hedgeAfterMs": 200, "safeTools": ["search"],
//!               "replicas": ["https://b.example.com/mcp"] }
//! ```
//!
//! The idle timeout's cap is the entry's `tool_timeout_sec`, else the
//! default request limit. `replicas` are other URLs of the same remote
//! server (its headers go along; userinfo in a replica's URL replaces
//! `Authorization`), read once the entry's own request is made
//! ([`replicas`]). A field of the block this reader does not know
//! is an error: a policy misspelt would silently not apply.

use std::time::Duration;

use serde_json::{Map, Value};

use super::EntryProblem;
use crate::client::CallPolicies;

/// The block's field in an entry.
pub(super) const FIELD: &str = "policies";

/// The fields of the block.
const KNOWN: &[&str] = &[
    "maxInFlight",
    "breaker",
    "retryRateLimited",
    "idleTimeoutSec",
    "hedgeAfterMs",
    "safeTools",
    "replicas",
];

/// The entry's policies (none when it has no block); `cap` bounds an idle
/// timeout's whole call.
pub(super) fn read(
    entry: &Map<String, Value>,
    cap: Duration,
) -> Result<CallPolicies, EntryProblem> {
    let Some(block) = entry.get(FIELD) else {
        return Ok(CallPolicies::new());
    };
    let Value::Object(block) = block else {
        return Err(EntryProblem::WrongType { field: FIELD });
    };
    if let Some(unknown) = block.keys().find(|key| !KNOWN.contains(&key.as_str())) {
        return Err(EntryProblem::UnknownPolicy(unknown.clone()));
    }
    let mut policies = CallPolicies::new();
    if let Some(n) = block.get("maxInFlight") {
        let n = n
            .as_u64()
            .filter(|n| *n > 0)
            .ok_or(EntryProblem::WrongType {
                field: "maxInFlight",
            })?;
        policies = policies.with_max_in_flight(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if super::flag(block, "breaker", false)? {
        policies = policies.with_breaker();
    }
    if super::flag(block, "retryRateLimited", false)? {
        policies = policies.with_rate_limit_retry();
    }
    if let Some(idle) = super::durations::seconds(block, "idleTimeoutSec")? {
        policies = policies.with_idle_timeout(idle, cap.max(idle));
    }
    if let Some(after) = super::durations::milliseconds(block, "hedgeAfterMs")? {
        let tools = super::list(block, "safeTools")?;
        policies = policies.with_hedge(after, tools);
    } else if block.contains_key("safeTools") {
        return Err(EntryProblem::SafeToolsWithoutHedge);
    }
    Ok(policies)
}

/// `policies` with the block's `replicas`, each a request for another URL
/// of the server `request` reaches: an entry with a `url` only, each URL
/// (its `${...}` expanded) one [`ConnectRequest::http`](crate::ConnectRequest::http) takes.
pub(super) fn replicas(
    entry: &Map<String, Value>,
    request: &crate::ConnectRequest,
    policies: CallPolicies,
    variables: &super::Variables<'_>,
) -> Result<CallPolicies, EntryProblem> {
    let Some(Value::Object(block)) = entry.get(FIELD) else {
        return Ok(policies);
    };
    let urls = super::list(block, "replicas")?;
    if urls.is_empty() {
        return Ok(policies);
    }
    if request.target().http_url().is_none() {
        return Err(EntryProblem::ReplicasWithoutUrl);
    }
    let replicas = urls.iter().map(|url| {
        let url = super::expand(url, variables)?;
        request
            .for_replica(&url)
            .map_err(super::invalid("replicas"))
    });
    Ok(policies.with_replicas(replicas.collect::<Result<Vec<_>, _>>()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policies(entry: Value) -> Result<CallPolicies, EntryProblem> {
        read(entry.as_object().unwrap(), Duration::from_secs(60))
    }

    #[test]
    fn a_block_becomes_the_same_policies_as_the_flags() {
        let read = policies(json!({ "policies": {
            "maxInFlight": 4, "breaker": true, "retryRateLimited": true,
            "idleTimeoutSec": 30, "hedgeAfterMs": 200, "safeTools": ["search"]
        }}))
        .unwrap();
        let expected = CallPolicies::new()
            .with_max_in_flight(4)
            .with_breaker()
            .with_rate_limit_retry()
            .with_idle_timeout(Duration::from_secs(30), Duration::from_secs(60))
            .with_hedge(Duration::from_millis(200), ["search"]);
        assert_eq!(read, expected);
        assert!(policies(json!({})).unwrap().is_empty());
    }

    /// `replicas` become requests for the other URLs, headers kept and
    /// variables expanded; a stdio entry or a bad URL is refused.
    #[test]
    fn replicas_are_other_urls_of_a_remote_entry() {
        use crate::config::ServersConfig;
        let env = |name: &str| (name == "HOST").then(|| "b.example.com".to_owned());
        let text = r#"{ "mcpServers": {
            "remote": { "url": "https://a.example.com/mcp", "headers": { "X-Team": "t" },
                        "policies": { "replicas": ["https://${HOST}/mcp"] } },
            "local": { "command": "srv", "policies": { "replicas": ["https://b.example.com/mcp"] } },
            "bad": { "url": "https://a.example.com/mcp", "policies": { "replicas": ["ftp://x"] } }
        } }"#;
        let config = ServersConfig::parse_with(text, &env).unwrap();
        let remote = config.get("remote").unwrap();
        let expected = remote
            .request()
            .for_replica("https://b.example.com/mcp")
            .unwrap();
        let policies = CallPolicies::new().with_replicas([expected]);
        assert_eq!(remote.policies(), &policies);
        let problem = |name: &str| {
            let error = config.errors().find(|e| e.name() == name).unwrap();
            format!("{:?}", error.problem())
        };
        assert_eq!(problem("local"), "ReplicasWithoutUrl");
        assert!(
            problem("bad").starts_with("Invalid { field: \"replicas\""),
            "{}",
            problem("bad")
        );
    }

    #[test]
    fn a_misspelt_or_mistyped_policy_is_refused() {
        assert!(matches!(
            policies(json!({ "policies": { "maxInflight": 4 } })),
            Err(EntryProblem::UnknownPolicy(name)) if name == "maxInflight"
        ));
        for wrong in [
            json!({ "policies": [] }),
            json!({ "policies": { "maxInFlight": 0 } }),
            json!({ "policies": { "breaker": "yes" } }),
        ] {
            assert!(
                matches!(policies(wrong.clone()), Err(EntryProblem::WrongType { .. })),
                "{wrong}"
            );
        }
        assert!(matches!(
            policies(json!({ "policies": { "idleTimeoutSec": -1 } })),
            Err(EntryProblem::BadDuration { .. })
        ));
    }
}
