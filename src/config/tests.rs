use super::*;
use crate::request::Target;
use std::time::Duration;

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("s3cret-token".into()),
        "HOME" => Some("/home/ada".into()),
        _ => None,
    }
}

fn parse(text: &str) -> ServersConfig {
    ServersConfig::parse_with(text, &env).unwrap()
}

#[test]
fn claude_desktop_form_reads_stdio_and_remote_entries() {
    let config = parse(
        r#"{ "mcpServers": {
            "files": { "command": "npx", "args": ["-y", "server-files", "${HOME}/src"],
                       "env": { "API_KEY": "${env:TOKEN}" }, "cwd": "/tmp",
                       "disabled": false, "autoApprove": ["read"] },
            "remote": { "url": "https://mcp.example.com/mcp?tenant=7",
                        "headers": { "Authorization": "Bearer ${TOKEN}" } },
            "legacy": { "type": "sse", "url": "http://127.0.0.1:9/sse" },
            "strict": { "type": "streamable-http", "url": "http://127.0.0.1:9/mcp" },
            "vscode": { "type": "http", "url": "http://127.0.0.1:9/mcp" }
        } }"#,
    );
    assert_eq!(config.errors().count(), 0);
    let names: Vec<_> = config.servers().map(ServerConfig::name).collect();
    assert_eq!(names, ["files", "legacy", "remote", "strict", "vscode"]);

    let files = config.get("files").unwrap();
    assert!(matches!(files.request().target(), Target::Stdio(_)));
    assert_eq!(files.request().name(), "files");
    let unknown: Vec<_> = files.unknown_fields().collect();
    assert_eq!(unknown, ["autoApprove"]);
    assert_eq!(files.unknown()["autoApprove"], serde_json::json!(["read"]));

    let remote = config.get("remote").unwrap().request();
    let Target::Http { headers, .. } = remote.target() else {
        panic!("remote is HTTP")
    };
    assert_eq!(headers["authorization"], "Bearer s3cret-token");
    assert_eq!(remote.mode(), TransportMode::Auto);
    let mode = |name| config.get(name).unwrap().request().mode();
    assert_eq!(mode("legacy"), TransportMode::Sse);
    assert_eq!(mode("strict"), TransportMode::StreamableHttp);
    assert_eq!(mode("vscode"), TransportMode::Auto);

    // Nothing printable shows a secret, an argument or a query.
    let shown = format!("{config:?}");
    for secret in ["s3cret-token", "/home/ada", "tenant=7", "read"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
}

#[test]
fn vscode_forms_are_read() {
    let standalone = parse(
        r#"{ "servers": { "a": { "type": "stdio", "command": "srv" } },
                                "inputs": [] }"#,
    );
    assert!(standalone.get("a").is_some());
    let settings = parse(r#"{ "mcp": { "servers": { "b": { "url": "http://127.0.0.1:1/" } } } }"#);
    assert!(settings.get("b").is_some());
}

