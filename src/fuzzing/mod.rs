//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`; not a
//! public API, hidden from the docs, may change at any time).
//!
//! Each function takes arbitrary bytes, runs one parser the way the crate
//! runs it on what a server or a user hands it, and asserts what must hold
//! for every input: a value or a typed error, never a panic, memory bounded
//! by the configured limits, and the parser's own invariants (chunking
//! changes nothing, what is written reads back the same, no secret survives
//! into a key or a `Debug`). A failed assertion is a crash the fuzzer keeps.
//!
//! The parsers themselves stay crate-private; this module is the one place
//! that opens them, so the fuzz crate needs nothing else.

use http::{HeaderMap, HeaderValue};

use crate::protocol::header_params::HeaderParams;
use crate::protocol::{Incoming, ListToolsResult};
use crate::transport::SseParser;

/// The event bound the SSE target parses under.
const SSE_LIMIT: usize = 1024;

/// The SSE parser: the input fed whole and in chunks (the first byte picks
/// the chunk size) gives the same events, or the bound error; no event's
/// data is over the bound.
pub fn sse(data: &[u8]) {
    let Some((&size, input)) = data.split_first() else {
        return;
    };
    let whole = sse_events(input, input.len().max(1));
    let chunked = sse_events(input, usize::from(size % 17) + 1);
    assert_eq!(whole, chunked, "chunking changed the events");
    if let Ok((events, _, _)) = whole {
        assert!(events.iter().all(|e| e.len() <= SSE_LIMIT));
    }
}

type SseOutcome = (Vec<Vec<u8>>, Option<String>, Option<u64>);

fn sse_events(input: &[u8], chunk: usize) -> Result<SseOutcome, crate::transport::SseTooLarge> {
    let mut parser = SseParser::new(SSE_LIMIT);
    let mut events = Vec::new();
    for piece in input.chunks(chunk) {
        parser.push(piece);
        while let Some(event) = parser.next_event()? {
            events.push(event.data);
        }
    }
    let last = parser.last_event_id().map(str::to_owned);
    Ok((events, last, parser.retry_ms()))
}

/// The JSON-RPC decoder, one message and batches, then the typed decoding
/// of a result the way the session reads `tools/list` (which also runs the
/// `x-mcp-header` rules over every tool's schema).
pub fn jsonrpc(data: &[u8]) {
    let Ok(messages) = Incoming::parse_many(data) else {
        return;
    };
    for message in messages {
        if let Incoming::Response { result, .. } = message {
            let Ok(tools) = serde_json::from_str::<ListToolsResult>(result.get()) else {
                continue;
            };
            let arguments: serde_json::Value =
                serde_json::from_str(result.get()).expect("a result is JSON");
            for tool in &tools.tools {
                // Whatever the arguments, every mirrored value is a valid
                // header value.
                if let Ok(Some(params)) = HeaderParams::from_input_schema(&tool.input_schema) {
                    for (name, value) in params.values(&arguments) {
                        assert!(http::HeaderName::from_bytes(name.as_bytes()).is_ok());
                        assert!(
                            HeaderValue::from_str(&value).is_ok(),
                            "invalid header value"
                        );
                    }
                }
            }
        }
    }
}

/// The `WWW-Authenticate` parser: any header text gives a challenge or
/// none, and what it keeps is a substring's worth of the input.
pub fn www_authenticate(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(challenge) = crate::auth::fuzz_challenge(&text) {
        for value in challenge.into_iter().flatten() {
            assert!(value.len() <= text.len());
        }
    }
}

/// The `Retry-After` reader: delay-seconds or an HTTP-date, anything else
/// absent; never a panic, whatever the number, and a number is read as
/// exactly that many seconds.
pub fn retry_after(data: &[u8]) {
    let Ok(value) = HeaderValue::from_bytes(data) else {
        return;
    };
    let text = value.to_str().ok().map(|t| t.trim().to_owned());
    let mut headers = HeaderMap::new();
    headers.insert(http::header::RETRY_AFTER, value);
    let delay = crate::transport::retry_after(&headers);
    let Some(text) = text else {
        return;
    };
    if let Ok(seconds) = text.parse::<u64>() {
        assert_eq!(delay, Some(std::time::Duration::from_secs(seconds)));
    } else if httpdate::parse_http_date(&text).is_ok() {
        assert!(delay.is_some(), "a date was not read");
    }
}

