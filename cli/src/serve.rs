//! `mcp-connect serve --config FILE --listen ADDR`: the file's servers as
//! one group, served as one MCP server over Streamable HTTP at
//! `http://ADDR/mcp` (`mcp-connect-gateway`), or with `--stdio` to one
//! client on stdin and stdout, until the first signal (or stdin's end); the
//! file read again on SIGHUP (and, with `--watch-config`, when it changes).
//!
//! On another address than loopback it needs bearer tokens
//! (`--bearer-token-env`) or an OAuth issuer (`--issuer`): a gateway with
//! no authentication there would serve whoever reaches it.

use std::process::ExitCode;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use mcp_connect::group::{RememberedListings, ServerGroup};
use mcp_connect::store::redis::RedisStores;
use mcp_connect::{Connector, EstablishBuilder};
use mcp_connect_gateway::{Allowed, Gateway, GatewayBuilder};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

use super::args::Args;
use super::config::{reload, unusable, ConfigFile, Members};
use super::otlp::Otlp;
use super::output::{chain, Printer};
use super::reload::ReloadTriggers;
use super::request::{handler_from, recovery_from};
use super::serve_sessions::Entries;
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
    let mut triggers = match ReloadTriggers::new(&file.path, args.watch_config) {
        Ok(triggers) => triggers,
        Err(error) => return usage(&format!("--watch-config: {}", chain(&error))),
    };
    // Checked before anything starts: a usage error sends nothing.
    let checked = match checked(args, &file) {
        Ok(checked) => checked,
        Err(message) => return usage(&message),
    };
    let (otlp, replicas, issuer) = (checked.otlp, checked.replicas, checked.issuer);
    let remembered = match super::stores::remembered_listings(args).await {
        Ok(listings) => listings,
        Err(message) => return usage(&message),
    };
    let members = (otlp.as_ref(), remembered.as_ref());
    let (group, members) = match started(args, &file, printer, cancel, members) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let entries = Entries::default();
    entries.refresh(&file.config, &members);
    let mut gateway = Gateway::builder(group.clone())
        .session_idle_timeout(args.session_idle_timeout)
        .max_sessions(args.max_sessions)
        .keepalive(args.keepalive)
        .allowed_hosts(checked.hosts)
        .bearer_tokens(checked.tokens)
        .session_clients(entries.maker(members.stack.clone()));
    gateway = checked.governance.apply(gateway);
    if let Some(otlp) = &otlp {
        gateway = gateway.telemetry(otlp.server_telemetry());
    }

    if args.stdio {
        return flushed(
            otlp,
            on_stdio(gateway.build(), &group, cancel, signals).await,
        );
    }
    let listening = listening(args, (gateway, issuer), replicas, &file, printer);
    let (listener, gateway) = match listening.await {
        Ok(listening) => listening,
        Err(code) => return code,
    };
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
                if let Ok(config) = &reloaded {
                    entries.refresh(config, &members);
                }
                reload(printer, &group, reloaded, &|_| true, &|s| members.member(s)).await;
            }
        }
    }
    group.shutdown_within(CLOSE_BOUND).await;
    super::stores::save_listings(remembered.as_ref()).await;
    let code = match signals.received() {
        Some(signal) => ExitCode::from(signal.exit_code()),
        None => ExitCode::FAILURE,
    };
    flushed(otlp, code)
}

/// Listens at --listen, shares sessions with the replicas, and says
/// where it serves.
async fn listening(
    args: &Args,
    (mut gateway, issuer): (GatewayBuilder, Option<super::serve_auth::Issuer>),
    replicas: Option<(RedisStores, Option<http::Uri>)>,
    file: &ConfigFile,
    printer: &Printer,
) -> Result<(TcpListener, Gateway), ExitCode> {
    let listener = match TcpListener::bind(args.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("mcp-connect: --listen: cannot listen: {error}");
            return Err(ExitCode::FAILURE);
        }
    };
    let addr = listener.local_addr().unwrap_or(args.listen);
    if let Some(issuer) = issuer {
        gateway = gateway.resource_server(issuer.server(addr, &file.client));
    }
    let gateway = shared(gateway, replicas, addr, file).await?;
    let url = format!("http://{addr}/mcp");
    let servers = file.config.servers().count();
    printer.line(
        &format!("serving {servers} servers at {url}"),
        json!({ "event": "serving", "url": url, "servers": servers }),
    );
    Ok((listener, gateway))
}

/// What `serve` checks before anything starts: who may call, the replicas
/// it shares sessions with, where its telemetry goes.
struct Checked {
    tokens: Vec<String>,
    hosts: Allowed,
    replicas: Option<(RedisStores, Option<http::Uri>)>,
    otlp: Option<Otlp>,
    issuer: Option<super::serve_auth::Issuer>,
    governance: super::serve_governance::Governance,
}

fn checked(args: &Args, file: &ConfigFile) -> Result<Checked, String> {
    let issuer = super::serve_auth::Issuer::from_args(args)?;
    let (tokens, hosts) = access(args, issuer.is_some())?;
    let replicas = super::stores::replica_owners(args)?;
    let shared = replicas.as_ref().map(|(stores, _)| stores);
    let governance = super::serve_governance::Governance::from_args(args, &file.config, shared)?;
    let otlp = (args.otlp.as_deref())
        .map(|url| Otlp::start(url, &file.client))
        .transpose()?;
    Ok(Checked {
        tokens,
        hosts,
        replicas,
        otlp,
        issuer,
        governance,
    })
}

