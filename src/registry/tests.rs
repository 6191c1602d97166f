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

/// A stub that validates against the registry's published schema and
/// reads as a [`ServerJson`].
fn published(text: &str) -> ServerJson {
    crate::testkit::assert_published_server_json(&serde_json::from_str(text).unwrap());
    ServerJson::parse(text).unwrap()
}

const SERVER: &str = r#"{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "io.github.acme/files",
  "description": "Files of a tenant, read and written",
  "version": "1.2.0",
  "packages": [
    { "registryType": "npm", "identifier": "@acme/files", "version": "1.2.0",
      "transport": { "type": "stdio" },
      "packageArguments": [ { "type": "positional", "value": "serve" } ],
      "environmentVariables": [ { "name": "FILES_ROOT", "default": "/srv" },
                                { "name": "FILES_TOKEN", "isRequired": true, "isSecret": true } ] },
    { "registryType": "pypi", "identifier": "acme-files", "version": "1.2.0",
      "transport": { "type": "stdio" } },
    { "registryType": "oci", "identifier": "ghcr.io/acme/files", "version": "1.2.0",
      "transport": { "type": "stdio" },
      "runtimeArguments": [ { "type": "named", "name": "--init" },
                            { "type": "named", "name": "-e", "value": "LOG_LEVEL=info" } ],
      "environmentVariables": [ { "name": "FILES_TOKEN", "isRequired": true } ] },
    { "registryType": "nuget", "identifier": "Acme.Files", "version": "1.2.0",
      "transport": { "type": "stdio" } },
    { "registryType": "mcpb", "identifier": "https://h.test/files.mcpb", "version": "1.2.0",
      "fileSha256": "0000000000000000000000000000000000000000000000000000000000000000",
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
    let server = published(SERVER);
    assert_eq!(server.name(), "io.github.acme/files");
    let token = |name: &str| (name == "FILES_TOKEN").then(|| "t".to_owned());

    let npm = server.request_with(&only("npx"), &token).unwrap();
    assert_eq!(
        argv(&npm),
        ["npx", "-y", "--", "@acme/files@1.2.0", "serve"]
    );
    assert_eq!(npm.name(), "io.github.acme/files");
    let Target::Stdio(command) = npm.target() else {
        unreachable!()
    };
    // The default is set, and the answered token too (an answer may be an
    // input a person typed, not in this process's environment).
    let env: Vec<_> = command
        .environment()
        .iter()
        .map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap()))
        .collect();
    assert_eq!(env, [("FILES_ROOT", "/srv"), ("FILES_TOKEN", "t")]);

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
            "--init",
            "--env",
            "LOG_LEVEL=info",
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
    let server = published(SERVER);
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
    let server = published(&local_only);
    let error = server.request_with(&only("npx"), &none).unwrap_err();
    assert!(
        matches!(&error, RegistryError::MissingVariables { variables, .. } if variables == &["FILES_TOKEN"]),
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
    assert_eq!(published(&wrapped).name(), "io.github.acme/files");
    assert!(matches!(
        ServerJson::parse("[]"),
        Err(RegistryError::NotServerJson)
    ));
    assert!(matches!(
        ServerJson::parse("{\"version\": \"1\"}"),
        Err(RegistryError::NotServerJson)
    ));
}

/// A remote's `{name}` template variables: from the caller's answers, else
/// the declared default; a URL that cannot be filled names every variable.
#[test]
fn a_remotes_template_variables_are_filled() {
    let server = r#"{ "name": "io.github.acme/tenants", "description": "Tenants",
      "version": "2.0.0", "remotes": [
        { "type": "streamable-http", "url": "https://{tenant}.acme.test/{region}/mcp",
          "variables": { "tenant": { "default": "eu" }, "region": { "isRequired": true } },
          "headers": [ { "name": "Authorization", "value": "Bearer {token}", "isSecret": true,
                         "variables": { "token": { "isSecret": true } } },
                       { "name": "X-Plan", "value": "{plan}", "isRequired": true,
                         "variables": { "plan": { "default": "free" } } } ] } ] }"#;
    let server = published(server);
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
        matches!(&error, RegistryError::MissingVariables { variables, .. } if variables == &["region"]),
        "{error:?}"
    );
}

