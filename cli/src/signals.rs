//! SIGINT and SIGTERM: the first cancels as the caller, the second exits.
//!
//! The command owns resources a killed process would leak: an HTTP session
//! the server keeps until it times out, a stdio child that ignores stdin and
//! would be left running with parent 1. So the first signal does what a
//! library caller does with its `CancellationToken`: it cancels, and the
//! establishment (or the calls after it) unwind through the same disposal
//! path as any other cancellation: the child's process group gets the
//! SIGTERM/SIGKILL ladder, the session gets its DELETE, and the summary is
//! printed. A second signal means "now": every stdio server's process group
//! the command started and has not closed gets SIGKILL, and the process
//! exits at once (without that, a server that ignores SIGTERM would be left
//! running with parent 1; coreutils `timeout` sends two SIGTERMs).

use std::sync::{Arc, OnceLock};

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// A signal the command reacts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Received {
    Interrupt,
    Terminate,
}

impl Received {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Received::Interrupt => "SIGINT",
            Received::Terminate => "SIGTERM",
        }
    }

    /// 128 + the signal number, as shells report a death by signal.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Received::Interrupt => 130,
            Received::Terminate => 143,
        }
    }
}

/// The first signal received, once there is one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signals(Arc<OnceLock<Received>>);

impl Signals {
    /// Starts watching: the first signal cancels `token`, a second exits.
    pub(crate) fn watch(token: CancellationToken) -> std::io::Result<Self> {
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let signals = Signals::default();
        let first = Arc::clone(&signals.0);
        tokio::spawn(async move {
            let _ = first.set(next(&mut interrupt, &mut terminate).await);
            token.cancel();
            let second = next(&mut interrupt, &mut terminate).await;
            mcp_connect::transport::kill_server_groups();
            std::process::exit(i32::from(second.exit_code()));
        });
        Ok(signals)
    }

    /// The first signal, if one arrived.
    pub(crate) fn received(&self) -> Option<Received> {
        self.0.get().copied()
    }
}

async fn next(
    interrupt: &mut tokio::signal::unix::Signal,
    terminate: &mut tokio::signal::unix::Signal,
) -> Received {
    tokio::select! {
        _ = interrupt.recv() => Received::Interrupt,
        _ = terminate.recv() => Received::Terminate,
    }
}
