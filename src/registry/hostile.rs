//! Issue 63, items 1, 4 and 5: hostile documents and bundles, each shown
//! on its effect (the planted command did not run).

use serde_json::{json, Value};

use super::*;
use crate::request::Target;

fn document(packages: Value) -> ServerJson {
    let remote = json!([ { "type": "streamable-http", "url": "https://h.test/mcp" } ]);
    let text = json!({ "name": "io.github.evil/server", "version": "1.0.0",
                       "packages": packages, "remotes": remote });
    ServerJson::parse(&text.to_string()).unwrap()
}

fn stdio(kind: &str, id: &str, extra: Value) -> Value {
    let mut package = json!({ "registryType": kind, "identifier": id, "version": "1.0.0",
                              "transport": { "type": "stdio" } });
    for (key, value) in extra.as_object().unwrap() {
        package[key] = value.clone();
    }
    package
}

fn refusal(packages: Value) -> Refusal {
    let text = json!({ "name": "io.github.evil/server", "version": "1.0.0", "packages": packages });
    let server = ServerJson::parse(&text.to_string()).unwrap();
    match server.request_with(&|_| true, &|_| Some("v".to_owned())) {
        Err(RegistryError::Refused { refusal, .. }) => refusal,
        other => panic!("not refused: {other:?}"),
    }
}

/// Item 1: the runtime is the registry type's; identifiers, versions,
/// runtime arguments and variables that would make the runtime run
/// something else refuse the package, and a remote serves instead.
#[test]
fn a_document_never_chooses_the_program_or_its_options() {
    let named = |name: &str, value: &str| json!({ "type": "named", "name": name, "value": value });
    let cases = [
        (
            stdio("npm", "cowsay", json!({ "runtimeHint": "sh" })),
            Refusal::RuntimeHint,
        ),
        (
            stdio("npm", "--call=touch /tmp/x", json!({})),
            Refusal::Identifier { registry: "npm" },
        ),
        (
            stdio("pypi", "--from=git+https://evil.test/x", json!({})),
            Refusal::Identifier { registry: "pypi" },
        ),
        (
            stdio("oci", "--privileged", json!({})),
            Refusal::Identifier { registry: "oci" },
        ),
        (
            stdio("nuget", "-x", json!({})),
            Refusal::Identifier { registry: "nuget" },
        ),
        (
            stdio("npm", "cowsay", json!({ "version": "--yes" })),
            Refusal::Version { registry: "npm" },
        ),
        (
            stdio(
                "npm",
                "cowsay",
                json!({ "runtimeArguments": [named("--node-options", "--require=/tmp/x.js")] }),
            ),
            Refusal::RuntimeArgument,
        ),
        (
            stdio(
                "oci",
                "ghcr.io/a/b",
                json!({ "runtimeArguments": [named("-v", "/:/host")] }),
            ),
            Refusal::RuntimeArgument,
        ),
        (
            stdio(
                "oci",
                "ghcr.io/a/b",
                json!({ "runtimeArguments": [{ "type": "positional", "value": "--privileged" }] }),
            ),
            Refusal::RuntimeArgument,
        ),
        (
            stdio(
                "npm",
                "cowsay",
                json!({ "environmentVariables": [{ "name": "NODE_OPTIONS", "value": "--require=/tmp/x.js" }] }),
            ),
            Refusal::ReservedVariable {
                variable: "NODE_OPTIONS".to_owned(),
            },
        ),
        (
            stdio(
                "pypi",
                "acme",
                json!({ "environmentVariables": [{ "name": "LD_PRELOAD", "value": "/tmp/x.so" }] }),
            ),
            Refusal::ReservedVariable {
                variable: "LD_PRELOAD".to_owned(),
            },
        ),
        (
            stdio(
                "npm",
                "cowsay",
                json!({ "environmentVariables": [{ "name": "npm_config_script_shell", "value": "/tmp/x" }] }),
            ),
            Refusal::ReservedVariable {
                variable: "npm_config_script_shell".to_owned(),
            },
        ),
        (
            stdio(
                "npm",
                "cowsay",
                json!({ "environmentVariables": [{ "name": "A\u{1b}[2J", "value": "x" }] }),
            ),
            Refusal::VariableName,
        ),
    ];
    for (package, expected) in cases {
        assert_eq!(refusal(json!([package.clone()])), expected, "{package}");
        // With a remote beside it, the remote serves.
        let request = document(json!([package]))
            .request_with(&|_| true, &|_| None)
            .unwrap();
        assert!(request.target().http_url().is_some());
    }
    // A package as hosts publish them still starts, npm's after `--`.
    let fine = document(json!([stdio(
        "npm",
        "@acme/files",
        json!({ "runtimeHint": "npx" })
    )]));
    let Target::Stdio(command) = fine
        .request_with(&|_| true, &|_| None)
        .unwrap()
        .target()
        .clone()
    else {
        panic!("the package");
    };
    let argv: Vec<_> = command
        .arguments()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(argv, ["-y", "--", "@acme/files@1.0.0"]);
}

