//! The MCP Registry's published `server.json` schema (2025-12-11), so the
//! registry stubs of a test serve only documents a real registry could
//! hold: a stub shaped by what the client happens to accept would prove
//! nothing about the registry.

use std::sync::OnceLock;

use serde_json::Value;

/// The schema's validating keywords, as published.
const SCHEMA: &str = include_str!("registry-server.schema.json");

/// Panics, naming each violation, unless `document` is valid against the
/// registry's published 2025-12-11 `server.json` schema. An API answer
/// (`{"server": ..., "_meta": ...}`) is checked by its `server`.
pub fn assert_published_server_json(document: &Value) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
        jsonschema::validator_for(&schema).expect("the schema compiles")
    });
    let server = match document.get("server") {
        Some(server) if document.get("name").is_none() => server,
        _ => document,
    };
    let problems: Vec<String> = validator
        .iter_errors(server)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    assert!(
        problems.is_empty(),
        "not a server.json the registry publishes (2025-12-11): {problems:#?}\n{server:#}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_schema_takes_the_registrys_own_example_and_refuses_mistakes() {
        let example = json!({
            "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
            "name": "io.github.user/weather",
            "description": "MCP server providing weather data and forecasts via OpenWeatherMap API",
            "version": "1.0.2",
            "packages": [ { "registryType": "npm", "identifier": "@user/weather", "version": "1.0.2",
                            "transport": { "type": "stdio" } } ]
        });
        assert_published_server_json(&example);
        assert_published_server_json(&json!({ "server": example, "_meta": {} }));
        let mistakes = [
            json!({ "name": "weather", "description": "d", "version": "1" }),
            json!({ "name": "io.github.user/weather", "version": "1" }),
            json!({ "name": "a/b", "description": "d", "version": "1",
                    "packages": [ { "registryType": "npm", "identifier": "x", "version": "latest",
                                    "transport": { "type": "stdio" } } ] }),
            json!({ "name": "a/b", "description": "d", "version": "1",
                    "packages": [ { "registryType": "mcpb", "identifier": "x", "fileSha256": "00",
                                    "transport": { "type": "stdio" } } ] }),
            json!({ "name": "a/b", "description": "d", "version": "1",
                    "remotes": [ { "type": "stdio", "url": "https://h.test/mcp" } ] }),
        ];
        for mistake in mistakes {
            let refused = std::panic::catch_unwind(|| assert_published_server_json(&mistake));
            assert!(refused.is_err(), "{mistake}");
        }
    }
}
