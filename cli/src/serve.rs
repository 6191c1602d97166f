//! `mcp-connect serve --config FILE --listen ADDR`: the file's servers as
//! one group, served as one MCP server over Streamable HTTP at
//! `http://ADDR/mcp` (`mcp-connect-gateway`), or with `--stdio` to one
//! client on stdin and stdout, until the first signal (or stdin's end); the
//! file read again on SIGHUP (and, with `--watch-config`, when it changes).
//!
//! Loopback only: the gateway has no authentication yet, and one on
//! another address would serve whoever reaches it.

use std::process::ExitCode;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use mcp_connect::group::ServerGroup;
use mcp_connect::{Connector, EstablishBuilder};
use mcp_connect_gateway::Gateway;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

use super::args::Args;
use super::config::{reload, unusable, ConfigFile, Members};
use super::output::{chain, Printer};
use super::reload::ReloadTriggers;
use super::request::{handler_from, recovery_from};
use super::signals::Signals;
use super::{usage, CLOSE_BOUND};

/// Runs `serve`; the exit code as a signal's (it runs until one).
pub(super) async fn run(
    args: &Args,
    mut file: ConfigFile,
    printer: &Arc<Printer>,
    cancel: &CancellationToken,
    signals: &Signals,
) -> ExitCode {
    if !args.stdio && !args.listen.ip().is_loopback() {
        return usage("--listen: a loopback address only (the gateway has no authentication yet)");
    }
    let mut triggers = match ReloadTriggers::new(&file.path, args.watch_config) {
        Ok(triggers) => triggers,
        Err(error) => return usage(&format!("--watch-config: {}", chain(&error))),
    };
    let (group, members) = match started(args, &file, printer, cancel) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let gateway = Gateway::builder(group.clone())
        .session_idle_timeout(args.session_idle_timeout)
        .max_sessions(args.max_sessions)
        .build();
    if args.stdio {
        return on_stdio(gateway, &group, cancel, signals).await;
    }
    let listener = match TcpListener::bind(args.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("mcp-connect: --listen: cannot listen: {error}");
            return ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().unwrap_or(args.listen);
    let url = format!("http://{addr}/mcp");
    printer.line(
        &format!("serving {} servers at {url}", group.names().len()),
        json!({ "event": "serving", "url": url, "servers": group.names().len() }),
    );
    let accepting = accept(listener, gateway);
    tokio::pin!(accepting);
    let far = || Instant::now() + std::time::Duration::from_secs(86_400);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = &mut accepting => break,
            Some(()) = triggers.before(far()) => {
                let reloaded = file.reread().await;
                reload(printer, &group, reloaded, &|_| true, &|s| members.member(s)).await;
            }
        }
    }
    group.shutdown_within(CLOSE_BOUND).await;
    match signals.received() {
        Some(signal) => ExitCode::from(signal.exit_code()),
        None => ExitCode::FAILURE,
    }
}

/// The group of the file's servers, each started as `--config` starts
/// it; the lines of the entries not usable.
fn started<'a>(
    args: &'a Args,
    file: &ConfigFile,
    printer: &Printer,
    cancel: &CancellationToken,
) -> Result<(ServerGroup, Members<'a>), ExitCode> {
    let handler = handler_from(args).map_err(|message| usage(&message))?;
    let stack = EstablishBuilder::new(Connector::with_client(file.client.clone()))
        .with_recovery(recovery_from(args))
        .with_deadline(args.deadline)
        .build();
    let members = Members {
        args,
        stack,
        handler,
        cancel: cancel.clone(),
    };
    let disabled: Vec<_> = file.config.disabled().collect();
    unusable(printer, file.config.errors(), &disabled);
    let group = ServerGroup::new();
    for server in file.config.servers() {
        // Names in a config file are unique: this cannot be a duplicate.
        let _ = group.add(members.member(server));
    }
    Ok((group, members))
}

/// `--stdio`: one client on stdin and stdout, until stdin ends (exit 0)
/// or the first signal.
async fn on_stdio(
    gateway: Gateway,
    group: &ServerGroup,
    cancel: &CancellationToken,
    signals: &Signals,
) -> ExitCode {
    let serving = gateway.serve_stdio(tokio::io::stdin(), tokio::io::stdout());
    tokio::select! {
        biased;
        () = cancel.cancelled() => {}
        _ = serving => {}
    }
    group.shutdown_within(CLOSE_BOUND).await;
    match signals.received() {
        Some(signal) => ExitCode::from(signal.exit_code()),
        // The client closed stdin: the end of a stdio server's life.
        None => ExitCode::SUCCESS,
    }
}

/// Serves each connection on a task of its own: the gateway at `/mcp`,
/// 404 elsewhere. Ends only when the listener fails.
async fn accept(listener: TcpListener, gateway: Gateway) {
    while let Ok((stream, _)) = listener.accept().await {
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: http::Request<_>| {
                let mut gateway = gateway.clone();
                async move {
                    if request.uri().path() != "/mcp" {
                        let mut missing = http::Response::new(Default::default());
                        *missing.status_mut() = http::StatusCode::NOT_FOUND;
                        return Ok(missing);
                    }
                    gateway.call(request).await
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
