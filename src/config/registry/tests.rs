use serde_json::{json, Value};

use super::super::{EntryProblem, ServersConfig, Variables};
use crate::registry::{RegistryError, RegistryOptions};
use crate::request::Target;
use crate::testkit::{Recorded, Script, ScriptServer};
use crate::transport::HttpClient;

/// A registry stub: `io.github.acme/files` at 1.2.0 (and `latest`) with an
/// npm package and a remote whose token is a secret variable.
async fn registry() -> ScriptServer {
    ScriptServer::start(|request: &Recorded| {
        let files = "/v0.1/servers/io.github.acme%2Ffiles/versions/";
        match request.path.strip_prefix(files) {
            Some("1.2.0" | "latest") => {
                let answer = json!({ "server": files_json(), "_meta": {} });
                crate::testkit::assert_published_server_json(&answer);
                Script::Json(200, answer)
            }
            _ => Script::Status(404),
        }
    })
    .await
}

fn files_json() -> Value {
    json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.github.acme/files",
        "description": "Files of a tenant",
        "version": "1.2.0",
        "packages": [ {
            "registryType": "npm", "identifier": "@acme/files", "version": "1.2.0",
            "transport": { "type": "stdio" },
            "environmentVariables": [
                { "name": "FILES_TOKEN", "description": "Token", "isRequired": true, "isSecret": true }
            ]
        } ],
        "remotes": [ { "type": "streamable-http", "url": "https://{tenant}.files.test/mcp",
                       "variables": { "tenant": { "description": "Tenant", "isRequired": true } },
                       "headers": [ { "name": "Authorization", "value": "Bearer {api_key}",
                                      "isRequired": true, "isSecret": true,
                                      "variables": { "api_key": { "isSecret": true } } } ] } ]
    })
}

fn options(server: &ScriptServer) -> RegistryOptions {
    let base = server.url().trim_end_matches("/mcp").to_owned();
    RegistryOptions::new(url::Url::parse(&base).unwrap())
}

const FILE: &str = r#"{ "mcpServers": {
    "files":  { "registry": "io.github.acme/files", "version": "1.2.0", "tool_timeout_sec": 5 },
    "latest": { "registry": "io.github.acme/files" },
    "both":   { "registry": "io.github.acme/files", "command": "x" }
} }"#;

const CANARY: &str = "CANARY-7f3a-secret";

/// The runtimes these tests have: npx alone, whatever this machine's PATH.
fn npx(program: &str) -> bool {
    program == "npx"
}

#[tokio::test]
async fn a_registry_entry_is_fetched_pinned_and_resolved_with_its_settings() {
    let server = registry().await;
    let none = |_: &str| None;
    let mut config = ServersConfig::parse_with(FILE, &none).unwrap();
    // Nothing fetched yet: each registry entry says so, at its field.
    let problems: Vec<_> = (config.errors())
        .map(|e| (e.name().to_owned(), e.problem().to_string()))
        .collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    let both = config.errors().find(|e| e.name() == "both").unwrap();
    assert!(matches!(both.problem(), EntryProblem::RegistryAndLaunch));
    assert_eq!(both.line_column(), Some((4, 17)));
    assert_eq!(config.registry_entries().count(), 2);

    let client = HttpClient::default_client();
    let documents = config.fetch_registry(&client, &options(&server)).await;
    let variables = Variables::new(&none).with_input("FILES_TOKEN", CANARY);
    config.resolve_registry_with(&documents, &variables, &npx);

    let files = config.get("files").expect("resolved");
    let Target::Stdio(command) = files.request().target().clone() else {
        panic!("the package, its runtime being on the PATH");
    };
    let argv: Vec<_> = std::iter::once(command.program())
        .chain(command.arguments())
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    assert_eq!(argv, ["npx", "-y", "--", "@acme/files@1.2.0"]);
    // The secret typed as an input is set for the child, under its name.
    let env: Vec<_> = command.environment().iter().collect();
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].0, "FILES_TOKEN");
    assert_eq!(env[0].1, CANARY);
    // The entry's own settings apply around it.
    assert_eq!(files.request().name(), "files");
    assert_eq!(
        files.tool_timeout(),
        Some(std::time::Duration::from_secs(5))
    );
    assert_eq!(
        files.launch().to_string(),
        "stdio: npx -y -- @acme/files@1.2.0; env FILES_TOKEN"
    );

    // Unpinned: refused, and never asked for; its report says why (issue
    // 64, item 10: the entry's message hid the reason).
    let latest = config.errors().find(|e| e.name() == "latest").unwrap();
    let said = latest.report().to_string();
    assert!(
        said.ends_with("io.github.acme/files is not pinned to a version"),
        "{said}"
    );
    assert!(
        matches!(latest.problem(), EntryProblem::Registry(e) if matches!(**e, RegistryError::Unpinned { .. })),
        "{:?}",
        latest.problem()
    );
    let asked: Vec<_> = server.recorded().into_iter().map(|r| r.path).collect();
    assert_eq!(
        asked,
        ["/v0.1/servers/io.github.acme%2Ffiles/versions/1.2.0"]
    );
    // ... unless allowed.
    let mut config = ServersConfig::parse_with(FILE, &none).unwrap();
    let documents = config
        .fetch_registry(&client, &options(&server).allow_unpinned())
        .await;
    config.resolve_registry_with(&documents, &variables, &npx);
    assert!(config.get("latest").is_some());
    assert!(server
        .recorded()
        .iter()
        .any(|r| r.path.ends_with("/versions/latest")));

    // Nothing printable holds the secret.
    let shown = format!("{config:?} {:?}", config.errors().collect::<Vec<_>>());
    let launches: Vec<_> = config.servers().map(|s| s.launch().to_string()).collect();
    assert!(!shown.contains(CANARY) && !launches.concat().contains(CANARY));
}

