//! A server as a child process speaking JSON lines on stdin/stdout.
//!
//! The child runs in its own process group so that closing reaches its
//! helpers too. Closing follows the MCP lifecycle: close stdin, wait; SIGTERM
//! the group, wait; end the tree; always reap. stderr is the server's
//! log: it is drained (so the child never blocks on a full pipe) into a small
//! ring the application can read, and never printed by this crate.
//!
//! The program is found before anything starts ([`MissingProgram`] names
//! it and the `PATH` searched). When this process is killed outright (no
//! close ladder runs), what survives depends on the [`guardian`]: with one
//! enabled (the command does), the server's whole tree ends, helpers that
//! left the group included; without one, on Linux the server itself is
//! started with `PR_SET_PDEATHSIG` (SIGKILL) and dies, but its own children
//! may not. The kernel sends that signal when the *thread* that started the
//! child ends, so every server is started from one thread that lives as
//! long as the process (`spawner.rs`): a server outlives the thread that
//! asked for it, never the process.

mod command;
pub mod guardian;
mod spawner;
mod stderr;

use std::fmt;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use mcp_connect_layers::Closure;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::error::TransportError;
use super::lines::LineTransport;
use super::{Reply, Transport, TransportKind, TransportStats};
use crate::inbound::Inbound;
use crate::protocol::{Notification, ProtocolVersion, Request};
pub use command::StdioCommand;
use stderr::StderrTail;

/// The process groups of the stdio servers this process started and has
/// not yet closed, for [`kill_server_groups`], each with whether a guardian
/// leads it. Held for one set operation.
static LIVE_GROUPS: Mutex<Vec<(i32, bool)>> = Mutex::new(Vec::new());

fn live_groups() -> std::sync::MutexGuard<'static, Vec<(i32, bool)>> {
    // A set operation cannot panic, so the lock is never poisoned.
    LIVE_GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Ends the process group of every stdio server this process started and
/// has not yet closed, and returns how many there were.
///
/// For a process that must exit at once (the command's second signal):
/// exiting without it leaves a server that ignores stdin and SIGTERM
/// running with parent 1. A group led by a [`guardian`] gets SIGTERM, not
/// SIGKILL (which would kill the guardian before it ends the tree): the
/// guardian ends the rest when this process's exit closes its pipe.
/// Sessions that are closed normally never need it; their close ladder
/// already ends the group.
pub fn kill_server_groups() -> usize {
    let groups = std::mem::take(&mut *live_groups());
    for (group, guarded) in &groups {
        let signal = if *guarded {
            Signal::SIGTERM
        } else {
            Signal::SIGKILL
        };
        // ESRCH (already gone) is fine.
        let _ = killpg(Pid::from_raw(*group), signal);
    }
    groups.len()
}

/// A hook for between fork and exec that asks the kernel to SIGKILL the
/// child when the thread that started it ends (Linux: the [`spawner`]
/// thread, which ends with the process), and fails the start when that
/// already happened.
#[cfg(target_os = "linux")]
fn pdeathsig_hook() -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    let parent = nix::unistd::getpid();
    move || {
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
        // The parent may have died before the line above: then nothing
        // would ever send the signal.
        if nix::unistd::getppid() != parent {
            return Err(std::io::Error::from(nix::errno::Errno::ESRCH));
        }
        Ok(())
    }
}

/// Asks the kernel to SIGKILL the child when this process ends (Linux).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(spawn: &mut Command) {
    // SAFETY: the hook runs between fork and exec and makes only
    // async-signal-safe system calls (prctl, getppid); it allocates nothing.
    unsafe {
        spawn.pre_exec(pdeathsig_hook());
    }
}

/// The same for the guardian's own `std` spawn of the server.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent_std(spawn: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: as in `die_with_parent`.
    unsafe {
        spawn.pre_exec(pdeathsig_hook());
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_: &mut Command) {}

#[cfg(not(target_os = "linux"))]
fn die_with_parent_std(_: &mut std::process::Command) {}

/// Keeps `fd` (close-on-exec in this process) open in the child.
#[allow(unsafe_code)]
fn inherit(spawn: &mut Command, fd: std::os::fd::RawFd) {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    // SAFETY: the hook runs between fork and exec and makes one
    // async-signal-safe system call (fcntl); it allocates nothing.
    unsafe {
        spawn.pre_exec(move || {
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty()))?;
            Ok(())
        });
    }
}