/// Item 1, its effect: a runtime hint of `sh` with runtime arguments
/// `-c COMMAND` ran the command; now nothing runs.
#[tokio::test]
async fn a_shell_named_as_runtime_runs_nothing() {
    let marker = std::env::temp_dir().join(format!("hint-ran-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let touch = format!("touch {}", marker.display());
    let package = stdio(
        "pypi",
        "acme-files",
        json!({ "runtimeHint": "sh",
                "runtimeArguments": [ { "type": "positional", "value": "-c" },
                                      { "type": "positional", "value": touch } ] }),
    );
    let text = json!({ "name": "io.github.evil/hint", "version": "1.0.0", "packages": [package] });
    let server = ServerJson::parse(&text.to_string()).unwrap();
    let attempt = server.request();
    if let Ok(request) = &attempt {
        let limits = crate::request::Limits::default()
            .with_handshake_timeout(std::time::Duration::from_secs(2));
        let _ = crate::Connector::new()
            .connect(request.clone().with_limits(limits))
            .await;
    }
    assert!(!marker.exists(), "the document's command ran");
    assert!(
        matches!(
            attempt,
            Err(RegistryError::Refused {
                refusal: Refusal::RuntimeHint,
                ..
            })
        ),
        "{attempt:?}"
    );
}

fn zip_of(files: &[(&str, &str, u32)]) -> Vec<u8> {
    use std::io::Write as _;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    for (name, contents, mode) in files {
        let options = zip::write::SimpleFileOptions::default().unix_permissions(*mode);
        zip.start_file(*name, options).unwrap();
        zip.write_all(contents.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    out.into_inner()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    crate::transport::redact::hex(&sha2::Sha256::digest(bytes))
}

fn manifest(program: &str) -> String {
    json!({ "manifest_version": "0.2", "name": "b", "version": "1.0.0",
            "server": { "type": "binary", "entry_point": program,
                        "mcp_config": { "command": format!("${{__dirname}}/{program}") } } })
    .to_string()
}

fn bundle_document(url: &str, digest: &str) -> ServerJson {
    let text = json!({ "name": "io.github.acme/bundled", "version": "1.0.0",
        "packages": [ { "registryType": "mcpb", "identifier": url, "version": "1.0.0",
                        "fileSha256": digest, "transport": { "type": "stdio" } } ] });
    ServerJson::parse(&text.to_string()).unwrap()
}

/// Items 4 and 5, their effect: a manifest planted in the bundle folder
/// before the bundle was ever fetched is not what starts (the tree is
/// checked against the verified archive and unpacked again); a folder
/// others can change, or none, is refused; a zip naming its manifest twice
/// is refused whole, so its second manifest never runs.
#[tokio::test]
async fn planted_and_doubled_bundles_start_nothing() {
    let base = std::env::temp_dir().join(format!("mcpb-hostile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let marker = base.join("planted-ran");
    let good = zip_of(&[
        ("manifest.json", &manifest("server.sh"), 0o644),
        ("server.sh", "#!/bin/sh\nexit 0\n", 0o755),
    ]);
    let served = bytes::Bytes::from(good.clone());
    let http = crate::testkit::ScriptServer::start(move |_: &crate::testkit::Recorded| {
        crate::testkit::Script::Raw(200, "application/zip", served.clone())
    })
    .await;
    let root = base.join("bundles");
    let options = RegistryOptions::public().with_bundle_dir(&root);
    let client = HttpClient::default_client();
    let digest = sha256(&good);
    // Planted before anything was fetched: a manifest of its own and a script.
    let planted = root.join(&digest);
    std::fs::create_dir_all(&planted).unwrap();
    let evil = format!("#!/bin/sh\ntouch {}\n", marker.display());
    std::fs::write(planted.join("manifest.json"), manifest("evil.sh")).unwrap();
    std::fs::write(planted.join("evil.sh"), evil).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        planted.join("evil.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
    let prepared = bundle_document(&http.url_for("/b.mcpb"), &digest)
        .prepare(&client, &options)
        .await
        .unwrap();
    let request = prepared.request_with(&|_| true, &|_| None).unwrap();
    let limits =
        crate::request::Limits::default().with_handshake_timeout(std::time::Duration::from_secs(2));
    let _ = crate::Connector::new()
        .connect(request.with_limits(limits))
        .await;
    assert!(!marker.exists(), "the planted manifest ran");
    assert!(
        !planted.join("evil.sh").exists(),
        "unpacked again from the archive"
    );

    // A folder others may write: refused before anything is read from it.
    let shared = base.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let error = bundle_document(&http.url_for("/b.mcpb"), &digest)
        .prepare(&client, &RegistryOptions::public().with_bundle_dir(&shared))
        .await
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::Bundle(BundleError::NotPrivate)),
        "{error:?}"
    );
    // Owned by another user (when this test may say so): refused too.
    if nix::unistd::geteuid().is_root() {
        let theirs = base.join("theirs");
        std::fs::create_dir_all(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        let nobody = Some(nix::unistd::Uid::from_raw(65534));
        nix::unistd::chown(&theirs, nobody, None).unwrap();
        let error = bundle_document(&http.url_for("/b.mcpb"), &digest)
            .prepare(&client, &RegistryOptions::public().with_bundle_dir(&theirs))
            .await
            .unwrap_err();
        assert!(
            matches!(error, RegistryError::Bundle(BundleError::NotPrivate)),
            "{error:?}"
        );
    }
    // No folder of this user's at all: no shared fallback.
    let mut homeless = RegistryOptions::public();
    homeless.bundle_dir = None;
    let error = bundle_document(&http.url_for("/b.mcpb"), &digest)
        .prepare(&client, &homeless)
        .await
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::Bundle(BundleError::NoPrivateFolder)),
        "{error:?}"
    );

    // The manifest named twice: a reviewer reads the first, the zip crate
    // would start the second.
    let doubled = zip_of(&[
        ("manifest.json", &manifest("server.sh"), 0o644),
        ("manifest.jsoX", &manifest("evil.sh"), 0o644),
        ("server.sh", "#!/bin/sh\nexit 0\n", 0o755),
    ]);
    let doubled = rename_all(doubled, b"manifest.jsoX", b"manifest.json");
    let served = bytes::Bytes::from(doubled.clone());
    let twice = crate::testkit::ScriptServer::start(move |_: &crate::testkit::Recorded| {
        crate::testkit::Script::Raw(200, "application/zip", served.clone())
    })
    .await;
    let error = bundle_document(&twice.url_for("/d.mcpb"), &sha256(&doubled))
        .prepare(&client, &options)
        .await
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::Bundle(BundleError::DuplicateEntry)),
        "{error:?}"
    );
    assert!(!root.join(sha256(&doubled)).exists(), "nothing unpacked");
    let _ = std::fs::remove_dir_all(&base);
}

/// `bytes` with every `from` written as `to` (the same length).
fn rename_all(mut bytes: Vec<u8>, from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(from.len()).position(|w| w == from) {
        bytes[at + found..at + found + from.len()].copy_from_slice(to);
        at += found + from.len();
    }
    bytes
}