#[tokio::test]
async fn a_servers_secret_variables_are_inputs_asked_for_and_never_shown() {
    let server = registry().await;
    let none = |_: &str| None;
    let file =
        r#"{ "servers": { "files": { "registry": "io.github.acme/files", "version": "1.2.0" } } }"#;
    let mut config = ServersConfig::parse_with(file, &none).unwrap();
    let client = HttpClient::default_client();
    let documents = config.fetch_registry(&client, &options(&server)).await;
    // No runtime answer here: `npx` is found, but its token is missing, and
    // so are the remote's tenant and key.
    config.resolve_registry_with(&documents, &Variables::new(&none), &npx);
    assert_eq!(config.missing_inputs(), ["FILES_TOKEN"]);
    let declared: Vec<_> = (config.inputs().iter())
        .map(|i| (i.id(), i.is_password(), i.description()))
        .collect();
    assert_eq!(
        declared,
        [
            ("FILES_TOKEN", true, Some("Token")),
            ("tenant", false, Some("Tenant")),
            ("api_key", true, None)
        ]
    );
    // Answered: resolved again from the same documents, nothing fetched again.
    let fetched = server.recorded().len();
    let variables = Variables::new(&none).with_input("FILES_TOKEN", CANARY);
    config.resolve_registry_with(&documents, &variables, &npx);
    assert!(config.get("files").is_some());
    assert_eq!(server.recorded().len(), fetched);
    assert!(!format!("{config:?}").contains(CANARY));
}

