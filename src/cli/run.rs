//! The command's flow: parse, connect, optionally use, close, summarize.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::Parser;
use mcp_connect::demo::DemoServer;
use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::layers::Classify;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::transport::{HttpClient, StdioCommand};
use mcp_connect::{
    ClientError, ConnectRequest, Connector, EraCache, Error, EstablishBuilder, Limits, McpClient,
    TransportMode, VersionPolicy,
};
use tokio::time::Instant;

use super::args::{Args, Mode, Recovery};
use super::output::Printer;

pub(crate) fn main() -> ExitCode {
    let args = Args::parse();
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

fn usage(message: &str) -> ExitCode {
    eprintln!("mcp-connect: {message}");
    ExitCode::from(2)
}

async fn run(args: Args) -> ExitCode {
    let tool_args = match serde_json::from_str::<serde_json::Value>(&args.tool_args) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => return usage("--args must be a JSON object"),
    };
    let printer = Arc::new(Printer::new(args.json));
    let started = Instant::now();

    let mut demo = None;
    let request = match (&args.url, args.command.split_first()) {
        (Some(_), Some(_)) => return usage("give a URL or a command after --, not both"),
        (None, Some((program, rest))) => {
            ConnectRequest::stdio(StdioCommand::new(program).args(rest))
        }
        (url, None) => {
            let url = match url {
                Some(url) => url.clone(),
                None => match DemoServer::start().await {
                    Ok(server) => demo.insert(server).url(),
                    Err(e) => {
                        eprintln!("mcp-connect: cannot start the demo server: {e}");
                        return ExitCode::FAILURE;
                    }
                },
            };
            match ConnectRequest::http(&url) {
                Ok(request) => request,
                Err(_) => return usage("the URL must be an absolute http:// or https:// URL"),
            }
        }
    };
    printer.target(&request.target().to_string(), demo.is_some());
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
                .with_handshake_timeout(args.handshake_timeout),
        );
    if let Some(pin) = &args.pin {
        request = request.with_versions(VersionPolicy::Pin(ProtocolVersion::new(pin.as_str())));
    }
    if let Some(ceiling) = &args.ceiling {
        request = request.with_versions(VersionPolicy::Ceiling(ProtocolVersion::new(
            ceiling.as_str(),
        )));
    }
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            return usage("--header takes 'Name: value'");
        };
        request = match request.with_header(name.trim(), value.trim()) {
            Ok(request) => request,
            Err(_) => return usage("--header has an invalid name or value"),
        };
    }

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

    // Counted below the transports, so every request the command sends is seen.
    let sent = Arc::new(AtomicU64::new(0));
    let client = HttpClient::default_client().counting(Arc::clone(&sent));
    let recovery = match args.recovery {
        Recovery::Off => RecoveryPolicy::disabled(),
        Recovery::Default => RecoveryPolicy::new().with_max_attempts(args.max_attempts),
    };
    let stack = EstablishBuilder::new(Connector::with_client(client))
        .with_recovery(recovery)
        .with_deadline(args.deadline)
        .with_metrics(printer.clone())
        .build();

    let client = McpClient::lazy(stack, request);
    let outcome = match client.session().await {
        Ok((session, _)) => Ok(session),
        Err(ClientError::Connect(error)) => Err(error),
        Err(other) => unreachable!("the first session is built, not cooled down: {other:?}"),
    };
    let established_in = started.elapsed();
    let mut ok = outcome.is_ok();
    if let Ok(session) = &outcome {
        if args.list_tools {
            match session.list_tools().await {
                Ok(list) => printer.tools(
                    &list
                        .tools
                        .iter()
                        .map(|t| t.name.clone())
                        .collect::<Vec<_>>(),
                ),
                Err(error) => {
                    ok = false;
                    report_error(&printer, "list_tools", &error);
                }
            }
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
        if let Err(error) = client.close().await {
            report_error(&printer, "close", &error);
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
    );
    if let (Some(cache), Some(path)) = (&era_cache, &args.era_cache) {
        if let Err(e) = std::fs::write(path, cache.to_json()) {
            eprintln!("mcp-connect: cannot write the era cache: {e}");
            ok = false;
        }
    }
    drop(demo);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Calls the tool `repeat` times through the long-lived client, one line per
/// call; true when every call succeeded.
async fn watch(
    printer: &Printer,
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
        let result = client.call_tool(name, arguments).await;
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
        &format!("{operation} failed: {error}"),
        serde_json::json!({
            "event": "error",
            "operation": operation,
            "kind": failure.kind.as_str(),
            "http_status": failure.http_status,
            "jsonrpc_code": failure.jsonrpc_code,
        }),
    );
}
