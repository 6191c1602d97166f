//! From the command's arguments to a `ConnectRequest`: the target, the
//! transport, the limits, authorization with its token store, and the
//! server-request handler. Every mistake a person can make on the command
//! line is a usage message here, before anything connects.

use mcp_connect::auth::{AssertionSource, Authorization, DpopKey, IdentityProvider};
use mcp_connect::config::Input;
use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::protocol::server_requests::{CreateMessageResult, ElicitResult};
use mcp_connect::registry::{RegistryOptions, ServerJson};
use mcp_connect::request::{Limits, TransportMode, VersionPolicy};
use mcp_connect::store::FileTokenStore;
use mcp_connect::transport::StdioCommand;
use mcp_connect::ConnectRequest;

use super::args::{Args, Elicit, Recovery, TransportChoice};
use super::authorize::LoopbackRedirect;
use super::output::chain;
use super::stores::{redis_stores, redis_url, Reported};

/// The options that refine an OAuth grant, each with whether it was given.
fn grant_options(args: &Args) -> [(bool, &'static str); 5] {
    [
        (args.client_id.is_some(), "--client-id"),
        (args.client_secret_env.is_some(), "--client-secret-env"),
        (args.scope.is_some(), "--scope"),
        (args.token_store.is_some(), "--token-store"),
        (args.dpop, "--dpop"),
    ]
}

/// The ways of authorizing, each with whether it was given.
fn grants(args: &Args) -> [(bool, &'static str); 4] {
    [
        (args.auth, "--auth"),
        (args.client_credentials, "--client-credentials"),
        (args.workload_token_file.is_some(), "--workload-token-file"),
        (args.id_assertion_file.is_some(), "--id-assertion-file"),
    ]
}

/// The first option given that only an HTTP target can use.
fn http_only_option(args: &Args) -> Option<&'static str> {
    [(!args.headers.is_empty(), "--header")]
        .into_iter()
        .chain(grants(args))
        .chain(grant_options(args))
        .find_map(|(given, name)| given.then_some(name))
}

/// The first OAuth option given without a way of authorizing (`--auth`,
/// `--client-credentials`, `--workload-token-file`, `--id-assertion-file`),
/// which alone would do nothing.
fn orphan_auth_option(args: &Args) -> Option<&'static str> {
    if grants(args).iter().any(|(given, _)| *given) {
        return None;
    }
    grant_options(args)
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
}

/// Whether the token store's file can be written: an existing writable
/// file, or a name in an existing writable directory.
fn check_token_store(path: &std::path::Path) -> Result<(), String> {
    use nix::unistd::{access, AccessFlags};
    let problem = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Some("it is a directory"),
        Ok(_) => access(path, AccessFlags::W_OK)
            .is_err()
            .then_some("the file cannot be written"),
        Err(_) => {
            let parent = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => std::path::Path::new("."),
            };
            match std::fs::metadata(parent) {
                Ok(meta) if meta.is_dir() => access(parent, AccessFlags::W_OK | AccessFlags::X_OK)
                    .is_err()
                    .then_some("its directory cannot be written"),
                _ => Some("its directory does not exist"),
            }
        }
    };
    match problem {
        Some(problem) => Err(format!("--token-store: {problem}")),
        None => Ok(()),
    }
}

/// The server a registry `server.json` describes: read from
/// `--server-json FILE`, or fetched by `--registry-server NAME@VERSION`
/// from `--registry` through the command's HTTP client (its proxy and CA).
pub(super) async fn described_server(args: &Args) -> Result<Option<ServerJson>, String> {
    if let Some(path) = &args.server_json {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("--server-json: cannot read: {}", chain(&error)))?;
        let server = ServerJson::parse(&text)
            .map_err(|error| format!("--server-json: {}", chain(&error)))?;
        let client = http_client(args, false)?;
        return (server.prepare(&client, &registry_options(args)?).await)
            .map(Some)
            .map_err(|error| format!("--server-json: {}", chain(&error)));
    }
    let Some(wanted) = &args.registry_server else {
        return Ok(None);
    };
    let (name, version) = match wanted.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (wanted.as_str(), None),
    };
    let client = http_client(args, false)?;
    let options = registry_options(args)?;
    let fetched = ServerJson::fetch_pinned(&client, &options, name, version).await;
    let prepared = match fetched {
        Ok(server) => server.prepare(&client, &options).await,
        Err(error) => Err(error),
    };
    let hint = match prepared {
        Err(mcp_connect::registry::RegistryError::Unpinned { .. }) => {
            ": give NAME@VERSION, or --allow-unpinned for the latest"
        }
        _ => "",
    };
    (prepared.map(Some)).map_err(|error| format!("--registry-server: {}{hint}", chain(&error)))
}