/// `code`, once `--otlp`'s last spans and metrics are exported.
fn flushed(otlp: Option<Otlp>, code: ExitCode) -> ExitCode {
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    code
}

/// The gateway, with `--state-store` sharing its sessions with the other
/// replicas through the Redis `stores`, this one reached at `me` (by
/// default the address it listens on). A Redis that refuses the login or
/// the fleet's key ends the run now; one that does not answer yet is a
/// warning.
async fn shared(
    gateway: GatewayBuilder,
    replicas: Option<(RedisStores, Option<http::Uri>)>,
    addr: std::net::SocketAddr,
    file: &ConfigFile,
) -> Result<Gateway, ExitCode> {
    let Some((stores, me)) = replicas else {
        return Ok(gateway.build());
    };
    match stores.check().await {
        Err(error) if error.is_configuration() => {
            eprintln!("mcp-connect: --state-store: {error}");
            return Err(ExitCode::FAILURE);
        }
        Err(_) => eprintln!(
            "mcp-connect: --state-store: Redis does not answer yet; each session stays on the replica it was opened on until it does"
        ),
        Ok(()) => {}
    }
    let me = me.unwrap_or_else(|| {
        let url = format!("http://{addr}/mcp");
        url.parse().expect("a socket address makes a URL")
    });
    Ok(gateway
        .replicas(stores.owners(), &me, file.client.clone())
        .build())
}

/// Who may call, as the options say: the bearer tokens and the Host names
/// answered. Another address than loopback needs tokens: a gateway anyone
/// on the network reaches must know who calls. The Host names are the
/// listen address's and `--allowed-host`'s (loopback's on loopback).
/// `--issuer` counts as knowing who calls.
fn access(args: &Args, issuer: bool) -> Result<(Vec<String>, Allowed), String> {
    let tokens: Vec<String> = match &args.bearer_token_env {
        Some(name) => std::env::var(name)
            .map_err(|_| format!("--bearer-token-env: {name} is not set"))?
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        None => Vec::new(),
    };
    if args.bearer_token_env.is_some() && tokens.is_empty() {
        return Err("--bearer-token-env: the variable holds no token".into());
    }
    let loopback = args.listen.ip().is_loopback();
    if !args.stdio && !loopback && tokens.is_empty() && !issuer {
        return Err(
            "--listen: another address than loopback needs --bearer-token-env or --issuer".into(),
        );
    }
    let hosts = match (loopback, args.allowed_host.is_empty()) {
        (true, true) => Allowed::Loopback,
        (true, false) => {
            let mut names = args.allowed_host.clone();
            names.extend(["localhost", "127.0.0.1", "::1", "[::1]"].map(String::from));
            Allowed::Only(names)
        }
        (false, _) => {
            let mut names = args.allowed_host.clone();
            names.push(match args.listen.ip() {
                std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                ip => ip.to_string(),
            });
            Allowed::Only(names)
        }
    };
    Ok((tokens, hosts))
}

/// The group of the file's servers, each started as `--config` starts
/// it; the lines of the entries not usable.
fn started<'a>(
    args: &'a Args,
    file: &ConfigFile,
    printer: &Printer,
    cancel: &CancellationToken,
    (otlp, remembered): (Option<&Otlp>, Option<&RememberedListings>),
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
        telemetry: otlp.map(Otlp::telemetry),
    };
    let disabled: Vec<_> = file.config.disabled().collect();
    unusable(printer, file.config.errors(), &disabled);
    let group = super::config::group_builder(args, &file.config, remembered).build();
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

/// Hands the memory of ended sessions back to the system: glibc's
/// allocator keeps what a burst of sessions freed for its own reuse (40 MB
/// after 2,000 sessions), and a gateway's memory should follow its
/// sessions. Trimmed when sessions ended since the last look, every
/// second.
async fn give_back_memory(gateway: Gateway) {
    let mut open = 0;
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let (now, _) = gateway.sessions();
        if now < open {
            trim();
        }
        open = now;
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// Serves each connection on a task of its own: the gateway at `/mcp`
/// and at the Protected Resource Metadata's path, 404 elsewhere. Ends only when the listener fails.
async fn accept(listener: TcpListener, gateway: Gateway) {
    tokio::spawn(give_back_memory(gateway.clone()));
    while let Ok((stream, _)) = listener.accept().await {
        // A stream's events are small writes: without TCP_NODELAY, Nagle
        // holds each behind the client's delayed ACK (40 ms a call).
        let _ = stream.set_nodelay(true);
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: http::Request<_>| {
                let mut gateway = gateway.clone();
                async move {
                    let path = request.uri().path();
                    // The gateway answers its metadata's path when it is a
                    // resource server, else 404 as for any other path.
                    let metadata = path.starts_with("/.well-known/oauth-protected-resource");
                    if path != "/mcp" && !metadata {
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