#[test]
fn one_bad_entry_names_itself_and_the_others_are_read() {
    let config = parse(
        r#"{ "mcpServers": {
            "good": { "command": "srv" },
            "both": { "command": "srv", "url": "http://127.0.0.1:1/" },
            "neither": { "args": [] },
            "args": { "command": "srv", "args": "one string" },
            "env": { "command": "srv", "env": { "K": 1 } },
            "kind": { "type": "websocket", "url": "ws://x" },
            "mismatch": { "type": "sse", "command": "srv" },
            "missing": { "url": "http://127.0.0.1:1/", "headers": { "X-Key": "${NOPE}" } },
            "input": { "command": "${input:path}" },
            "reserved": { "url": "http://127.0.0.1:1/", "headers": { "Mcp-Session-Id": "s3cret-token" } },
            "url": { "url": "ftp://127.0.0.1/" },
            "empty": { "command": "" },
            "tls_socket": { "url": "https://127.0.0.1/mcp", "socket": "/run/mcp.sock" },
            "scalar": 7
        } }"#,
    );
    assert_eq!(config.servers().count(), 1);
    let problem = |name: &str| {
        config
            .errors()
            .find(|e| e.name() == name)
            .map(EntryError::problem)
            .unwrap_or_else(|| panic!("{name} was not refused"))
    };
    use EntryProblem as P;
    assert!(matches!(problem("both"), P::CommandAndUrl));
    assert!(matches!(problem("neither"), P::NoCommandOrUrl));
    assert!(matches!(problem("args"), P::WrongType { field: "args" }));
    assert!(matches!(problem("env"), P::WrongType { field: "env" }));
    assert!(matches!(problem("kind"), P::UnknownType));
    assert!(matches!(problem("mismatch"), P::TypeMismatch));
    assert!(matches!(problem("missing"), P::MissingVariable { variable } if variable == "NOPE"));
    assert!(matches!(problem("input"), P::MissingInputs { .. }));
    assert!(matches!(
        problem("reserved"),
        P::Invalid {
            field: "headers",
            ..
        }
    ));
    assert!(matches!(problem("url"), P::Invalid { field: "url", .. }));
    assert!(matches!(
        problem("empty"),
        P::Invalid {
            field: "command",
            ..
        }
    ));
    assert!(matches!(problem("scalar"), P::NotAnObject));
    // Issue 63, item 18: refused when read (and so by --check), at its field.
    assert!(matches!(problem("tls_socket"), P::SocketNeedsHttp));
    assert_eq!(problem("tls_socket").field(), Some("socket"));
    // Errors name the entry and never show a value.
    for error in config.errors() {
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        assert!(text.contains(error.name()), "{text}");
        assert!(!text.contains("s3cret-token"), "{text}");
    }
}