/// `ConnectRequest`'s URL and header handling. The input is a URL, then
/// `name: value` lines. A URL's userinfo never survives into the target,
/// the era cache's key or the request's `Debug`.
pub fn connect_request(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let url = lines.next().unwrap_or_default();
    let Ok(mut request) = crate::ConnectRequest::http(url) else {
        return;
    };
    for line in lines {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        request = match request.clone().with_header(name, value.trim()) {
            Ok(request) => request,
            Err(error) => {
                assert!(matches!(error.kind(), crate::ErrorKind::Config(_)));
                request
            }
        };
    }
    let _ = request.validate();
    let key = crate::era_cache::EraCache::key(request.target());
    // No query, and no userinfo in the key's authority (a path may hold an
    // `@` of its own); the query and userinfo are in its fingerprint.
    assert!(!key.contains('?'), "a query in a key");
    if let Some((_, rest)) = key.split_once("://") {
        let authority = rest.split('/').next().unwrap_or_default();
        assert!(!authority.contains('@'), "userinfo in a key");
    }
    if let crate::request::Target::Http { url: parsed, .. } = request.target() {
        assert!(!parsed.authority().is_some_and(|a| a.as_str().contains('@')));
    }
    let debug = format!("{request:?}");
    let Some((_, rest)) = url.split_once("://") else {
        return;
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    if let Some((userinfo, host)) = authority.rsplit_once('@') {
        // Long enough not to occur by chance elsewhere in the Debug text,
        // and not also written in the host or the path, where it is no
        // secret.
        let elsewhere = host.contains(userinfo) || after.contains(userinfo);
        if userinfo.len() >= 12 && !elsewhere {
            assert!(!debug.contains(userinfo), "userinfo in Debug");
        }
    }
}

/// The era-cache file reader: any text is a cache or a typed error, and a
/// cache read back from what it writes is the same cache.
pub fn era_cache(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cache) = crate::era_cache::EraCache::from_json(text) else {
        return;
    };
    let written = cache.to_json();
    let again =
        crate::era_cache::EraCache::from_json(&written).expect("the cache reads its own output");
    assert_eq!(
        again.to_json(),
        written,
        "the cache changed on a round trip"
    );
}

/// The value of the one variable the config target's environment has: it
/// must never be printed.
const CONFIG_SECRET: &str = "fz-secret-value";

/// The servers config reader: any text is a config or a typed file error;
/// in a config, every entry is read or refused on its own (one per key,
/// each refusal naming its entry), and the environment's or an input's
/// value reaches no `Debug` and no error's chain, even when the file
/// references it in a header, an argument or an environment value.
pub fn servers_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use crate::config::{Format, ServersConfig, Variables};
    let env = |name: &str| (name == "FUZZ_SECRET").then(|| CONFIG_SECRET.to_owned());
    let variables = Variables::new(&env).with_input("fuzz", CONFIG_SECRET);
    // Every reader: JSON (and JSONC), Codex's TOML, the strict standard.
    for format in [Format::Json, Format::Toml, Format::Standard] {
        if let Ok(config) = ServersConfig::parse_as(text, format, &variables) {
            check_config(&config);
        }
    }
}

