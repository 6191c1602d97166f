//! The fuzz targets' invariants as property tests, so `cargo test` checks
//! a few thousand inputs of each on every run (the fuzzer explores far more
//! of them, guided by coverage, in `fuzz/`).

use proptest::prelude::*;

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..256)
}

/// URLs with userinfo, odd ports, queries and fragments, then header
/// lines, some reserved, some invalid.
fn connect_text() -> impl Strategy<Value = String> {
    let url = (
        prop_oneof!["https?", "ftp", "[a-z]{0,5}"],
        proptest::option::of("[a-zA-Z0-9:%._-]{0,20}"),
        "[a-z0-9.-]{0,12}|\\[::1\\]",
        proptest::option::of("[0-9]{0,6}"),
        "(/[a-zA-Z0-9@:%._-]{0,8}){0,3}",
        proptest::option::of("[a-z=&@]{0,10}"),
    )
        .prop_map(|(scheme, userinfo, host, port, path, query)| {
            let mut url = format!("{scheme}://");
            if let Some(userinfo) = userinfo {
                url.push_str(&userinfo);
                url.push('@');
            }
            url.push_str(&host);
            if let Some(port) = port {
                url.push(':');
                url.push_str(&port);
            }
            url.push_str(&path);
            if let Some(query) = query {
                url.push('?');
                url.push_str(&query);
            }
            url
        });
    let header = prop_oneof![
        "(host|content-length|mcp-session-id|accept|x-api-key|authorization): [ -~]{0,12}",
        "[ -~]{0,16}",
    ];
    (url, proptest::collection::vec(header, 0..4)).prop_map(|(url, headers)| {
        std::iter::once(url)
            .chain(headers)
            .collect::<Vec<_>>()
            .join("\n")
    })
}

fn era_cache_text() -> impl Strategy<Value = String> {
    let entry = (
        "[ -~]{0,16}",
        prop_oneof!["modern", "legacy", "[a-z]{0,6}"],
        prop_oneof!["stdio", "sse", "streamable-http", "[a-z]{0,4}"],
        prop_oneof!["2024-11-05", "2025-06-18", "2026-07-28", "[0-9-]{0,10}"],
    )
        .prop_map(|(key, era, transport, version)| {
            let key = serde_json::Value::String(key);
            format!(r#"{key}:{{"era":"{era}","transport":"{transport}","version":"{version}"}}"#)
        });
    proptest::collection::vec(entry, 0..4).prop_map(|e| format!("{{{}}}", e.join(",")))
}

/// `mcpServers` files whose entries mix known and unknown fields, good
/// and bad values, and references to the secret variable.
/// `server.json` documents: packages of each registry type and
/// remotes, their arguments, variables and headers drawn from forms
/// that reference variables, with mistakes among them.
fn server_json_text() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just("\"{token}\"".to_owned()),
        Just("\"Bearer {token}\"".to_owned()),
        Just("\"--key={token}\"".to_owned()),
        Just("\"https://{tenant}.h.test/{token}\"".to_owned()),
        Just("\"https://h.test/mcp\"".to_owned()),
        Just("\"https://h.test/mcp?k={PATH}\"".to_owned()),
        Just("\"Bearer {HOME}\"".to_owned()),
        Just("\"--call=sh\"".to_owned()),
        Just("\"--from=git+https://x\"".to_owned()),
        Just("\"--privileged\"".to_owned()),
        Just("\"sh\"".to_owned()),
        Just("\"NODE_OPTIONS\"".to_owned()),
        Just("\"npm_config_registry\"".to_owned()),
        Just("\"-e\"".to_owned()),
        Just("\"{\"".to_owned()),
        "\"[ -~&&[^\"\\\\]]{0,10}\"",
        Just("7".to_owned()),
        Just("true".to_owned()),
    ];
    let field = prop_oneof![
        "registryType",
        "identifier",
        "version",
        "runtimeHint",
        "fileSha256",
        "type",
        "url",
        "name",
        "value",
        "default",
        "isSecret",
        "isRequired",
        "valueHint",
        "[a-z]{1,5}"
    ];
    let object = proptest::collection::vec((field, value), 0..6)
        .prop_map(|fields| format!("{{{}}}", members(fields)));
    let list =
        proptest::collection::vec(object, 0..3).prop_map(|items| format!("[{}]", items.join(", ")));
    let nested = prop_oneof![
        "packageArguments",
        "runtimeArguments",
        "environmentVariables",
        "headers"
    ];
    let kind = prop_oneof!["npm", "pypi", "oci", "nuget", "mcpb", "other"];
    // Identifiers, versions and hints as hostile documents write them:
    // options where the package goes, programs of their own choosing.
    let identifier = prop_oneof![
        Just("@a/b"),
        Just("acme-files"),
        Just("ghcr.io/a/b"),
        Just("--call=touch x"),
        Just("-y"),
        Just("--privileged"),
    ];
    let version = prop_oneof![Just("1"), Just("-1"), Just("--yes"), Just("1.0.0")];
    let hint = prop_oneof![
        Just(""),
        Just("\"runtimeHint\": \"sh\", "),
        Just("\"runtimeHint\": \"npx\", ")
    ];
    let package = (
        kind,
        (identifier, version, hint),
        proptest::collection::vec((nested, list.clone()), 0..3),
        list.clone(),
    )
        .prop_map(|(kind, (id, version, hint), mut lists, unknown)| {
            lists.push(("x".to_owned(), unknown));
            format!(
                "{{\"registryType\": \"{kind}\", \"identifier\": \"{id}\", \"version\": \"{version}\", {hint}\"transport\": {{\"type\": \"stdio\"}}, \"variables\": {{\"token\": {{\"isSecret\": true}}}}, {}}}",
                members(lists)
            )
        });
    (proptest::collection::vec(package, 0..3), list).prop_map(|(packages, remotes)| {
        format!(
            "{{\"name\": \"io.github.a/b\", \"version\": \"1\", \"packages\": [{}], \"remotes\": {remotes}}}",
            packages.join(", ")
        )
    })
}

