//! One server (a URL, a command, a registry server or the built-in demo):
//! the request and the long-lived client made from the arguments, the
//! first session established and timed, the mode's work on it, the
//! session closed within a bound, the summary, the era cache kept.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mcp_connect::client::replay::ReplayPolicy;
use mcp_connect::client::ClientError;
use mcp_connect::demo::DemoServer;
use mcp_connect::era_cache::EraCache;
use mcp_connect::inbound::notification_channel;
use mcp_connect::protocol::NotificationKind;
use mcp_connect::registry::ServerJson;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::{Args, Replay};
use super::modes::{self, Mode};
use super::output::{chain, Printer, TargetLine};
use super::request::{described_server, handler_from, http_client, recovery_from, request_from};
use super::signals::{Received, Signals};
use super::{usage, CLOSE_BOUND};

/// What a one-server run holds until it ends.
struct Opened {
    client: McpClient,
    /// Requests the command sent, counted below the transports.
    sent: Arc<AtomicU64>,
    /// Where the proxy is (never its credentials).
    proxy: Option<String>,
    demo: Option<DemoServer>,
    eras: Option<EraFile>,
    notices: Option<JoinHandle<()>>,
    otlp: Option<super::otlp::Otlp>,
}

/// Runs `mode` on the one server the arguments name; the exit code.
pub(super) async fn run(
    args: &Args,
    mode: Mode<'_>,
    printer: &Arc<Printer>,
    cancel: &CancellationToken,
    signals: &Signals,
    tool_args: &serde_json::Value,
) -> ExitCode {
    let started = Instant::now();
    let opened = match open(args, printer, cancel).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let client = &opened.client;
    let outcome = match client.session().await {
        Ok((session, _)) => Ok(session),
        Err(ClientError::Connect(error)) => Err(error),
        Err(other) => unreachable!("the first session is built, not cooled down: {other:?}"),
    };
    let established_in = started.elapsed();
    let mut ok = outcome.is_ok();
    if let Ok(session) = &outcome {
        ok = tokio::select! {
            biased;
            _ = cancel.cancelled() => false,
            worked = modes::work(mode, args, printer, client, session, tool_args) => worked,
        };
        // Bounded: a server that never answers the DELETE cannot hold the exit.
        match tokio::time::timeout(CLOSE_BOUND, client.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => modes::report_error(printer, "close", &error),
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
        opened.sent.load(Ordering::Relaxed),
        attempts,
        opened.proxy.as_deref(),
        signals.received().map(Received::name),
    );
    if let Some(eras) = &opened.eras {
        ok &= eras.save().await;
    }
    opened.end();
    match signals.received() {
        Some(signal) => ExitCode::from(signal.exit_code()),
        None if ok => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
    }
}

impl Opened {
    /// Stops what the run started besides the session.
    fn end(self) {
        drop(self.client);
        drop(self.demo);
        if let Some(notices) = self.notices {
            notices.abort();
        }
        if let Some(otlp) = self.otlp {
            otlp.shutdown();
        }
    }
}

/// The request the arguments describe and the client made from it, its
/// target line printed; a usage error's exit code otherwise.
async fn open(
    args: &Args,
    printer: &Arc<Printer>,
    cancel: &CancellationToken,
) -> Result<Opened, ExitCode> {
    let described = described_server(args).await.map_err(|m| usage(&m))?;
    let mut demo = None;
    let demo_url = if args.url.is_none() && args.command.is_none() && described.is_none() {
        match DemoServer::start().await {
            Ok(server) => Some(demo.insert(server).url()),
            Err(e) => {
                eprintln!("mcp-connect: cannot start the demo server: {e}");
                return Err(ExitCode::FAILURE);
            }
        }
    } else {
        None
    };
    let mut request = request_from(args, demo_url, described.as_ref())
        .map_err(|m| usage(&m))?
        .with_cancellation(cancel.clone());
    let eras = EraFile::open(args).map_err(|m| usage(&m))?;
    if let Some(eras) = &eras {
        request = request.with_era_cache(eras.cache.clone());
    }
    request = request.with_handler(handler_from(args).map_err(|m| usage(&m))?);
    let notices = notices(args, printer, &mut request);
    let sent = Arc::new(AtomicU64::new(0));
    let wired = wire(args, request, &sent, demo.is_some()).map_err(|m| usage(&m))?;
    let request = wired.request;
    printer.target(&TargetLine {
        shown: &request.target().to_string(),
        registry: described.as_ref().map(ServerJson::name),
        socket: args.unix_socket.as_deref(),
        demo: demo.is_some(),
        proxy: wired.proxy.as_deref(),
    });
    let stack = EstablishBuilder::new(wired.connector)
        .with_recovery(recovery_from(args))
        .with_deadline(args.deadline)
        .with_metrics(printer.clone())
        .build();
    let replicas = replicas(args, &request).map_err(|m| usage(&m))?;
    // The signal ends the first establishment and every reconnect.
    let client = McpClient::builder(stack, request)
        .with_shutdown(cancel.clone())
        .with_replay(match args.replay {
            Replay::Never => ReplayPolicy::Never,
            Replay::Undelivered => ReplayPolicy::Undelivered,
        })
        .with_policies(modes::call_policies(args).with_replicas(replicas))
        .build();
    Ok(Opened {
        client,
        sent,
        proxy: wired.proxy,
        demo,
        eras,
        notices,
        otlp: wired.otlp,
    })
}

/// With `--notifications`, a task printing the server's notifications
/// (progress aside: each call prints its own).
fn notices(
    args: &Args,
    printer: &Arc<Printer>,
    request: &mut ConnectRequest,
) -> Option<JoinHandle<()>> {
    if !args.notifications {
        return None;
    }
    let (listener, mut notifications) = notification_channel(256);
    *request = request.clone().with_notifications(listener);
    let shown = Arc::clone(printer);
    Some(tokio::spawn(async move {
        while let Some(notification) = notifications.recv().await {
            if notification.kind() != NotificationKind::Progress {
                shown.notification(&notification.method);
            }
        }
    }))
}

/// The request on its way: the HTTP client, the socket, the exporter.
struct Wired {
    request: ConnectRequest,
    connector: Connector,
    proxy: Option<String>,
    otlp: Option<super::otlp::Otlp>,
}

/// The HTTP client the options ask for (or the Unix socket's), the
/// exporter beside it, and the connector, which validates the request.
fn wire(
    args: &Args,
    mut request: ConnectRequest,
    sent: &Arc<AtomicU64>,
    direct: bool,
) -> Result<Wired, String> {
    let client = http_client(args, direct)?;
    if let Some(socket) = &args.unix_socket {
        // The server's own client: the exporter's stays on the network.
        let over_socket = mcp_connect::transport::HttpClient::builder()
            .redirects(
                mcp_connect::transport::RedirectPolicy::new().with_max_hops(args.max_redirects),
            )
            .unix_socket(socket)
            .build()
            .counting(Arc::clone(sent));
        request = request
            .with_unix_socket(socket)
            .with_http_client(over_socket);
    }
    let proxy = match request.target() {
        _ if args.unix_socket.is_some() => None,
        mcp_connect::request::Target::Http { url, .. } => {
            client.proxy_for(url).map(|p| p.to_string())
        }
        _ => None,
    };
    // The exporter shares the client, but not its request count.
    let otlp = (args.otlp.as_deref())
        .map(|url| super::otlp::Otlp::start(url, &client))
        .transpose()?;
    if let Some(otlp) = &otlp {
        request = request.with_telemetry(otlp.telemetry());
    }
    let connector = Connector::with_client(client.counting(Arc::clone(sent)));
    connector
        .validate(&request)
        .map_err(|error| chain(&error))?;
    Ok(Wired {
        request,
        connector,
        proxy,
        otlp,
    })
}

/// The target's request for each `--replica` URL; each becomes a client
/// on the same establishment stack, ended by the same signal.
fn replicas(args: &Args, request: &ConnectRequest) -> Result<Vec<ConnectRequest>, String> {
    args.replicas
        .iter()
        .map(|url| {
            request
                .for_replica(url)
                .map_err(|e| format!("--replica: {}", chain(&e)))
        })
        .collect()
}

/// `--era-cache`: a file, or a Redis store.
struct EraFile {
    cache: EraCache,
    /// The file, when not Redis.
    path: Option<std::path::PathBuf>,
}

impl EraFile {
    /// The cache `--era-cache` names; a file that does not exist yet is
    /// an empty cache, one that is not an era cache is left untouched.
    fn open(args: &Args) -> Result<Option<Self>, String> {
        let Some(place) = &args.era_cache else {
            return Ok(None);
        };
        if let Some(url) = super::stores::redis_url(place, "--era-cache")? {
            let stores = super::stores::redis_stores(args, &url, "--era-cache")?;
            let cache = EraCache::new().with_store(stores.eras());
            return Ok(Some(EraFile { cache, path: None }));
        }
        let cache = match std::fs::read_to_string(place) {
            Ok(text) => EraCache::from_json(&text).map_err(|_| {
                "--era-cache: the file is not an era cache; it was left untouched".to_owned()
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => EraCache::new(),
            Err(e) => return Err(format!("--era-cache: cannot read the file: {e}")),
        };
        let path = Some(place.into());
        Ok(Some(EraFile { cache, path }))
    }

    /// Keeps what the run learned; false when the file could not be
    /// written (Redis down costs a warning, not the run: bounded per write).
    async fn save(&self) -> bool {
        match &self.path {
            None => {
                if self.cache.save_to_store().await.is_err() {
                    eprintln!("mcp-connect: --era-cache: Redis did not take the eras");
                }
                true
            }
            Some(path) => match std::fs::write(path, self.cache.to_json()) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("mcp-connect: cannot write the era cache: {e}");
                    false
                }
            },
        }
    }
}