/// `error` and every source below it, as one text.
fn chain(error: &dyn std::error::Error) -> String {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

fn check_config(config: &crate::config::ServersConfig) {
    let shown = format!("{config:?}");
    assert!(!shown.contains(CONFIG_SECRET), "a secret in Debug");
    let mut names = std::collections::HashSet::new();
    for entry in config.entries() {
        let name = match entry {
            Ok(server) => {
                let launch = server.launch().to_string();
                assert!(!launch.contains(CONFIG_SECRET), "a secret in a launch");
                server.name()
            }
            Err(error) => {
                assert!(
                    !chain(error).contains(CONFIG_SECRET),
                    "a secret in an error"
                );
                error.name()
            }
        };
        assert!(names.insert(name.to_owned()), "an entry read twice");
    }
}

/// A registry `server.json` (from a registry's API, or a file): any text
/// is a server or a typed error; resolved with every runtime there and
/// with none, every variable answered with a secret, the answer reaches
/// no error's chain and no stdio request's `Debug` (its arguments and
/// environment are counted, never shown), nor a remote's unless its URL
/// itself carries it (a variable in the URL's template). Its inputs are
/// listed without a panic. And what a document may not do, it never does
/// (`launch_is_safe`): the program is a known runtime, nothing of the
/// document is where the runtime reads options, no variable that changes
/// what runs is set, and this process's environment fills no template.
pub fn registry_server_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(server) = crate::registry::ServerJson::parse(text) else {
        return;
    };
    let _ = server.inputs();
    // A document that itself holds the answer (in its name, say) shows it
    // by right; only the answer's own way in is checked.
    let decoded = serde_json::from_str::<serde_json::Value>(text).map(|v| v.to_string());
    let document = decoded.unwrap_or_default();
    let unanswered = |_: &str| None;
    for every_runtime in [true, false] {
        if let Ok(request) = server.request_with(&|_| every_runtime, &unanswered) {
            launch_is_safe(&request, &document);
        }
    }
    if document.contains(CONFIG_SECRET) {
        return;
    }
    let answer = |_: &str| Some(CONFIG_SECRET.to_owned());
    for every_runtime in [true, false] {
        match server.request_with(&|_| every_runtime, &answer) {
            Ok(request) => {
                launch_is_safe(&request, &document);
                let in_url = request
                    .target()
                    .http_url()
                    .is_some_and(|url| url.to_string().contains(CONFIG_SECRET));
                if !in_url {
                    let shown = format!("{request:?}");
                    assert!(!shown.contains(CONFIG_SECRET), "a secret in Debug");
                }
            }
            Err(error) => {
                let chain = chain(&error);
                assert!(!chain.contains(CONFIG_SECRET), "a secret in an error");
            }
        }
    }
}

/// What a `server.json` may not make the launcher do (issue 63, item 1),
/// checked on a request it gave: a known runtime; the package reference
/// where no option is read; only the options this crate adds; no reserved
/// variable; no value of this process's environment in a remote's URL or
/// headers that the document did not write itself.
fn launch_is_safe(request: &crate::ConnectRequest, document: &str) {
    use crate::request::Target;
    match request.target() {
        Target::Stdio(command) => {
            let program = command.program().to_string_lossy().into_owned();
            let args: Vec<String> = (command.arguments().iter())
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect();
            let reference = match program.as_str() {
                "npx" => {
                    assert_eq!(args.get(..2), Some(&["-y".to_owned(), "--".to_owned()][..]));
                    args.get(2)
                }
                "uvx" | "dnx" => args.first(),
                "docker" => {
                    assert_eq!(
                        args.get(..3).map(|a| a.join(" ")).as_deref(),
                        Some("run -i --rm")
                    );
                    let mut at = 3;
                    while let Some(option) = args.get(at) {
                        match option.as_str() {
                            "--init" | "--read-only" => at += 1,
                            "-e" | "--env" => at += 2,
                            _ => break,
                        }
                    }
                    args.get(at)
                }
                other => panic!("a program the document chose: {other:?}"),
            };
            let reference = reference.expect("a package reference");
            assert!(
                !reference.starts_with('-'),
                "an option where the package goes"
            );
            for (name, _) in command.environment() {
                let name = name.to_string_lossy();
                assert!(
                    crate::registry::fuzz_variable_allowed(&name),
                    "a reserved variable set: {name}"
                );
            }
        }
        Target::Http { url, headers, .. } => {
            let Some(path) = std::env::var("PATH").ok().filter(|p| p.len() > 4) else {
                return;
            };
            if !document.contains(&path) {
                assert!(!url.to_string().contains(&path), "the environment in a URL");
                for value in headers.values() {
                    let value = String::from_utf8_lossy(value.as_bytes());
                    assert!(!value.contains(&path), "the environment in a header");
                }
            }
        }
    }
}

/// An `mcpb` bundle (a zip): its names are checked (no entry twice, none
/// two that fold to one, none leaving the folder) or it is a typed error;
/// one that is accepted unpacks into its private folder exactly (every
/// file, nothing more, no link, nothing outside), whatever the bytes.
pub fn mcpb_bundle(data: &[u8]) {
    crate::registry::fuzz_bundle(data);
}

#[cfg(test)]
mod tests;