#[test]
fn whole_file_failures_are_typed() {
    let refused = |text: &str| ServersConfig::parse_with(text, &env).unwrap_err();
    assert!(matches!(
        refused("{ \"mcpServers\": "),
        ConfigFileError::Json { line: 1, .. }
    ));
    assert!(matches!(refused("[]"), ConfigFileError::NotAnObject));
    assert!(matches!(refused("{}"), ConfigFileError::NoServers));
    assert!(matches!(
        refused(r#"{ "mcpServers": {}, "servers": {} }"#),
        ConfigFileError::BothForms
    ));
    assert!(matches!(
        ServersConfig::read("/nonexistent/mcp.json"),
        Err(ConfigFileError::Io(_))
    ));
    assert_eq!(parse(r#"{ "mcpServers": {} }"#).entries().len(), 0);
}

/// Issue 40, item 14: `.vscode/mcp.json` as VS Code writes it (comments,
/// trailing commas) and a file Notepad saved (a byte-order mark) are read;
/// the audit's questions: a file of no end is refused unread.
#[test]
fn jsonc_a_bom_and_a_file_without_end() {
    let dir = std::env::temp_dir().join(format!("mcp-connect-jsonc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.json");
    std::fs::write(
        &path,
        "\u{feff}{\n  // VS Code\n  \"servers\": {\n    \"a\": { \"url\": \"http://127.0.0.1:9/mcp\", },\n  },\n}\n",
    )
    .unwrap();
    let config = ServersConfig::read(&path).expect("read");
    assert_eq!(config.servers().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
    let endless = ServersConfig::read("/dev/zero").unwrap_err();
    assert!(
        matches!(endless, ConfigFileError::TooLarge { .. }),
        "{endless:?}"
    );
}

#[test]
fn a_socket_field_reaches_a_remote_server_over_a_unix_socket() {
    let config = parse(
        r#"{ "mcpServers": {
            "local": { "url": "http://localhost/mcp", "socket": "/run/srv.sock" },
            "tcp": { "url": "http://localhost/mcp" },
            "stdio": { "command": "srv", "socket": "/run/srv.sock" }
        } }"#,
    );
    let local = config.get("local").unwrap().request();
    assert_eq!(
        local.target().unix_socket(),
        Some(std::path::Path::new("/run/srv.sock"))
    );
    assert_eq!(config.get("local").unwrap().unknown_fields().count(), 0);
    let tcp = config.get("tcp").unwrap().request();
    assert_ne!(local.target().identity(), tcp.target().identity());
    let stdio = config.errors().next().unwrap();
    assert_eq!(stdio.name(), "stdio");
    assert!(matches!(stdio.problem(), EntryProblem::SocketWithoutUrl));
}

#[test]
fn a_proxy_or_ca_of_the_entrys_own_is_read_or_refused_where_it_is() {
    let config = parse(
        r#"{ "mcpServers": {
            "proxied": { "url": "https://a.example/mcp", "proxy": "http://u:p@127.0.0.1:3128" },
            "direct": { "url": "https://a.example/mcp", "proxy": false },
            "plain": { "url": "https://a.example/mcp" },
            "stdio": { "command": "srv", "cacert": "/ca.pem" },
            "socket": { "url": "http://localhost/mcp", "socket": "/s", "proxy": false },
            "missing": { "url": "https://a.example/mcp", "cacert": "/nonexistent/ca.pem" },
            "bad": { "url": "https://a.example/mcp", "proxy": "ftp://127.0.0.1" },
            "number": { "url": "https://a.example/mcp", "proxy": 3128 }
        } }"#,
    );
    let url: http::Uri = "https://a.example/mcp".parse().unwrap();
    let proxied = config.get("proxied").unwrap().request();
    let through = proxied
        .http_client()
        .expect("its own client")
        .proxy_for(&url);
    assert_eq!(through.unwrap().to_string(), "http://127.0.0.1:3128/");
    let direct = config.get("direct").unwrap().request();
    assert_eq!(
        direct
            .http_client()
            .expect("its own client")
            .proxy_for(&url),
        None
    );
    assert!(config
        .get("plain")
        .unwrap()
        .request()
        .http_client()
        .is_none());
    assert_eq!(config.get("proxied").unwrap().unknown_fields().count(), 0);
    let problem = |name: &str| {
        let error = config.errors().find(|e| e.name() == name).expect(name);
        (
            format!("{:?}", error.problem()),
            error.problem().field().map(str::to_owned),
        )
    };
    let (stdio, field) = problem("stdio");
    assert!(stdio.starts_with("NeedsUrl"), "{stdio}");
    assert_eq!(field.as_deref(), Some("cacert"));
    assert!(problem("socket").0.starts_with("NotOverSocket"));
    assert_eq!(problem("missing").1.as_deref(), Some("cacert"));
    assert!(problem("missing").0.starts_with("CaFile"));
    assert!(problem("bad").0.starts_with("BadProxy"));
    assert!(problem("number").0.starts_with("WrongType"));
    assert!(!format!("{config:?}").contains("u:p@"), "proxy credentials");
}

#[test]
fn vscode_inputs_are_answered_by_the_application() {
    let text = r#"{
        "inputs": [{ "type": "promptString", "id": "key", "password": true }],
        "servers": { "api": { "type": "http", "url": "https://api.example/mcp",
                              "headers": { "X-Key": "${input:key}" } } }
    }"#;
    let none = |_: &str| None;
    let config = ServersConfig::parse_with(text, &none).unwrap();
    let error = config.errors().next().unwrap();
    assert!(matches!(error.problem(), EntryProblem::MissingInputs { ids } if ids == &["key"]));
    let variables = Variables::new(&none).with_input("key", "input-canary");
    let config = ServersConfig::parse_with_variables(text, &variables).unwrap();
    let api = config.get("api").unwrap();
    let Target::Http { headers, .. } = api.request().target().clone() else {
        panic!("remote");
    };
    assert_eq!(headers["x-key"], "input-canary");
    assert!(!format!("{config:?}{variables:?}").contains("input-canary"));
}

