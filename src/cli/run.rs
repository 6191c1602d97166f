//! The command's flow: parse, connect, optionally use, close, summarize.

use super::authorize::LoopbackRedirect;
use mcp_connect::auth::{Authorization, FileTokenStore, StoreError, TokenStore, Tokens};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::Parser;
use mcp_connect::demo::DemoServer;
use mcp_connect::inbound::{elicitation_defaults, notification_channel, ClientHandler};
use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::layers::Classify;
use mcp_connect::transport::{HttpClient, StdioCommand};
use mcp_connect::{
    ClientError, ConnectRequest, Connector, EraCache, Error, EstablishBuilder, Limits, McpClient,
    ReplayPolicy, RequestOptions, Session, TransportMode, VersionPolicy,
};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::{Args, Elicit, Mode, Recovery, Replay};
use super::output::Printer;
use super::signals::{Received, Signals};

pub(crate) fn main() -> ExitCode {
    let args = Args::parse();
    install_tracing();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-connect: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(args))
}

/// `RUST_LOG` turns on the library's `tracing` output on stderr; without it
/// nothing is logged. The events are payload-free by construction (no
/// header values, session ids, bodies or server messages).
fn install_tracing() {
    if std::env::var_os("RUST_LOG").is_none() {
        return;
    }
    match tracing_subscriber::EnvFilter::try_from_default_env() {
        Ok(filter) => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        Err(_) => eprintln!("mcp-connect: RUST_LOG is not a valid filter; logging stays off"),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("mcp-connect: {message}");
    ExitCode::from(2)
}

/// An error and its causes on one line, each cause after a colon.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The options that refine an OAuth grant, each with whether it was given.
fn grant_options(args: &Args) -> [(bool, &'static str); 4] {
    [
        (args.client_id.is_some(), "--client-id"),
        (args.client_secret_env.is_some(), "--client-secret-env"),
        (args.scope.is_some(), "--scope"),
        (args.token_store.is_some(), "--token-store"),
    ]
}

/// The first option given that only an HTTP target can use.
fn http_only_option(args: &Args) -> Option<&'static str> {
    [
        (!args.headers.is_empty(), "--header"),
        (args.auth, "--auth"),
        (args.client_credentials, "--client-credentials"),
    ]
    .into_iter()
    .chain(grant_options(args))
    .find_map(|(given, name)| given.then_some(name))
}

/// The first OAuth option given without `--auth` or `--client-credentials`,
/// which alone would do nothing.
fn orphan_auth_option(args: &Args) -> Option<&'static str> {
    if args.auth || args.client_credentials {
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

/// The connect request the arguments describe, or the usage error to print.
fn request_from(args: &Args, demo_url: Option<String>) -> Result<ConnectRequest, String> {
    if args.command.is_some() {
        if let Some(option) = http_only_option(args) {
            return Err(format!("{option} needs an HTTP target, not a stdio server"));
        }
    }
    if let Some(option) = orphan_auth_option(args) {
        return Err(format!("{option} needs --auth or --client-credentials"));
    }
    if let Some(path) = &args.token_store {
        check_token_store(path)?;
    }
    let request = match (&args.url, &args.command, demo_url.as_ref()) {
        (Some(_), Some(_), _) => return Err("give a URL or a command after --, not both".into()),
        (None, Some(command), _) => {
            let (program, rest) = command
                .split_first()
                .ok_or("-- must be followed by a command")?;
            ConnectRequest::stdio(StdioCommand::new(program).args(rest))
        }
        (Some(url), None, _) | (None, None, Some(url)) => {
            ConnectRequest::http(url).map_err(|e| chain(&e))?
        }
        (None, None, None) => return Err("no target".into()),
    };
    let mut request = request
        .with_mode(match args.transport {
            Mode::Auto => TransportMode::Auto,
            Mode::StreamableHttp => TransportMode::StreamableHttp,
            Mode::Sse => TransportMode::Sse,
            Mode::Stdio => TransportMode::Stdio,
        })
        .with_limits(
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
    let secret = match &args.client_secret_env {
        Some(var) => {
            Some(std::env::var(var).map_err(|_| format!("--client-secret-env: {var} is not set"))?)
        }
        None => None,
    };
    let mut auth = if args.client_credentials {
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
    if let Some(path) = &args.token_store {
        auth = auth.with_token_store(Reported(FileTokenStore::new(path)));
    }
    Ok(Some(auth))
}

async fn run(args: Args) -> ExitCode {
    let tool_args = match serde_json::from_str::<serde_json::Value>(&args.tool_args) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => return usage("--args must be a JSON object"),
    };
    // clap drops a trailing `--` with nothing after it; it is not "no target".
    if args.command.is_none() && std::env::args_os().last().is_some_and(|a| a == "--") {
        return usage("-- must be followed by a command");
    }
    // Watching starts before anything is opened, so nothing escapes it.
    let cancel = CancellationToken::new();
    let signals = match Signals::watch(cancel.clone()) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("mcp-connect: cannot watch for signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let printer = Arc::new(Printer::new(args.json));
    let started = Instant::now();

    let mut demo = None;
    let demo_url = if args.url.is_none() && args.command.is_none() {
        match DemoServer::start().await {
            Ok(server) => Some(demo.insert(server).url()),
            Err(e) => {
                eprintln!("mcp-connect: cannot start the demo server: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let mut request = match request_from(&args, demo_url) {
        Ok(request) => request.with_cancellation(cancel.clone()),
        Err(message) => return usage(&message),
    };

    let era_cache = match &args.era_cache {
        None => None,
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => match EraCache::from_json(&text) {
                Ok(cache) => Some(cache),
                Err(_) => {
                    return usage(
                        "--era-cache: the file is not an era cache; it was left untouched",
                    )
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(EraCache::new()),
            Err(e) => return usage(&format!("--era-cache: cannot read the file: {e}")),
        },
    };
    if let Some(cache) = &era_cache {
        request = request.with_era_cache(cache.clone());
    }
    match handler_from(&args) {
        Ok(handler) => request = request.with_handler(handler),
        Err(message) => return usage(&message),
    }
    // Progress is printed from each call's own callback; other
    // notifications here, when asked for.
    let mut notices = None;
    if args.notifications {
        let (listener, mut notifications) = notification_channel(256);
        request = request.with_notifications(listener);
        let shown = Arc::clone(&printer);
        notices = Some(tokio::spawn(async move {
            while let Some(notification) = notifications.recv().await {
                if notification.method != "notifications/progress" {
                    shown.notification(&notification.method);
                }
            }
        }));
    }

    // Counted below the transports, so every request the command sends is seen.
    let sent = Arc::new(AtomicU64::new(0));
    let connector =
        Connector::with_client(HttpClient::default_client().counting(Arc::clone(&sent)));
    if let Err(error) = connector.validate(&request) {
        return usage(&chain(&error));
    }
    printer.target(&request.target().to_string(), demo.is_some());
    let recovery = match args.recovery {
        Recovery::Off => RecoveryPolicy::disabled(),
        Recovery::Default => RecoveryPolicy::new().with_max_attempts(args.max_attempts),
    };
    let stack = EstablishBuilder::new(connector)
        .with_recovery(recovery)
        .with_deadline(args.deadline)
        .with_metrics(printer.clone())
        .build();

    let client = McpClient::lazy(stack, request).with_replay(match args.replay {
        Replay::Never => ReplayPolicy::Never,
        Replay::Undelivered => ReplayPolicy::Undelivered,
    });
    let outcome = match client.session().await {
        Ok((session, _)) => Ok(session),
        Err(ClientError::Connect(error)) => Err(error),
        Err(other) => unreachable!("the first session is built, not cooled down: {other:?}"),
    };
    let established_in = started.elapsed();
    let mut ok = outcome.is_ok();
    if let Ok(session) = &outcome {
        let work = async {
            let mut ok = true;
            if args.list_tools {
                ok &= list_tools(&printer, session).await;
            }
            if args.list_resources {
                let listed = session.list_resources().await;
                ok &= listing(
                    &printer,
                    "resources",
                    listed.map(|r| r.into_iter().map(|r| r.uri).collect()),
                );
            }
            if args.list_prompts {
                let listed = session.list_prompts().await;
                ok &= listing(
                    &printer,
                    "prompts",
                    listed.map(|p| p.into_iter().map(|p| p.name).collect()),
                );
            }
            if let Some(name) = &args.call_tool {
                ok &= watch(
                    &printer,
                    &client,
                    name,
                    &tool_args,
                    args.repeat,
                    args.interval,
                )
                .await;
            }
            ok
        };
        ok = tokio::select! {
            biased;
            _ = cancel.cancelled() => false,
            worked = work => worked,
        };
        // Bounded: a server that never answers the DELETE cannot hold the exit.
        match tokio::time::timeout(CLOSE_BOUND, client.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => report_error(&printer, "close", &error),
            Err(_) => printer.line(
                "close did not finish in time",
                serde_json::json!({ "event": "error", "operation": "close", "kind": "timeout" }),
            ),
        }
    }
    let outcome = outcome.as_deref();
    let attempts = match &outcome {
        Ok(_) => printer.last_attempt(),
        Err(error) => error.attempts(),
    };
    printer.summary(
        outcome.map_err(|e| (e as &(dyn std::error::Error + 'static), e.failure())),
        established_in,
        sent.load(Ordering::Relaxed),
        attempts,
        signals.received().map(Received::name),
    );
    if let (Some(cache), Some(path)) = (&era_cache, &args.era_cache) {
        if let Err(e) = std::fs::write(path, cache.to_json()) {
            eprintln!("mcp-connect: cannot write the era cache: {e}");
            ok = false;
        }
    }
    drop(demo);
    if let Some(notices) = notices {
        notices.abort();
    }
    match signals.received() {
        Some(signal) => ExitCode::from(signal.exit_code()),
        None if ok => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
    }
}

/// How long closing the session may take when the command ends (the stdio
/// close ladder needs up to two grace periods).
const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// The server-request handler the arguments ask for: only what was asked
/// is offered.
fn handler_from(args: &Args) -> Result<ClientHandler, String> {
    let mut handler = ClientHandler::new();
    match args.elicit {
        None => {}
        Some(Elicit::Decline) => {
            handler = handler.on_elicitation(|_| async { Ok(json!({ "action": "decline" })) });
        }
        Some(Elicit::Defaults) => {
            handler = handler.on_elicitation(|params| async move {
                Ok(json!({ "action": "accept", "content": elicitation_defaults(&params) }))
            });
        }
    }
    if let Some(text) = &args.sample {
        let text = text.clone();
        handler = handler.on_sampling(move |_| {
            let text = text.clone();
            async move {
                Ok(json!({ "role": "assistant", "model": "mcp-connect-canned",
                           "content": { "type": "text", "text": text },
                           "stopReason": "endTurn" }))
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

fn listing(printer: &Printer, what: &str, listed: Result<Vec<String>, Error>) -> bool {
    match listed {
        Ok(names) => {
            printer.listing(what, &names);
            true
        }
        Err(error) => {
            report_error(printer, &format!("list_{what}"), &error);
            false
        }
    }
}

async fn list_tools(printer: &Printer, session: &Session) -> bool {
    match session.list_tools().await {
        Ok(list) => {
            printer.tools(
                &list
                    .tools
                    .iter()
                    .map(|t| t.name.clone())
                    .collect::<Vec<_>>(),
            );
            for excluded in &list.excluded {
                printer.excluded_tool(&excluded.name, &excluded.reason);
            }
            true
        }
        Err(error) => {
            report_error(printer, "list_tools", &error);
            false
        }
    }
}

/// Calls the tool `repeat` times through the long-lived client, one line per
/// call; true when every call succeeded.
async fn watch(
    printer: &Arc<Printer>,
    client: &McpClient,
    name: &str,
    arguments: &serde_json::Value,
    repeat: u32,
    interval: std::time::Duration,
) -> bool {
    let mut all_ok = true;
    let mut last_generation = client.generation();
    for n in 1..=repeat {
        if n > 1 {
            tokio::time::sleep(interval).await;
        }
        let shown = Arc::clone(printer);
        let options =
            RequestOptions::new().with_progress(move |p| shown.progress(p.progress, p.total));
        let result = client.call_tool_with(name, arguments, &options).await;
        let generation = match &result {
            Ok(_) => client.generation(),
            Err(e) => e.generation().unwrap_or_else(|| client.generation()),
        };
        let reconnected = generation > last_generation;
        last_generation = generation;
        all_ok &= matches!(&result, Ok(r) if !r.is_error);
        printer.call(n, name, &result, generation, reconnected);
    }
    all_ok
}

fn report_error(printer: &Printer, operation: &str, error: &Error) {
    let failure = error.failure();
    printer.line(
        &format!(
            "{operation} failed: {}",
            super::output::shown(&chain(error))
        ),
        serde_json::json!({
            "event": "error",
            "operation": operation,
            "kind": failure.kind.as_str(),
            "http_status": failure.http_status,
            "jsonrpc_code": failure.jsonrpc_code,
        }),
    );
}

/// The command's token store: a file, whose failed saves the person is
/// told about on stderr (the next run would ask them again).
struct Reported(FileTokenStore);

impl TokenStore for Reported {
    fn load(&self, resource: &str) -> Option<Tokens> {
        self.0.load(resource)
    }

    fn save(&self, resource: &str, tokens: &Tokens) -> Result<(), StoreError> {
        let saved = self.0.save(resource, tokens);
        if let Err(error) = &saved {
            eprintln!(
                "mcp-connect: --token-store: the tokens were not saved: {}",
                chain(error)
            );
        }
        saved
    }

    fn forget(&self, resource: &str) -> Result<(), StoreError> {
        let forgotten = self.0.forget(resource);
        if let Err(error) = &forgotten {
            eprintln!(
                "mcp-connect: --token-store: refused tokens were not removed: {}",
                chain(error)
            );
        }
        forgotten
    }
}