/// Starts `spawn` with the command's environment and directory, its
/// stdio piped, in a process group of its own. Without a guardian the
/// child is killed when its handle is dropped; with one, the guardian is
/// never killed that way (it must live to end the tree; the transport's
/// drop closes its pipe instead).
/// The spawn happens on the [`spawner`] thread, which lives as long as
/// the process.
fn start(mut spawn: Command, command: &StdioCommand) -> std::io::Result<Child> {
    if let Some(dir) = &command.current_dir {
        spawn.current_dir(dir);
    }
    spawn
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    spawner::spawn(spawn)
}

/// A running stdio server.
pub struct StdioTransport {
    lines: LineTransport,
    child: tokio::sync::Mutex<Option<Child>>,
    pid: Option<u32>,
    /// The write end of the guardian's pipe: closed, the guardian ends the
    /// server's tree. `None` without a guardian.
    guardian: Mutex<Option<OwnedFd>>,
    stderr: StderrTail,
    stderr_task: JoinHandle<()>,
    grace: Duration,
}

impl StdioTransport {
    /// Spawns the command, with what the server says on its own going to
    /// `inbound`. `grace` is how long each step of the close ladder waits
    /// for the child to exit before the next, harsher step. Only the
    /// establishment spawns one (a session needs its handshake).
    pub(crate) fn spawn_with(
        command: &StdioCommand,
        max_line: usize,
        grace: Duration,
        inbound: Arc<Inbound>,
    ) -> Result<Self, TransportError> {
        let program = command.locate().map_err(TransportError::MissingProgram)?;
        if let Some(dir) = &command.current_dir {
            // Checked first: a missing directory makes `spawn` fail with
            // the same NotFound as a missing program.
            match std::fs::metadata(dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(TransportError::WorkingDirectory(std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        "not a directory",
                    )))
                }
                Err(e) => return Err(TransportError::WorkingDirectory(e)),
            }
        }
        let guarded = guardian::program().and_then(|guardian| {
            // A guardian that cannot be started (its program replaced,
            // say) leaves the server started as it would be without one.
            let (watch, hold) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
            let arguments =
                guardian::arguments(watch.as_raw_fd(), &program, &command.program, &command.args);
            let mut spawn = Command::new(guardian);
            spawn.arg0("mcp-connect-guardian").args(arguments);
            inherit(&mut spawn, watch.as_raw_fd());
            let child = start(spawn, command).ok()?;
            Some((child, hold))
        });
        let (mut child, hold) = match guarded {
            Some((child, hold)) => (child, Some(hold)),
            None => {
                let mut spawn = Command::new(&program);
                // The program's own name as written, not the path it was found at.
                spawn.arg0(&command.program).args(&command.args);
                spawn.kill_on_drop(true);
                die_with_parent(&mut spawn);
                (start(spawn, command).map_err(TransportError::Spawn)?, None)
            }
        };
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = StderrTail::default();
        let stderr_task = tokio::spawn(stderr.clone().drain(stderr_pipe));
        if let Some(group) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            live_groups().push((group, hold.is_some()));
        }
        Ok(StdioTransport {
            lines: LineTransport::new(stdout, stdin, max_line, Closure::ProcessExit, inbound),
            pid: child.id(),
            guardian: Mutex::new(hold),
            child: tokio::sync::Mutex::new(Some(child)),
            stderr,
            stderr_task,
            grace,
        })
    }

    /// The child's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The last lines the server wrote to stderr (at most 32, each cut to
    /// 1 KiB). The server's own words: this crate never prints them.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lines()
    }

    async fn shut_down(&self) -> Result<(), TransportError> {
        let Some(mut child) = self.child.lock().await.take() else {
            return Ok(());
        };
        self.lines.shutdown_writer().await;
        let mut result = Ok(());
        if tokio::time::timeout(self.grace, child.wait())
            .await
            .is_err()
        {
            self.signal_group(Signal::SIGTERM);
            if tokio::time::timeout(self.grace, child.wait())
                .await
                .is_err()
            {
                // The guardian ends the tree when its pipe closes, then
                // exits; without one (or should it not), SIGKILL.
                let guarded = self.release_guardian();
                let ended = guarded && tokio::time::timeout(self.grace, child.wait()).await.is_ok();
                if !ended {
                    self.signal_group(Signal::SIGKILL);
                    result = child.wait().await.map(drop).map_err(TransportError::Io);
                }
            }
        }
        // The leader is reaped; make sure no helper it left keeps the pipes.
        self.release_guardian();
        self.signal_group(Signal::SIGKILL);
        self.forget_group();
        self.lines.finish_local();
        self.stderr_task.abort();
        result
    }

    /// Closes the guardian's pipe (it then ends the server's tree);
    /// whether there was one.
    fn release_guardian(&self) -> bool {
        let pipe = self
            .guardian
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        pipe.is_some()
    }

    /// This child's group is no longer one [`kill_server_groups`] ends.
    fn forget_group(&self) {
        if let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) {
            live_groups().retain(|(group, _)| *group != pid);
        }
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) {
            // ESRCH (already gone) is the expected outcome most of the time.
            let _ = killpg(Pid::from_raw(pid), signal);
        }
    }
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // Dropped without close(). Guarded: the pipe closes, and the
        // guardian ends the tree and exits (tokio reaps it). Unguarded: the
        // child is killed (kill_on_drop) and tokio reaps it; helpers in its
        // group get the same signal here.
        if self.child.get_mut().is_some() {
            if !self.release_guardian() {
                self.signal_group(Signal::SIGKILL);
            }
            self.forget_group();
        }
        self.stderr_task.abort();
    }
}