#[tokio::test]
async fn a_remote_registry_server_and_a_local_server_json() {
    let dir = std::env::temp_dir().join(format!("mcp-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut remote_only = files_json();
    remote_only["packages"] = json!([]);
    crate::testkit::assert_published_server_json(&remote_only);
    let path = dir.join("server.json");
    std::fs::write(&path, remote_only.to_string()).unwrap();
    // The entry's own `env` answers the server's variable: the user names
    // the environment variable for it (issue 63, item 23).
    let file = json!({ "mcpServers": { "local": { "registry": path.to_str().unwrap(),
                                                  "env": { "tenant": "${env:TENANT}" } } } })
    .to_string();
    let env = |name: &str| (name == "TENANT").then(|| "eu".to_owned());
    let mut config = ServersConfig::parse_with(&file, &env).unwrap();
    let client = HttpClient::default_client();
    let documents = config
        .fetch_registry(&client, &RegistryOptions::public())
        .await;
    let variables = Variables::new(&env).with_input("api_key", CANARY);
    config.resolve_registry_with(&documents, &variables, &npx);
    let local = config.get("local").expect("resolved from the file");
    let Target::Http { url, headers, .. } = local.request().target().clone() else {
        panic!("remote");
    };
    assert_eq!(url, "https://eu.files.test/mcp");
    assert_eq!(headers["authorization"], format!("Bearer {CANARY}"));
    // The launch shows the template and the header's name only.
    assert_eq!(
        local.launch().to_string(),
        "http: https://{tenant}.files.test/mcp; headers authorization"
    );
    // A file that is not there is that entry's problem.
    std::fs::remove_file(&path).unwrap();
    let mut config = ServersConfig::parse_with(&file, &env).unwrap();
    let documents = config
        .fetch_registry(&client, &RegistryOptions::public())
        .await;
    config.resolve_registry_with(&documents, &variables, &npx);
    let error = config.errors().next().unwrap();
    assert!(
        matches!(error.problem(), EntryProblem::Registry(e) if matches!(**e, RegistryError::Read(_)))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reload: the entry whose version changed is fetched again and resolved
/// with its new document (never the old one), an unchanged one is not
/// fetched again, and a removed one's document is dropped.
#[tokio::test]
async fn a_refresh_fetches_only_new_or_changed_entries() {
    let server = ScriptServer::start(|request: &Recorded| {
        let version = request
            .path
            .strip_prefix("/v0.1/servers/io.github.acme%2Ffiles/versions/");
        let Some(version @ ("1.0.0" | "2.0.0")) = version else {
            return Script::Status(404);
        };
        let mut files = files_json();
        files["version"] = json!(version);
        files["packages"][0]["version"] = json!(version);
        files["packages"][0]["environmentVariables"] = json!([]);
        let answer = json!({ "server": files, "_meta": {} });
        crate::testkit::assert_published_server_json(&answer);
        Script::Json(200, answer)
    })
    .await;
    let file = |version: &str| {
        format!(
            r#"{{ "mcpServers": {{
                "pinned": {{ "registry": "io.github.acme/files", "version": "1.0.0" }},
                "moving": {{ "registry": "io.github.acme/files", "version": "{version}" }} }} }}"#
        )
    };
    let none = |_: &str| None;
    let client = HttpClient::default_client();
    let argv = |config: &ServersConfig, name: &str| {
        let Target::Stdio(command) = config.get(name).expect(name).request().target().clone()
        else {
            panic!("stdio");
        };
        (command.arguments().last().unwrap())
            .to_string_lossy()
            .into_owned()
    };

    let mut first = ServersConfig::parse_with(&file("1.0.0"), &none).unwrap();
    let mut documents = first.fetch_registry(&client, &options(&server)).await;
    first.resolve_registry_with(&documents, &Variables::new(&none), &npx);
    assert_eq!(argv(&first, "moving"), "@acme/files@1.0.0");
    assert_eq!(server.recorded().len(), 2);

    let mut reloaded = ServersConfig::parse_with(&file("2.0.0"), &none).unwrap();
    (reloaded.refresh_registry(&mut documents, &client, &options(&server))).await;
    reloaded.resolve_registry_with(&documents, &Variables::new(&none), &npx);
    assert_eq!(argv(&reloaded, "pinned"), "@acme/files@1.0.0");
    assert_eq!(
        argv(&reloaded, "moving"),
        "@acme/files@2.0.0",
        "the new version's document"
    );
    let asked: Vec<_> = server.recorded().into_iter().map(|r| r.path).collect();
    assert_eq!(
        asked[2..],
        ["/v0.1/servers/io.github.acme%2Ffiles/versions/2.0.0"],
        "only the changed entry is fetched again"
    );

    let only_pinned = r#"{ "mcpServers": {
        "pinned": { "registry": "io.github.acme/files", "version": "1.0.0" } } }"#;
    let lean = ServersConfig::parse_with(only_pinned, &none).unwrap();
    (lean.refresh_registry(&mut documents, &client, &options(&server))).await;
    assert_eq!(
        format!("{documents:?}").matches("Ok(").count(),
        1,
        "{documents:?}"
    );
    assert_eq!(server.recorded().len(), 3, "nothing fetched");
}
