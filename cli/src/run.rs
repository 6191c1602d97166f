//! The command's flow: parse, pick the mode, run it (`modes`, `single`,
//! `config`, `check`), exit as it says.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::config::ConfigFile;
use super::modes::Mode;
use super::output::Printer;
use super::signals::Signals;
use super::usage;

pub(crate) fn main() -> ExitCode {
    // `mcp-connect serve ...`: the one word before the options.
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let serve = argv.get(1).is_some_and(|word| word == "serve");
    if serve {
        argv.remove(1);
    }
    let mut args = Args::parse_from(argv);
    args.serve = serve;
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
    let printer = Arc::new(match args.serve && args.stdio {
        true => Printer::on_stderr(args.json),
        false => Printer::new(args.json),
    });
    if args.serve && args.config.is_none() {
        return usage("serve needs --config FILE: the servers to serve");
    }
    if args.watch_config && args.call_tool.is_none() && !args.serve {
        return usage("--watch-config is for serve, or for --config with --call-tool");
    }
    match Mode::of(&args) {
        Mode::Serve { path } => match ConfigFile::read(&args, path, &cancel, &signals).await {
            Ok(file) => super::serve::run(&args, file, &printer, &cancel, &signals).await,
            Err(code) => code,
        },
        Mode::Check { path } => match ConfigFile::read(&args, path, &cancel, &signals).await {
            Ok(file) => super::check::run(&file.config, &printer),
            Err(code) => code,
        },
        Mode::Group { path } => match ConfigFile::read(&args, path, &cancel, &signals).await {
            Ok(file) => {
                super::config::run(&args, file, &printer, &cancel, &signals, &tool_args).await
            }
            Err(code) => code,
        },
        one_server => {
            let (printer, cancel) = (&printer, &cancel);
            super::single::run(&args, one_server, printer, cancel, &signals, &tool_args).await
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