/// The request a `server.json` gives, its variables answered by `--var`
/// (never the environment by itself: a document would read whatever it
/// names), and every one still missing asked on the terminal at once (a
/// secret without echo).
fn described_request(server: &ServerJson, vars: &[String]) -> Result<ConnectRequest, String> {
    use mcp_connect::registry::RegistryError;
    let mut given = given_vars(vars)?;
    let mut asked = false;
    loop {
        let answer = |name: &str| {
            let typed = given.iter().find(|(id, _)| id == name);
            typed.map(|(_, value)| value.clone())
        };
        match server.request_answered(&answer) {
            Err(error @ RegistryError::MissingVariables { .. }) if !asked => {
                let RegistryError::MissingVariables { variables, .. } = &error else {
                    unreachable!("matched above")
                };
                let declared: Vec<Input> = server.inputs().iter().map(Input::from).collect();
                let wanted: Vec<&str> = variables.iter().map(String::as_str).collect();
                let typed = super::prompt::ask_for(&declared, &wanted);
                given.extend(typed.ok_or_else(|| chain(&error))?);
                asked = true;
            }
            other => return other.map_err(|error| chain(&error)),
        }
    }
}

/// `--var NAME=VALUE` (the value) and `--var NAME` (the environment
/// variable of that name: the user names it for the document).
fn given_vars(vars: &[String]) -> Result<Vec<(String, String)>, String> {
    vars.iter()
        .map(|var| match var.split_once('=') {
            Some((name, value)) => Ok((name.to_owned(), value.to_owned())),
            None => std::env::var(var)
                .map(|value| (var.clone(), value))
                .map_err(|_| format!("--var {var}: the environment has no {var}")),
        })
        .collect()
}

/// How the registry is asked: `--registry`, `--allow-unpinned`, within the
/// handshake timeout.
pub(super) fn registry_options(args: &Args) -> Result<RegistryOptions, String> {
    let base = url::Url::parse(&args.registry).map_err(|_| "--registry: not a URL".to_owned())?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err("--registry: not an http:// or https:// URL".to_owned());
    }
    let options = RegistryOptions::new(base).with_time_limit(args.handshake_timeout);
    Ok(match args.allow_unpinned {
        true => options.allow_unpinned(),
        false => options,
    })
}

/// The connect request the arguments describe, or the usage error to print.
pub(super) fn request_from(
    args: &Args,
    demo_url: Option<String>,
    described: Option<&ServerJson>,
) -> Result<ConnectRequest, String> {
    if args.command.is_some() {
        if let Some(option) = http_only_option(args) {
            return Err(format!("{option} needs an HTTP target, not a stdio server"));
        }
    }
    if let Some(option) = orphan_auth_option(args) {
        return Err(format!("{option} needs --auth or --client-credentials"));
    }
    if let Some(place) = &args.token_store {
        if redis_url(place, "--token-store")?.is_none() {
            check_token_store(std::path::Path::new(place))?;
        }
    }
    let described = match described {
        Some(server) => Some(described_request(server, &args.vars)?),
        None => None,
    };
    let from_registry = described.is_some();
    let request = match (described, &args.url, &args.command, demo_url.as_ref()) {
        (Some(request), ..) => request,
        (None, Some(_), Some(_), _) => {
            return Err("give a URL or a command after --, not both".into())
        }
        (None, None, Some(command), _) => {
            let (program, rest) = command
                .split_first()
                .ok_or("-- must be followed by a command")?;
            ConnectRequest::stdio(StdioCommand::new(program).args(rest))
        }
        (None, Some(url), None, _) | (None, None, None, Some(url)) => {
            ConnectRequest::http(url).map_err(|e| chain(&e))?
        }
        (None, None, None, None) => return Err("no target".into()),
    };
    // A server.json remote says its own transport unless --transport does.
    let mode = match args.transport {
        TransportChoice::Auto if from_registry => request.mode(),
        TransportChoice::Auto => TransportMode::Auto,
        TransportChoice::StreamableHttp => TransportMode::StreamableHttp,
        TransportChoice::Sse => TransportMode::Sse,
        TransportChoice::Stdio => TransportMode::Stdio,
    };
    let mut request = with_limits_and_versions(request.with_mode(mode), args);
    if let Some(auth) = authorization(args)? {
        request = request.with_authorization(auth);
    }
    for header in &args.headers {
        let (name, value) = header
            .split_once(':')
            .ok_or("--header takes 'Name: value'")?;
        request = request
            .with_header(name.trim(), value.trim())
            .map_err(|e| format!("--header {}: {}", name.trim(), chain(&e)))?;
    }
    Ok(request)
}