impl crate::transport::sealed::Sealed for StdioTransport {}

impl Transport for StdioTransport {
    fn request<'a>(
        &'a self,
        request: &'a Request,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<Reply, TransportError>> {
        self.lines.request(request).boxed()
    }

    fn notify<'a>(
        &'a self,
        notification: &'a Notification,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.lines.notify(notification).boxed()
    }

    fn respond<'a>(
        &'a self,
        response: Vec<u8>,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.lines.respond(response).boxed()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        self.shut_down().boxed()
    }

    fn closed(&self) -> Option<Closure> {
        self.lines.closed()
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Stdio
    }

    fn stats(&self) -> TransportStats {
        TransportStats {
            skipped: self.lines.skipped(),
            ..TransportStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_is_kept_for_the_application_and_not_printed() {
        let command = StdioCommand::new("sh").args(["-c", "echo started-on-stderr >&2; sleep 5"]);
        let transport =
            StdioTransport::spawn_with(&command, 1024, Duration::from_millis(100), Inbound::none())
                .unwrap();
        tokio::time::timeout(Duration::from_secs(15), async {
            while transport.stderr_tail().is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(transport.stderr_tail(), ["started-on-stderr"]);
        transport.close().await.unwrap();
    }

    #[tokio::test]
    async fn the_child_runs_in_its_working_directory() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let command = StdioCommand::new("sh")
            .args(["-c", "pwd >&2; sleep 5"])
            .current_dir(&dir);
        let transport =
            StdioTransport::spawn_with(&command, 1024, Duration::from_millis(100), Inbound::none())
                .unwrap();
        tokio::time::timeout(Duration::from_secs(15), async {
            while transport.stderr_tail().is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(transport.stderr_tail(), [dir.to_string_lossy()]);
        transport.close().await.unwrap();
    }

    #[tokio::test]
    async fn stderr_that_is_not_utf8_is_drained_to_the_end() {
        // Without draining to the end the child blocks once the pipe is
        // full, and its last line never arrives.
        let script = r#"{ printf 'bad \377\n'; head -c 300000 /dev/zero | tr '\0' a; echo; echo last; } >&2; sleep 5"#;
        let command = StdioCommand::new("sh").args(["-c", script]);
        let transport =
            StdioTransport::spawn_with(&command, 1024, Duration::from_millis(100), Inbound::none())
                .unwrap();
        tokio::time::timeout(Duration::from_secs(15), async {
            while transport.stderr_tail().last().map(String::as_str) != Some("last") {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the last line arrives");
        let tail = transport.stderr_tail();
        assert_eq!(tail[0], "bad \u{fffd}");
        assert_eq!(tail[1], "a".repeat(1024));
        transport.close().await.unwrap();
    }

    #[tokio::test]
    async fn a_missing_program_is_named_and_nothing_starts() {
        let command = StdioCommand::new("no-such-mcp-server").env("PATH", "/nonexistent");
        let error =
            StdioTransport::spawn_with(&command, 1024, Duration::from_millis(100), Inbound::none())
                .unwrap_err();
        let TransportError::MissingProgram(missing) = &error else {
            panic!("{error:?}");
        };
        assert_eq!(missing.program(), "no-such-mcp-server");
        assert_eq!(missing.path(), Some("/nonexistent".as_ref()));
    }
}
