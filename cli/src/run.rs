//! The command's flow: parse, connect, optionally use, close, summarize.

use mcp_connect::protocol::NotificationKind;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::Parser;
use mcp_connect::client::replay::ReplayPolicy;
use mcp_connect::client::ClientError;
use mcp_connect::demo::DemoServer;
use mcp_connect::era_cache::EraCache;
use mcp_connect::extensions::skills::ListSkills;
use mcp_connect::inbound::notification_channel;
use mcp_connect::protocol::{CallTool, ListPrompts, ListResources};
use mcp_connect::session::{Call, RequestOptions};
use mcp_connect::{Connector, Error, EstablishBuilder, McpClient, Session};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::{Args, Replay};
use super::output::{chain, Printer, TargetLine};
use super::request::{described_server, handler_from, http_client, recovery_from, request_from};
use super::signals::{Received, Signals};
use super::{usage, CLOSE_BOUND};
use mcp_connect::registry::ServerJson;

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
    let code = runtime.block_on(run(args));
    // A file read that never returns (a FIFO with no writer) holds a
    // blocking thread: exit without waiting for it.
    runtime.shutdown_background();
    code
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

async fn run(args: Args) -> ExitCode {
    let tool_args = match serde_json::from_str::<serde_json::Value>(&args.tool_args) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => return usage("--args must be a JSON object"),
    };
    // clap drops a trailing `--` with nothing after it; it is not "no target".
    if args.command.is_none() && std::env::args_os().last().is_some_and(|a| a == "--") {
        return usage("-- must be followed by a command");
    }
    warn_about_own_options_after_dash_dash(&args);
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
    if let Some(path) = &args.config {
        return super::config::run(&args, path, &printer, &cancel, &signals, &tool_args).await;
    }
    let started = Instant::now();

    let mut demo = None;
    let described = match described_server(&args).await {
        Ok(described) => described,
        Err(message) => return usage(&message),
    };
    let demo_url = if args.url.is_none() && args.command.is_none() && described.is_none() {
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
    let mut request = match request_from(&args, demo_url, described.as_ref()) {
        Ok(request) => request.with_cancellation(cancel.clone()),
        Err(message) => return usage(&message),
    };

    let era_redis = match args
        .era_cache
        .as_deref()
        .map(|place| super::stores::redis_url(place, "--era-cache"))
        .transpose()
    {
        Ok(url) => url.flatten(),
        Err(message) => return usage(&message),
    };
    let era_cache = match (&args.era_cache, &era_redis) {
        (None, _) => None,
        (Some(_), Some(url)) => match super::stores::redis_stores(&args, url, "--era-cache") {
            Ok(stores) => Some(EraCache::new().with_store(stores.eras())),
            Err(message) => return usage(&message),
        },
        (Some(path), None) => match std::fs::read_to_string(path) {
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
                if notification.kind() != NotificationKind::Progress {
                    shown.notification(&notification.method);
                }
            }
        }));
    }

    // Counted below the transports, so every request the command sends is seen.
    let sent = Arc::new(AtomicU64::new(0));
    let client = match http_client(&args, demo.is_some()) {
        Ok(client) => client,
        Err(message) => return usage(&message),
    };
    if let Some(socket) = &args.unix_socket {
        // The server's own client: the exporter's stays on the network.
        let over_socket = mcp_connect::transport::HttpClient::builder()
            .redirects(
                mcp_connect::transport::RedirectPolicy::new().with_max_hops(args.max_redirects),
            )
            .unix_socket(socket)
            .build()
            .counting(Arc::clone(&sent));
        request = request
            .with_unix_socket(socket)
            .with_http_client(over_socket);
    }
    // Where the proxy is, never its credentials.
    let proxy = match request.target() {
        _ if args.unix_socket.is_some() => None,
        mcp_connect::request::Target::Http { url, .. } => {
            client.proxy_for(url).map(|p| p.to_string())
        }
        _ => None,
    };
    // The exporter shares the client, but not its request count.
    let otlp = match args
        .otlp
        .as_deref()
        .map(|url| super::otlp::Otlp::start(url, &client))
    {
        Some(Ok(otlp)) => {
            request = request.with_telemetry(otlp.telemetry());
            Some(otlp)
        }
        Some(Err(message)) => return usage(&message),
        None => None,
    };
    let connector = Connector::with_client(client.counting(Arc::clone(&sent)));
    if let Err(error) = connector.validate(&request) {
        return usage(&chain(&error));
    }
    printer.target(&TargetLine {
        shown: &request.target().to_string(),
        registry: described.as_ref().map(ServerJson::name),
        socket: args.unix_socket.as_deref(),
        demo: demo.is_some(),
        proxy: proxy.as_deref(),
    });
    let stack = EstablishBuilder::new(connector)
        .with_recovery(recovery_from(&args))
        .with_deadline(args.deadline)
        .with_metrics(printer.clone())
        .build();

    // The signal ends the first establishment and every reconnect of
    // watch mode.
    let replicas = match replicas(&args, &request) {
        Ok(replicas) => replicas,
        Err(message) => return usage(&message),
    };
    let client = McpClient::builder(stack.clone(), request.clone())
        .with_shutdown(cancel.clone())
        .with_replay(match args.replay {
            Replay::Never => ReplayPolicy::Never,
            Replay::Undelivered => ReplayPolicy::Undelivered,
        })
        .with_policies(call_policies(&args).with_replicas(replicas))
        .build();
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
                let listed = session.send(ListResources::all()).await;
                ok &= listing(
                    &printer,
                    "resources",
                    listed.map(|r| r.items.into_iter().map(|r| r.uri).collect()),
                );
            }
            if args.list_prompts {
                let listed = session.send(ListPrompts::all()).await;
                ok &= listing(
                    &printer,
                    "prompts",
                    listed.map(|p| p.items.into_iter().map(|p| p.name).collect()),
                );
            }
            if args.list_skills {
                let listed = session.send(ListSkills::all()).await;
                ok &= listing(
                    &printer,
                    "skills",
                    listed.map(|s| s.items.into_iter().map(|s| s.uri).collect()),
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
        proxy.as_deref(),
        signals.received().map(Received::name),
    );
    match (&era_cache, &args.era_cache, &era_redis) {
        // Bounded per write; Redis down costs a warning, not the run.
        (Some(cache), Some(_), Some(_)) if cache.save_to_store().await.is_err() => {
            eprintln!("mcp-connect: --era-cache: Redis did not take the eras");
        }
        (Some(cache), Some(path), None) => {
            if let Err(e) = std::fs::write(path, cache.to_json()) {
                eprintln!("mcp-connect: cannot write the era cache: {e}");
                ok = false;
            }
        }
        _ => {}
    }
    drop(client);
    drop(demo);
    if let Some(notices) = notices {
        notices.abort();
    }
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    match signals.received() {
        Some(signal) => ExitCode::from(signal.exit_code()),
        None if ok => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
    }
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

/// Everything after `--` is the server's command line; one of this
/// command's own long options there (`-- srv --call-tool x`) goes to the
/// server, not here, and the run would end with no call: say so (the
/// option's name only, never a value).
fn warn_about_own_options_after_dash_dash(args: &Args) {
    use clap::CommandFactory as _;
    let Some((_, rest)) = args.command.as_ref().and_then(|c| c.split_first()) else {
        return;
    };
    let own = Args::command();
    for arg in rest {
        let Some(long) = arg.strip_prefix("--") else {
            continue;
        };
        let long = long.split('=').next().unwrap_or_default();
        if own.get_arguments().any(|a| a.get_long() == Some(long)) {
            eprintln!(
                "mcp-connect: warning: --{} after -- goes to the server's command, not to mcp-connect; write it before --",
                super::output::shown(long)
            );
        }
    }
}

/// The per-server call policies the flags ask for, the bulkhead outermost
/// (it bounds retries too), the replicas innermost.
fn call_policies(args: &Args) -> mcp_connect::client::CallPolicies {
    let mut policies = mcp_connect::client::CallPolicies::new();
    if let Some(idle) = args.idle_timeout {
        policies = policies.with_idle_timeout(idle, args.request_timeout);
    }
    if args.retry_rate_limited {
        policies = policies.with_rate_limit_retry();
    }
    if let Some(delay) = args.hedge_after {
        // The person who asked for it says the tool is safe to run twice.
        policies = policies.with_hedge(delay, args.call_tool.iter().cloned());
    }
    if args.breaker {
        policies = policies.with_breaker();
    }
    if let Some(n) = args.max_in_flight {
        policies = policies.with_max_in_flight(n as usize);
    }
    policies
}

/// The target's request for each `--replica` URL; each becomes a client
/// on the same establishment stack, ended by the same signal.
fn replicas(
    args: &Args,
    request: &mcp_connect::ConnectRequest,
) -> Result<Vec<mcp_connect::ConnectRequest>, String> {
    args.replicas
        .iter()
        .map(|url| {
            request
                .for_replica(url)
                .map_err(|e| format!("--replica: {}", chain(&e)))
        })
        .collect()
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
        let call = Call::new(CallTool::new(name, arguments)).with_options(options);
        let result = client.send(call).await;
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
    let report = super::output::chain(error);
    printer.line(
        &format!("{operation} failed: {report}"),
        serde_json::json!({
            "event": "error",
            "operation": operation,
            "kind": failure.kind.as_str(),
            "http_status": failure.http_status,
            "jsonrpc_code": failure.jsonrpc_code,
            "error": report,
        }),
    );
}