/// The authorization the arguments ask for, if any.
fn authorization(args: &Args) -> Result<Option<Authorization>, String> {
    let from_env = |var: &Option<String>, flag: &str| match var {
        Some(var) => std::env::var(var)
            .map(Some)
            .map_err(|_| format!("{flag}: {var} is not set")),
        None => Ok(None),
    };
    let secret = from_env(&args.client_secret_env, "--client-secret-env")?;
    let mut auth = if let Some(file) = &args.workload_token_file {
        let Some(id) = &args.client_id else {
            return Err("--workload-token-file needs --client-id".into());
        };
        Authorization::workload_identity(id, AssertionSource::file(file))
    } else if let Some(file) = &args.id_assertion_file {
        let (Some(endpoint), Some(idp_id), Some(id)) = (
            &args.idp_token_endpoint,
            &args.idp_client_id,
            &args.client_id,
        ) else {
            return Err(
                "--id-assertion-file needs --idp-token-endpoint, --idp-client-id and --client-id"
                    .into(),
            );
        };
        let mut idp = IdentityProvider::new(endpoint, idp_id)
            .map_err(|_| "--idp-token-endpoint is not a URL".to_owned())?;
        if let Some(idp_secret) = from_env(&args.idp_client_secret_env, "--idp-client-secret-env")?
        {
            idp = idp.with_client_secret(idp_secret);
        }
        let mut auth =
            Authorization::enterprise_managed(idp, AssertionSource::file(file)).with_client_id(id);
        if let Some(secret) = &secret {
            auth = auth.with_client_secret(secret);
        }
        auth
    } else if args.client_credentials {
        let (Some(id), Some(secret)) = (&args.client_id, &secret) else {
            return Err("--client-credentials needs --client-id and --client-secret-env".into());
        };
        Authorization::client_credentials(id, secret)
    } else if args.auth {
        let redirect = LoopbackRedirect::bind()
            .map_err(|e| format!("--auth: cannot listen for the redirect: {e}"))?;
        let uri = redirect.redirect_uri();
        let mut auth = Authorization::authorization_code(redirect).with_redirect_uri(uri);
        if let Some(id) = &args.client_id {
            auth = auth.with_client_id(id);
        }
        if let Some(secret) = &secret {
            auth = auth.with_client_secret(secret);
        }
        auth
    } else {
        return Ok(None);
    };
    if let Some(scope) = &args.scope {
        auth = auth.with_scope(scope);
    }
    if args.dpop {
        let key = DpopKey::generate().map_err(|e| format!("--dpop: {}", chain(&e)))?;
        auth = auth.with_dpop(key);
    }
    if let Some(place) = args.token_store.as_deref() {
        match redis_url(place, "--token-store")? {
            Some(url) => {
                let stores = redis_stores(args, &url, "--token-store")?;
                auth = auth.with_token_store(Reported(stores.tokens()))
            }
            None => auth = auth.with_token_store(Reported(FileTokenStore::new(place))),
        }
    }
    Ok(Some(auth))
}

