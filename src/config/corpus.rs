//! A corpus of config files as each host's documentation writes them,
//! read into the launches expected; and ten mistakes people make in them,
//! each reported with its line and column.

use super::{ConfigFileError, Format, ServersConfig, Variables};

/// Every variable the corpus names, and one input.
fn variables(name: &str) -> Option<String> {
    let known = [
        "GITHUB_TOKEN",
        "API_KEY",
        "HOME",
        "FIGMA_OAUTH_TOKEN",
        "FIGMA_ORG",
    ];
    known.contains(&name).then(|| format!("value-of-{name}"))
}

/// Each server's name and launch, in name order.
fn launches(text: &str, format: Format) -> Vec<String> {
    let env = variables;
    let read = Variables::new(&env)
        .with_input("github_mcp_pat", "pat")
        .with_workspace_folder("/work/project");
    let config = ServersConfig::parse_as(text, format, &read).unwrap();
    assert_eq!(
        config.errors().count(),
        0,
        "{:?}",
        config.errors().collect::<Vec<_>>()
    );
    config
        .servers()
        .map(|s| format!("{}: {}", s.name(), s.launch()))
        .collect()
}

#[test]
fn every_hosts_documented_file_reads_to_the_expected_servers() {
    let claude_desktop = r#"{ "mcpServers": {
        "filesystem": { "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"] },
        "github": { "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
            "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}" } } } }"#;
    assert_eq!(launches(claude_desktop, Format::Json), [
        "filesystem: stdio: npx -y @modelcontextprotocol/server-filesystem /Users/me/Desktop",
        "github: stdio: docker run -i --rm -e GITHUB_PERSONAL_ACCESS_TOKEN ghcr.io/github/github-mcp-server; env GITHUB_PERSONAL_ACCESS_TOKEN",
    ]);
    let cursor = r#"{ "mcpServers": {
        "remote": { "url": "https://api.example.com/mcp", "headers": { "API_KEY": "${env:API_KEY}" } },
        "local": { "command": "python", "args": ["server.py"], "env": { "API_KEY": "${env:API_KEY}" } } } }"#;
    assert_eq!(
        launches(cursor, Format::Json),
        [
            "local: stdio: python server.py; env API_KEY",
            "remote: http: https://api.example.com/mcp; headers api_key",
        ]
    );
    let vscode = r#"{
        // .vscode/mcp.json
        "inputs": [ { "type": "promptString", "id": "github_mcp_pat",
                      "description": "GitHub Personal Access Token", "password": true } ],
        "servers": {
            "github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/",
                        "headers": { "Authorization": "Bearer ${input:github_mcp_pat}" }, },
            "fetch": { "type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"],
                       "cwd": "${workspaceFolder}" },
        },
    }"#;
    assert_eq!(
        launches(vscode, Format::Json),
        [
            "fetch: stdio: uvx mcp-server-fetch; cwd ${workspaceFolder}",
            "github: http: https://api.githubcopilot.com/mcp/; headers authorization",
        ]
    );
    let codex = include_str!("../../tests/fixtures/configs/codex.toml");
    assert_eq!(
        launches(codex, Format::Toml),
        [
            "context7: stdio: npx -y @upstash/context7-mcp; env MY_ENV_VAR",
            "figma: http: https://mcp.figma.com/mcp; headers x-figma-region, x-org, authorization",
        ]
    );
    let standard = r#"{ "mcpServers": {
        "github": { "title": "GitHub", "type": "stdio", "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github@0.6.2"],
            "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}" } },
        "analytics": { "type": "streamable-http", "url": "https://mcp.analytics.example.com/mcp",
            "headers": { "X-API-Key": "${env:MISSING_KEY | env:API_KEY}" } },
        "slack": { "type": "streamable-http", "url": "https://mcp.slack.com/mcp",
            "oauth": { "clientId": "1601185624273.8899143856786",
                       "redirectUri": "http://localhost:3118/callback" } } } }"#;
    assert_eq!(launches(standard, Format::Standard), [
        "analytics: http: https://mcp.analytics.example.com/mcp; headers x-api-key",
        "github: stdio: npx -y @modelcontextprotocol/server-github@0.6.2; env GITHUB_PERSONAL_ACCESS_TOKEN",
        "slack: http: https://mcp.slack.com/mcp",
    ]);
    let tbxark = r#"{
        "mcpProxy": { "baseURL": "https://mcp.example.com", "addr": ":9090", "name": "MCP Proxy" },
        "mcpServers": {
            "github": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}" },
                "options": { "toolFilter": { "mode": "block", "list": ["create_repository"] } } },
            "amap": { "url": "https://mcp.amap.com/sse?key=${API_KEY}" } } }"#;
    assert_eq!(launches(tbxark, Format::Json), [
        "amap: http: https://mcp.amap.com/sse?key=***",
        "github: stdio: npx -y @modelcontextprotocol/server-github; env GITHUB_PERSONAL_ACCESS_TOKEN",
    ]);
    let fastmcp = r#"{ "mcpServers": {
        "weather": { "url": "https://weather.example.com/mcp", "transport": "http",
            "include_tags": ["forecast"], "exclude_tags": ["admin"] },
        "legacy": { "url": "https://old.example.com/events", "transport": "sse" },
        "assistant": { "command": "python", "args": ["./assistant_server.py"],
            "env": { "DEBUG": "true" }, "tags": ["local"] } } }"#;
    assert_eq!(
        launches(fastmcp, Format::Json),
        [
            "assistant: stdio: python ./assistant_server.py; env DEBUG",
            "legacy: http: https://old.example.com/events",
            "weather: http: https://weather.example.com/mcp",
        ]
    );
    let config = ServersConfig::parse(fastmcp).unwrap();
    let weather = config.get("weather").unwrap();
    assert_eq!(
        (weather.included_tags(), weather.excluded_tags()),
        (&["forecast".to_owned()][..], &["admin".to_owned()][..])
    );
    assert!(config.get("assistant").unwrap().has_tag("local"));
    let legacy = config.get("legacy").unwrap().request();
    assert_eq!(legacy.mode(), crate::request::TransportMode::Sse);
    assert_eq!(weather.unknown_fields().count(), 0);
}

