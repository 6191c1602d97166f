//! A server as a child process speaking JSON lines on stdin/stdout.
//!
//! The child runs in its own process group so that closing reaches its
//! helpers too. Closing follows the MCP lifecycle: close stdin, wait; SIGTERM
//! the group, wait; SIGKILL the group; always reap. stderr is the server's
//! log: it is drained (so the child never blocks on a full pipe) into a small
//! ring the application can read, and never printed by this crate.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use mcp_connect_layers::Closure;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::error::TransportError;
use super::lines::LineTransport;
use super::{Reply, Transport, TransportKind};
use crate::inbound::Inbound;
use crate::protocol::{Notification, ProtocolVersion, Request};

/// The process groups of the stdio servers this process started and has
/// not yet closed, for [`kill_server_groups`]. Held for one set operation.
static LIVE_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn live_groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    // A set operation cannot panic, so the lock is never poisoned.
    LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sends SIGKILL to the process group of every stdio server this process
/// started and has not yet closed, and returns how many there were.
///
/// For a process that must exit at once (the command's second signal):
/// exiting without it leaves a server that ignores stdin and SIGTERM
/// running with parent 1. Sessions that are closed normally never need
/// it; their close ladder already ends the group.
pub fn kill_server_groups() -> usize {
    let groups = std::mem::take(&mut *live_groups());
    for group in &groups {
        // ESRCH (already gone) is fine.
        let _ = killpg(Pid::from_raw(*group), Signal::SIGKILL);
    }
    groups.len()
}

const STDERR_LINES: usize = 32;
const STDERR_LINE_BYTES: usize = 1024;

/// The command line of a stdio server.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    current_dir: Option<std::path::PathBuf>,
}

impl StdioCommand {
    /// A program to run, found on `PATH` like a shell would.
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I, A>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child. Values are never printed.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs the child in `dir` (by default this process's directory).
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// The program.
    pub fn program(&self) -> &OsString {
        &self.program
    }

    /// A stable 128-bit fingerprint (hex, SHA-256) of everything that
    /// selects the server this command starts: the program, the arguments,
    /// the environment set for it and its working directory. Two commands
    /// that differ only in a token in `env` (`github-work` and
    /// `github-personal`) or in `cwd` (two `node index.js` projects) are two
    /// servers. For keys that must not reveal any of it.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::os::unix::ffi::OsStrExt;
        let mut hash = Sha256::new();
        hash.update(b"mcp-connect stdio server v2\0");
        let mut part = |tag: &[u8], bytes: &[u8]| {
            // Length-prefixed, so no two different commands hash alike.
            hash.update(tag);
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        part(b"p", self.program.as_bytes());
        for arg in &self.args {
            part(b"a", arg.as_bytes());
        }
        for (key, value) in &self.env {
            part(b"k", key.as_bytes());
            part(b"v", value.as_bytes());
        }
        if let Some(dir) = &self.current_dir {
            part(b"d", dir.as_os_str().as_bytes());
        }
        crate::redact::hex(&hash.finalize()[..16])
    }
}

impl fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Arguments can carry tokens; show only the program and counts.
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args.len())
            .field("env", &self.env.len())
            .finish()
    }
}

/// A running stdio server.
pub struct StdioTransport {
    lines: LineTransport,
    child: tokio::sync::Mutex<Option<Child>>,
    pid: Option<u32>,
    stderr: Arc<Mutex<VecDeque<String>>>,
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
        let mut spawn = Command::new(&command.program);
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
            spawn.current_dir(dir);
        }
        let mut child = spawn
            .args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(TransportError::Spawn)?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_LINES)));
        let stderr_task = tokio::spawn(drain_stderr(stderr_pipe, Arc::clone(&stderr)));
        if let Some(group) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            live_groups().push(group);
        }
        Ok(StdioTransport {
            lines: LineTransport::new(stdout, stdin, max_line, Closure::ProcessExit, inbound),
            pid: child.id(),
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
        self.stderr
            .lock()
            .map(|lines| lines.iter().cloned().collect())
            .unwrap_or_default()
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
                self.signal_group(Signal::SIGKILL);
                result = child.wait().await.map(drop).map_err(TransportError::Io);
            }
        }
        // The leader is reaped; make sure no helper it left keeps the pipes.
        self.signal_group(Signal::SIGKILL);
        self.forget_group();
        self.lines.finish_local();
        self.stderr_task.abort();
        result
    }

    /// This child's group is no longer one [`kill_server_groups`] ends.
    fn forget_group(&self) {
        if let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) {
            live_groups().retain(|group| *group != pid);
        }
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) {
            // ESRCH (already gone) is the expected outcome most of the time.
            let _ = killpg(Pid::from_raw(pid), signal);
        }
    }
}

async fn drain_stderr(pipe: tokio::process::ChildStderr, ring: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(mut line)) = lines.next_line().await {
        if line.len() > STDERR_LINE_BYTES {
            let mut cut = STDERR_LINE_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        if let Ok(mut ring) = ring.lock() {
            if ring.len() == STDERR_LINES {
                ring.pop_front();
            }
            ring.push_back(line);
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
        // Dropped without close(): the child is killed (kill_on_drop) and
        // tokio reaps it; helpers in its group get the same signal here.
        if self.child.get_mut().is_some() {
            self.signal_group(Signal::SIGKILL);
            self.forget_group();
        }
        self.stderr_task.abort();
    }
}

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

    fn skipped(&self) -> u64 {
        self.lines.skipped()
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
}
