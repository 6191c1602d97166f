use super::*;
use crate::request::Target;

fn argv(request: &ConnectRequest) -> Vec<String> {
    let Target::Stdio(command) = request.target() else {
        panic!("not stdio: {request:?}");
    };
    std::iter::once(command.program())
        .chain(command.arguments())
        .map(|part| part.to_string_lossy().into_owned())
        .collect()
}

const SERVER: &str = r#"{
  "name": "io.github.acme/files",
  "version": "1.2.0",
  "packages": [
    { "registryType": "npm", "identifier": "@acme/files", "version": "1.2.0",
      "transport": { "type": "stdio" },
      "runtimeArguments": [ { "type": "named", "name": "--node-options", "value": "--max-old-space-size=512" } ],
      "packageArguments": [ { "type": "positional", "value": "serve" } ],
      "environmentVariables": [ { "name": "FILES_ROOT", "default": "/srv" },
                                { "name": "FILES_TOKEN", "isRequired": true, "isSecret": true } ] },
    { "registryType": "pypi", "identifier": "acme-files", "version": "1.2.0",
      "transport": { "type": "stdio" } },
    { "registryType": "oci", "identifier": "ghcr.io/acme/files", "version": "1.2.0",
      "transport": { "type": "stdio" },
      "environmentVariables": [ { "name": "FILES_TOKEN", "isRequired": true } ] },
    { "registryType": "nuget", "identifier": "Acme.Files", "version": "1.2.0",
      "transport": { "type": "stdio" } },
    { "registryType": "mcpb", "identifier": "https://h.test/files.mcpb", "fileSha256": "00",
      "transport": { "type": "stdio" } }
  ],
  "remotes": [ { "type": "streamable-http", "url": "https://files.acme.test/mcp",
                 "headers": [ { "name": "X-Tenant", "value": "acme" },
                              { "name": "Authorization", "value": "Bearer {token}" } ] } ]
}"#;

fn only(runtime: &'static str) -> impl Fn(&str) -> bool {
    move |program| program == runtime
}

#[test]
fn each_registry_type_starts_as_its_host_would() {
    let server = ServerJson::parse(SERVER).unwrap();
    assert_eq!(server.name(), "io.github.acme/files");
    let token = |name: &str| (name == "FILES_TOKEN").then(|| "t".to_owned());

    let npm = server.request_with(&only("npx"), &token).unwrap();
    assert_eq!(
        argv(&npm),
        [
            "npx",
            "-y",
            "--node-options",
            "--max-old-space-size=512",
            "@acme/files@1.2.0",
            "serve"
        ]
    );
    assert_eq!(npm.name(), "io.github.acme/files");
    let Target::Stdio(command) = npm.target() else {
        unreachable!()
    };
    // The default is set; the token comes from the environment the child inherits.
    let env: Vec<_> = command
        .environment()
        .iter()
        .map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap()))
        .collect();
    assert_eq!(env, [("FILES_ROOT", "/srv")]);

    let pypi = server.request_with(&only("uvx"), &token).unwrap();
    assert_eq!(argv(&pypi), ["uvx", "acme-files==1.2.0"]);
    let oci = server.request_with(&only("docker"), &token).unwrap();
    assert_eq!(
        argv(&oci),
        [
            "docker",
            "run",
            "-i",
            "--rm",
            "-e",
            "FILES_TOKEN",
            "ghcr.io/acme/files:1.2.0"
        ]
    );
    let nuget = server.request_with(&only("dnx"), &token).unwrap();
    assert_eq!(argv(&nuget), ["dnx", "Acme.Files@1.2.0", "--yes", "--"]);
}

#[test]
fn no_runtime_falls_back_to_the_remote_and_no_remote_is_named() {
    let server = ServerJson::parse(SERVER).unwrap();
    let none = |_: &str| None;
    let remote = server.request_with(&|_| false, &none).unwrap();
    let Target::Http { url, headers, .. } = remote.target() else {
        panic!("remote");
    };
    assert_eq!(url, "https://files.acme.test/mcp");
    assert_eq!(headers["x-tenant"], "acme");
    assert!(
        headers.get("authorization").is_none(),
        "a placeholder is not sent"
    );

    // npx there but its required token missing, and no remote: named.
    let local_only = SERVER.replace("\"remotes\"", "\"unused\"");
    let server = ServerJson::parse(&local_only).unwrap();
    let error = server.request_with(&only("npx"), &none).unwrap_err();
    assert!(
        matches!(&error, RegistryError::MissingVariable { variable, .. } if variable == "FILES_TOKEN"),
        "{error:?}"
    );
    let error = server.request_with(&|_| false, &none).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no package of io.github.acme/files can be started here (runtimes looked for: npx, uvx, docker, dnx) and it has no usable remote"
    );
}

#[test]
fn an_api_answer_and_mistakes() {
    let wrapped = format!(r#"{{ "server": {SERVER}, "_meta": {{}} }}"#);
    assert_eq!(
        ServerJson::parse(&wrapped).unwrap().name(),
        "io.github.acme/files"
    );
    assert!(matches!(
        ServerJson::parse("[]"),
        Err(RegistryError::NotServerJson)
    ));
    assert!(matches!(
        ServerJson::parse("{\"version\": \"1\"}"),
        Err(RegistryError::NotServerJson)
    ));
}

/// A remote's `{name}` template variables: from the environment, else the
/// declared default; a URL that cannot be filled names the variable.
#[test]
fn a_remotes_template_variables_are_filled() {
    let server = r#"{ "name": "io.github.acme/tenants", "remotes": [
        { "type": "streamable-http", "url": "https://{tenant}.acme.test/{region}/mcp",
          "variables": { "tenant": { "default": "eu" }, "region": { "isRequired": true } },
          "headers": [ { "name": "Authorization", "value": "Bearer {token}", "isSecret": true },
                       { "name": "X-Plan", "value": "{plan}", "isRequired": true,
                         "variables": { "plan": { "default": "free" } } } ] } ] }"#;
    let server = ServerJson::parse(server).unwrap();
    let env = |name: &str| match name {
        "region" => Some("west".to_owned()),
        "token" => Some("t0ken".to_owned()),
        _ => None,
    };
    let request = server.request_with(&|_| false, &env).unwrap();
    let Target::Http { url, headers, .. } = request.target() else {
        panic!("remote");
    };
    assert_eq!(url, "https://eu.acme.test/west/mcp");
    assert_eq!(headers["authorization"], "Bearer t0ken");
    assert_eq!(headers["x-plan"], "free");
    let no_region = |name: &str| (name == "tenant").then(|| "us".to_owned());
    let error = server.request_with(&|_| false, &no_region).unwrap_err();
    assert!(
        matches!(&error, RegistryError::MissingVariable { variable, .. } if variable == "region"),
        "{error:?}"
    );
}