/// `(name, JSON text)` pairs as the members of a JSON object.
fn members(pairs: Vec<(String, String)>) -> String {
    let members: Vec<String> = pairs
        .into_iter()
        .map(|(name, value)| format!("\"{name}\": {value}"))
        .collect();
    members.join(", ")
}

fn servers_config_text() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just("\"${FUZZ_SECRET}\"".to_owned()),
        Just("\"Bearer ${env:FUZZ_SECRET}\"".to_owned()),
        Just("\"${MISSING}\"".to_owned()),
        Just("\"http://127.0.0.1:1/${FUZZ_SECRET}\"".to_owned()),
        Just("[\"${FUZZ_SECRET}\", 1]".to_owned()),
        Just("{\"Authorization\": \"${FUZZ_SECRET}\", \"Host\": \"${FUZZ_SECRET}\"}".to_owned()),
        Just("{\"KEY\": \"${FUZZ_SECRET}\"}".to_owned()),
        "\"[ -~&&[^\"\\\\]]{0,12}\"",
        Just("7".to_owned()),
    ];
    let field = prop_oneof![
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "[a-z]{1,6}"
    ];
    let entry = proptest::collection::vec((field, value), 0..5)
        .prop_map(|fields| format!("{{{}}}", members(fields)));
    let top = prop_oneof!["mcpServers", "servers"];
    (top, proptest::collection::vec(("[a-z]{1,4}", entry), 0..4))
        .prop_map(|(top, entries)| format!("{{\"{top}\": {{{}}}}}", members(entries)))
}