/// One mistaken entry's problem and where it is (line and column from 1).
fn mistake(text: &str, format: Format) -> (String, (usize, usize)) {
    let env = variables;
    match ServersConfig::parse_as(text, format, &Variables::new(&env)) {
        Ok(config) => {
            let error = config.errors().next().expect("the entry is refused");
            let problem = format!("{:?}", error.problem());
            let name = problem.split([' ', '(', '{']).next().unwrap().to_owned();
            (name, error.line_column().expect("a position"))
        }
        Err(ConfigFileError::Json { line, column }) => ("Json".into(), (line, column)),
        Err(ConfigFileError::Toml { line, column }) => ("Toml".into(), (line, column)),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn ten_typical_mistakes_are_reported_where_they_are() {
    let cases: [(&str, Format, &str, (usize, usize)); 10] = [
        // The standard requires `type`.
        ("{ \"mcpServers\": {\n  \"s\": { \"command\": \"srv\" } } }", Format::Standard, "MissingType", (2, 3)),
        // An input the file never declared, or the application never gave
        // (a reference's problem is placed at its entry).
        ("{ \"servers\": {\n  \"s\": { \"url\": \"https://a/mcp\",\n    \"headers\": { \"Authorization\": \"${input:nope}\" } } } }", Format::Json, "MissingInputs", (2, 3)),
        // `${` never closed.
        ("{ \"mcpServers\": {\n  \"s\": {\n    \"command\": \"srv\", \"args\": [\"${HOME\"] } } }", Format::Json, "UnterminatedVariable", (2, 3)),
        // A TOML table header without its bracket.
        ("[mcp_servers.s\ncommand = \"srv\"\n", Format::Toml, "Toml", (1, 15)),
        // Both a command and a URL.
        ("{ \"mcpServers\": {\n  \"s\": { \"command\": \"srv\",\n    \"url\": \"https://a/mcp\" } } }", Format::Json, "CommandAndUrl", (3, 5)),
        // A comma missing between two entries.
        ("{ \"mcpServers\": {\n  \"a\": { \"command\": \"srv\" }\n  \"b\": { \"command\": \"srv\" } } }", Format::Json, "Json", (3, 3)),
        // `args` as one string, as a shell would take it.
        ("{ \"mcpServers\": {\n  \"s\": { \"command\": \"srv\",\n    \"args\": \"--port 8080\" } } }", Format::Json, "WrongType", (3, 5)),
        // A transport this reader does not know.
        ("{ \"mcpServers\": {\n  \"s\": { \"url\": \"https://a/mcp\",\n    \"type\": \"websocket\" } } }", Format::Json, "UnknownType", (3, 5)),
        // A number where the environment takes strings.
        ("{ \"mcpServers\": {\n  \"s\": { \"command\": \"srv\",\n    \"env\": { \"PORT\": 8080 } } } }", Format::Json, "WrongType", (3, 5)),
        // A timeout below zero.
        ("[mcp_servers.s]\ncommand = \"srv\"\ntool_timeout_sec = -5\n", Format::Toml, "BadDuration", (3, 1)),
    ];
    for (text, format, expected, at) in cases {
        assert_eq!(mistake(text, format), (expected.to_owned(), at), "{text}");
    }
}

/// The same entry is refused by the standard's reader where a host's is
/// lenient: an `http` type, a header on a stdio entry, a name with a space.
#[test]
fn the_standard_is_stricter_than_the_hosts() {
    for entry in [
        r#""s": { "type": "http", "url": "https://a/mcp" }"#,
        r#""s": { "type": "stdio", "command": "srv", "headers": { "X": "y" } }"#,
        r#""my server": { "type": "stdio", "command": "srv" }"#,
    ] {
        let text = format!("{{ \"mcpServers\": {{ {entry} }} }}");
        let env = variables;
        let read = |format| ServersConfig::parse_as(&text, format, &Variables::new(&env)).unwrap();
        assert_eq!(read(Format::Json).errors().count(), 0, "{entry}");
        assert_eq!(read(Format::Standard).errors().count(), 1, "{entry}");
    }
}