#[test]
fn a_codex_config_toml_is_read_into_the_same_servers() {
    let text = include_str!("../../tests/fixtures/configs/codex.toml");
    let env = |name: &str| match name {
        "FIGMA_OAUTH_TOKEN" => Some("figma-canary".to_owned()),
        "FIGMA_ORG" => Some("acme".to_owned()),
        _ => None,
    };
    let config = ServersConfig::parse_as(text, Format::Toml, &Variables::new(&env)).unwrap();
    assert_eq!(config.errors().count(), 0, "{config:?}");
    let names: Vec<_> = config.servers().map(ServerConfig::name).collect();
    assert_eq!(names, ["context7", "figma"]);
    // `enabled = false`: read, not to be started.
    let off: Vec<_> = config.disabled().map(ServerConfig::name).collect();
    assert_eq!(off, ["off"]);
    assert!(!config.get("off").unwrap().is_enabled());

    let context7 = config.get("context7").unwrap();
    let Target::Stdio(command) = context7.request().target().clone() else {
        panic!("stdio");
    };
    assert_eq!(command.program(), "npx");
    assert_eq!(context7.unknown_fields().count(), 0);
    assert_eq!(context7.included_tools(), ["resolve-library-id"]);
    assert_eq!(context7.startup_timeout(), Some(Duration::from_secs(20)));
    let limits = *context7.request().limits();
    assert_eq!(limits.handshake_timeout, Duration::from_secs(20));
    assert_eq!(limits.request_timeout, Duration::from_secs(60));

    let figma = config.get("figma").unwrap();
    assert_eq!(figma.unknown_fields().count(), 0);
    let Target::Http { headers, url, .. } = figma.request().target().clone() else {
        panic!("remote");
    };
    assert_eq!(url, "https://mcp.figma.com/mcp");
    assert_eq!(headers["authorization"], "Bearer figma-canary");
    assert_eq!(headers["x-figma-region"], "us-east-1");
    assert_eq!(headers["x-org"], "acme");
    assert!(!format!("{config:?}").contains("figma-canary"));

    // The token's variable unset: that server is refused, naming it.
    let none = |_: &str| None;
    let config = ServersConfig::parse_as(text, Format::Toml, &Variables::new(&none)).unwrap();
    let refused = config.errors().next().unwrap();
    assert_eq!(refused.name(), "figma");
    assert!(matches!(
        refused.problem(),
        EntryProblem::MissingVariable { variable } if variable == "FIGMA_OAUTH_TOKEN" || variable == "FIGMA_ORG"
    ));
    // A variable name that is not one never becomes a reference.
    let injected = r#"[mcp_servers.x]
url = "https://a.example/mcp"
bearer_token_env_var = "A} ${HOME"
"#;
    let config = ServersConfig::parse_as(injected, Format::Toml, &Variables::new(&env)).unwrap();
    assert!(matches!(
        config.errors().next().unwrap().problem(),
        EntryProblem::BadVariableName
    ));
    assert_eq!(
        Format::of_path(Path::new("/home/a/.codex/config.toml")),
        Format::Toml
    );
    assert_eq!(Format::of_path(Path::new("mcp.json")), Format::Json);
}

#[test]
fn enabled_and_disabled_are_read_from_every_host() {
    let config = parse(
        r#"{ "mcpServers": {
            "on": { "command": "srv", "enabled": true, "required": true },
            "plain": { "command": "srv" },
            "claude": { "command": "srv", "disabled": true },
            "codex": { "command": "srv", "enabled": false },
            "odd": { "command": "srv", "disabled": "yes" }
        } }"#,
    );
    let on: Vec<_> = config.servers().map(ServerConfig::name).collect();
    assert_eq!(on, ["on", "plain"]);
    assert!(config.get("on").unwrap().is_required());
    assert!(!config.get("plain").unwrap().is_required());
    let off: Vec<_> = config.disabled().map(ServerConfig::name).collect();
    assert_eq!(off, ["claude", "codex"]);
    assert!(config
        .get("claude")
        .unwrap()
        .unknown_fields()
        .next()
        .is_none());
    let odd = config.errors().next().unwrap();
    assert!(matches!(
        odd.problem(),
        EntryProblem::WrongType { field: "disabled" }
    ));
}

#[test]
fn the_top_level_quotas_are_rates_per_tool_pattern_and_a_bad_one_is_refused() {
    let config =
        parse(r#"{ "mcpServers": {}, "quotas": { "*_delete": "1/min", "read_*": "100/hour" } }"#);
    let quotas: Vec<_> = (config.tool_quotas().iter())
        .map(|(tool, rate)| (tool.as_str(), rate.count(), rate.period().as_secs()))
        .collect();
    assert_eq!(quotas, [("*_delete", 1, 60), ("read_*", 100, 3600)]);
    for bad in [r#""10/min""#, r#"{ "x": "often" }"#, r#"{ "x": 10 }"#] {
        let text = format!(r#"{{ "mcpServers": {{}}, "quotas": {bad} }}"#);
        let refused = ServersConfig::parse_with(&text, &env).unwrap_err();
        assert!(
            matches!(refused, ConfigFileError::Quota),
            "{bad}: {refused:?}"
        );
    }
}