/// Codex `config.toml` files: `[mcp_servers.NAME]` tables whose values
/// reference the secret through every field, Codex's own included.
fn codex_config_text() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just("\"${FUZZ_SECRET}\"".to_owned()),
        Just("\"${input:fuzz}\"".to_owned()),
        Just("\"${env:NOPE | value:${FUZZ_SECRET}}\"".to_owned()),
        Just("\"FUZZ_SECRET\"".to_owned()),
        Just("\"http://127.0.0.1:1/${input:fuzz}\"".to_owned()),
        Just("[\"${FUZZ_SECRET}\", 1]".to_owned()),
        Just("{ \"X-Key\" = \"${FUZZ_SECRET}\" }".to_owned()),
        Just("{ \"X-Org\" = \"FUZZ_SECRET\" }".to_owned()),
        "\"[ -~&&[^\"\\\\]]{0,12}\"",
        Just("7".to_owned()),
    ];
    let field = prop_oneof![
        "command",
        "args",
        "env",
        "url",
        "http_headers",
        "env_http_headers",
        "bearer_token_env_var",
        "[a-z]{1,6}"
    ];
    let entry = proptest::collection::vec((field, value), 0..5).prop_map(|fields| {
        let mut seen = std::collections::HashSet::new();
        fields
            .into_iter()
            .filter(|(name, _)| seen.insert(name.clone()))
            .map(|(name, value)| format!("{name} = {value}\n"))
            .collect::<String>()
    });
    proptest::collection::btree_map("[a-z]{1,4}", entry, 0..4).prop_map(|entries| {
        let tables: String = entries
            .into_iter()
            .map(|(name, body)| format!("[mcp_servers.{name}]\n{body}"))
            .collect();
        format!("[mcp_servers]\n{tables}")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_target_takes_any_bytes(input in bytes()) {
        super::sse(&input);
        super::jsonrpc(&input);
        super::www_authenticate(&input);
        super::retry_after(&input);
        super::connect_request(&input);
        super::era_cache(&input);
        super::servers_config(&input);
    }

    #[test]
    fn retry_after_reads_seconds_and_dates(
        seconds in any::<u64>(),
        date in (0u64..8_000_000_000).prop_map(|s| {
            httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s))
        }),
    ) {
        super::retry_after(seconds.to_string().as_bytes());
        super::retry_after(format!("  {seconds} ").as_bytes());
        super::retry_after(date.as_bytes());
    }

    #[test]
    fn connect_requests_keep_userinfo_out(text in connect_text()) {
        super::connect_request(text.as_bytes());
    }

    #[test]
    fn era_caches_round_trip(text in era_cache_text()) {
        super::era_cache(text.as_bytes());
    }

    #[test]
    fn servers_configs_keep_secrets_out(text in servers_config_text()) {
        super::servers_config(text.as_bytes());
    }

    #[test]
    fn registry_server_jsons_keep_answers_out(text in server_json_text()) {
        super::registry_server_json(text.as_bytes());
    }

    /// Zips whose names repeat (written twice, or alike but for case),
    /// leave the folder, or nest: checked, never unpacked otherwise than
    /// they read (issue 63, item 5).
    #[test]
    fn mcpb_bundles_unpack_as_they_read_or_not_at_all(
        names in proptest::collection::vec(
            prop_oneof!["a.js", "A.js", "b/c.js", "B/c.js", "../x", "/abs", "b/", "d/./e", "[a-c]{1,2}"],
            1..5,
        ),
        twice in any::<bool>(),
    ) {
        super::mcpb_bundle(&zip_with_names(&names, twice));
    }

    #[test]
    fn codex_configs_keep_secrets_out(text in codex_config_text()) {
        let env = |_: &str| None;
        let read = crate::config::ServersConfig::parse_as(
            &text,
            crate::config::Format::Toml,
            &crate::config::Variables::new(&env),
        );
        prop_assert!(read.is_ok(), "generated TOML is TOML: {text}");
        super::servers_config(text.as_bytes());
    }
}

/// A zip holding one file per name (the first written twice when asked,
/// by renaming the second entry in place: the zip crate's writer refuses
/// a repeated name), each holding its name.
fn zip_with_names(names: &[String], twice: bool) -> Vec<u8> {
    use std::io::Write as _;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let mut written = Vec::new();
    let mut list: Vec<String> = names.to_vec();
    if twice {
        // The same length as the first, so it can be renamed in place.
        list.insert(1, "~".repeat(list[0].len()));
    }
    for name in &list {
        let options = zip::write::SimpleFileOptions::default();
        let started = if name.ends_with('/') {
            zip.add_directory(name.as_str(), options)
        } else {
            zip.start_file(name.as_str(), options)
        };
        if started.is_ok() {
            let _ = zip.write_all(name.as_bytes());
            written.push(name.clone());
        }
    }
    let _ = zip.finish();
    let mut bytes = out.into_inner();
    if twice && written.len() > 1 && written[1].starts_with('~') {
        let (from, to) = (
            written[1].as_bytes().to_vec(),
            written[0].as_bytes().to_vec(),
        );
        let mut at = 0;
        while let Some(found) = bytes[at..].windows(from.len()).position(|w| w == from) {
            let start = at + found;
            bytes[start..start + from.len()].copy_from_slice(&to);
            at = start + from.len();
        }
    }
    bytes
}

/// Issue 63, item 5: a name written twice (the zip crate keeps the last)
/// and names equal but for case are refused; the checks see every entry
/// the central directory holds.
#[test]
fn repeated_names_are_refused() {
    let twice = zip_with_names(&["server.js".to_owned(), "x".to_owned()], true);
    assert!(matches!(
        crate::registry::fuzz_open_bundle(&twice),
        Err(crate::registry::BundleError::DuplicateEntry)
    ));
    let folded = zip_with_names(&["Server.js".to_owned(), "server.js".to_owned()], false);
    assert!(matches!(
        crate::registry::fuzz_open_bundle(&folded),
        Err(crate::registry::BundleError::DuplicateEntry)
    ));
    let fine = zip_with_names(&["server.js".to_owned(), "lib/x.js".to_owned()], false);
    assert!(crate::registry::fuzz_open_bundle(&fine).is_ok());
}