/// A zip of `files` (name, contents, unix mode), as an mcpb bundle is.
fn zip_of(files: &[(&str, &str, u32)]) -> bytes::Bytes {
    use std::io::Write as _;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    for (name, contents, mode) in files {
        let options = zip::write::SimpleFileOptions::default().unix_permissions(*mode);
        zip.start_file(*name, options).unwrap();
        zip.write_all(contents.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    bytes::Bytes::from(out.into_inner())
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    crate::transport::redact::hex(&sha2::Sha256::digest(bytes))
}

fn bundle_json(url: &str, digest: &str) -> String {
    serde_json::json!({ "name": "io.github.acme/bundled", "version": "1.0.0",
        "description": "A server in an mcpb bundle",
        "packages": [ { "registryType": "mcpb", "identifier": url, "version": "1.0.0",
                        "fileSha256": digest, "transport": { "type": "stdio" },
                        "packageArguments": [ { "type": "positional", "value": "--serve" } ],
                        "environmentVariables": [ { "name": "LEVEL", "default": "info" } ] } ] })
    .to_string()
}

/// An mcpb package: downloaded, refused when its SHA-256 is not the one
/// given, unpacked once under its digest and started as its manifest says;
/// a path leaving the bundle refuses it with nothing written outside.
#[tokio::test]
async fn an_mcpb_bundle_is_checked_unpacked_and_started_as_its_manifest_says() {
    let manifest = r#"{ "manifest_version": "0.2", "name": "bundled", "version": "1.0.0",
        "server": { "type": "binary", "entry_point": "server.sh",
                    "mcp_config": { "command": "${__dirname}/server.sh", "args": [],
                                    "env": { "DATA": "${__dirname}/data" } } } }"#;
    let good = zip_of(&[
        ("manifest.json", manifest, 0o644),
        ("server.sh", "#!/bin/sh\nexit 0\n", 0o755),
    ]);
    let evil = zip_of(&[
        ("manifest.json", manifest, 0o644),
        ("../escaped", "x", 0o644),
    ]);
    let (good_bytes, evil_bytes) = (good.clone(), evil.clone());
    let server =
        crate::testkit::ScriptServer::start(
            move |request: &crate::testkit::Recorded| match request.path.as_str() {
                "/good.mcpb" => {
                    crate::testkit::Script::Raw(200, "application/zip", good_bytes.clone())
                }
                "/evil.mcpb" => {
                    crate::testkit::Script::Raw(200, "application/zip", evil_bytes.clone())
                }
                _ => crate::testkit::Script::Status(404),
            },
        )
        .await;
    let root = std::env::temp_dir().join(format!("mcpb-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let bundles = root.join("bundles");
    let options = RegistryOptions::public().with_bundle_dir(&bundles);
    let client = crate::transport::HttpClient::default_client();
    let good_url = server.url_for("/good.mcpb");

    let wrong = published(&bundle_json(&good_url, &sha256(b"another file")));
    let error = wrong.prepare(&client, &options).await.unwrap_err();
    assert!(
        matches!(error, RegistryError::Bundle(BundleError::DigestMismatch)),
        "{error:?}"
    );
    assert!(!bundles.join(sha256(&good)).exists(), "nothing unpacked");

    let right = published(&bundle_json(&good_url, &sha256(&good)));
    let prepared = right.clone().prepare(&client, &options).await.unwrap();
    let dir = bundles.join(sha256(&good)).canonicalize().unwrap();
    let none = |_: &str| None;
    let request = prepared.request_with(&|_| true, &none).unwrap();
    let script = format!("{}/server.sh", dir.display());
    assert_eq!(argv(&request), [script.as_str(), "--serve"]);
    let Target::Stdio(command) = request.target() else {
        unreachable!()
    };
    let env: Vec<_> = (command.environment().iter())
        .map(|(k, v)| {
            (
                k.to_str().unwrap().to_owned(),
                v.to_str().unwrap().to_owned(),
            )
        })
        .collect();
    let data = format!("{}/data", dir.display());
    assert_eq!(
        env,
        [
            ("DATA".to_owned(), data),
            ("LEVEL".to_owned(), "info".to_owned())
        ]
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.join("server.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "executable kept");
        assert_eq!(mode & 0o222, 0, "the verified copy is read-only");
    }
    // Unpacked once: a second prepare downloads nothing.
    let downloads = server.recorded().len();
    right.prepare(&client, &options).await.unwrap();
    assert_eq!(server.recorded().len(), downloads);

    let evil_url = server.url_for("/evil.mcpb");
    let evil_json = published(&bundle_json(&evil_url, &sha256(&evil)));
    let error = evil_json.prepare(&client, &options).await.unwrap_err();
    assert!(
        matches!(error, RegistryError::Bundle(BundleError::Malformed)),
        "{error:?}"
    );
    assert!(!root.join("escaped").exists() && !bundles.join(sha256(&evil)).exists());
    let _ = std::fs::remove_dir_all(&root);
}