/// `request` with the limits and the version policy the arguments give
/// (shared by a single target and every server of `--config`).
pub(super) fn with_limits_and_versions(request: ConnectRequest, args: &Args) -> ConnectRequest {
    let mut request = request.with_limits(
        Limits::default()
            .with_probe_timeout(args.probe_timeout)
            .with_handshake_timeout(args.handshake_timeout)
            .with_request_timeout(args.request_timeout),
    );
    if let Some(pin) = &args.pin {
        request = request.with_versions(VersionPolicy::Pin(pin.clone()));
    }
    if let Some(ceiling) = &args.ceiling {
        request = request.with_versions(VersionPolicy::Ceiling(ceiling.clone()));
    }
    request
}

/// The recovery policy `--recovery` and `--max-attempts` ask for.
pub(super) fn recovery_from(args: &Args) -> RecoveryPolicy {
    match args.recovery {
        Recovery::Off => RecoveryPolicy::disabled(),
        Recovery::Default => RecoveryPolicy::new().with_max_attempts(args.max_attempts),
    }
}

/// The server-request handler the arguments ask for: only what was asked
/// is offered.
pub(super) fn handler_from(args: &Args) -> Result<ClientHandler, String> {
    let mut handler = ClientHandler::new();
    match args.elicit {
        None => {}
        Some(Elicit::Decline) => {
            handler = handler.on_elicitation(|_| async { Ok(ElicitResult::decline()) });
        }
        Some(Elicit::Defaults) => {
            handler = handler.on_elicitation(|request| async move {
                Ok(ElicitResult::accept(elicitation_defaults(&request)))
            });
        }
    }
    if let Some(text) = &args.sample {
        let text = text.clone();
        handler = handler.on_sampling(move |_| {
            let text = text.clone();
            async move {
                Ok(CreateMessageResult::text("mcp-connect-canned", text)
                    .with_stop_reason("endTurn"))
            }
        });
    }
    if !args.roots.is_empty() {
        let mut roots = Vec::new();
        for path in &args.roots {
            let absolute =
                std::path::absolute(path).map_err(|e| format!("--root {}: {e}", path.display()))?;
            let name = absolute
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            roots.push((file_uri(&absolute), name));
        }
        handler = handler.with_roots(roots);
    }
    Ok(handler)
}

/// A `file://` URI for an absolute path, percent-encoding what a URI path
/// may not hold.
fn file_uri(path: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                uri.push(*byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// The default HTTP client with the command's redirect limit, proxy, extra
/// CA and client certificate; a file that cannot be read or used is a usage
/// error naming the option, never the file's contents, and a proxy URL
/// that cannot be used one that never shows it. `direct` (the built-in
/// demo server) ignores every proxy.
pub(super) fn http_client(
    args: &Args,
    direct: bool,
) -> Result<mcp_connect::transport::HttpClient, String> {
    use mcp_connect::transport::{HttpClient, Proxy, RedirectPolicy};
    let proxy = match &args.proxy {
        _ if direct || args.no_proxy => Proxy::none(),
        Some(url) => {
            let proxy = Proxy::url(url).map_err(|error| format!("--proxy: {error}"))?;
            // NO_PROXY keeps its say over an explicit proxy, as with curl.
            let exceptions = ["NO_PROXY", "no_proxy"]
                .iter()
                .find_map(|name| std::env::var(name).ok());
            match exceptions {
                Some(rules) => proxy.with_no_proxy(&rules),
                None => proxy,
            }
        }
        None => Proxy::from_env(),
    };
    let builder = HttpClient::builder()
        .redirects(RedirectPolicy::new().with_max_hops(args.max_redirects))
        .proxy(proxy);
    #[cfg(feature = "rustls")]
    let builder = {
        let read = |option: &str, path: &std::path::Path| {
            std::fs::read(path).map_err(|error| format!("{option}: cannot read the file: {error}"))
        };
        let mut builder = builder;
        if let Some(path) = &args.cacert {
            builder = builder
                .add_root_certificates_pem(&read("--cacert", path)?)
                .map_err(|error| format!("--cacert: {error}"))?;
        }
        if let (Some(cert), Some(key)) = (&args.cert, &args.key) {
            builder = builder
                .client_certificate_pem(&read("--cert", cert)?, &read("--key", key)?)
                .map_err(|error| format!("--cert/--key: {error}"))?;
        }
        builder
    };
    #[cfg(not(feature = "rustls"))]
    if args.cacert.is_some() || args.cert.is_some() {
        return Err("--cacert and --cert need the rustls feature".to_owned());
    }
    Ok(builder.build())
}
