//! A guardian process between this process and a stdio server, so that
//! the server's whole process tree ends with this process, however this
//! process ends.
//!
//! A server is often a tree: `npx` starts `node`, a shell starts the real
//! server, a server starts helpers, and some of them leave the process
//! group (`setsid`). Closing a session ends the group, but a process that
//! is killed outright (SIGKILL, the OOM killer) runs no close: the kernel's
//! parent-death signal kills only the direct child, and the rest is left
//! running under init. Nothing that dies can clean up after itself, so a
//! process that outlives it must: the guardian.
//!
//! The guardian is the application's own program run again (this crate is
//! a library: it has no program of its own to run), which must call
//! [`serve_if_asked`] first thing in `main`; [`enable`] turns it on for
//! every stdio server started afterwards (the `mcp-connect` command does
//! both). It makes itself a child subreaper (descendants whose parent dies
//! are handed to it, not to init), starts the server, and holds the read
//! end of a pipe whose only write end this process holds. It ends the
//! whole tree (every process it is an ancestor of, however many times
//! re-parented, in the group or not) when the server exits, or when the
//! pipe reports end of file: this process closed the server, or ended, in
//! whatever way. It blocks SIGTERM, SIGINT, SIGHUP and SIGQUIT for itself
//! (the server gets them, with the default handling), then exits as the
//! server did. Without [`enable`], the server is the direct child, and
//! only it dies with this process.
//!
//! Linux only (a subreaper and `/proc/self/task/*/children`).

use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::sys::signal::{kill, raise, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;

/// The program run as guardian, once [`enable`]d.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// The first argument that makes a process a guardian.
const FLAG: &str = "--mcp-connect-guardian";

/// Runs the guardian and exits when this process was started as one (its
/// first argument says so); returns at once otherwise. Call it first thing
/// in `main` of a program given to [`enable`].
pub fn serve_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(FLAG)) {
        return;
    }
    std::process::exit(serve(args));
}

/// Starts every stdio server from now on under `program` as guardian (see
/// the module docs); `program` must call [`serve_if_asked`] first thing.
/// Process-wide and set once: `false` when a guardian was already set (or
/// off Linux, where there is none).
pub fn enable(program: impl Into<PathBuf>) -> bool {
    cfg!(target_os = "linux") && PROGRAM.set(program.into()).is_ok()
}

/// [`enable`] with this program itself (`/proc/self/exe`).
pub fn enable_with_current_exe() -> std::io::Result<bool> {
    Ok(enable(std::env::current_exe()?))
}

/// The guardian program, when one is enabled.
pub(super) fn program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path)
}

/// The arguments that run the server at `path` (named `arg0`, with `args`)
/// under the guardian, which watches the pipe end `watch`.
pub(super) fn arguments(
    watch: RawFd,
    path: &Path,
    arg0: &OsStr,
    args: &[OsString],
) -> Vec<OsString> {
    let mut all: Vec<OsString> = vec![
        FLAG.into(),
        watch.to_string().into(),
        path.into(),
        arg0.into(),
    ];
    all.extend(args.iter().cloned());
    all
}

/// The guardian itself: its exit code (or it ends by the server's signal).
fn serve(mut args: impl Iterator<Item = OsString>) -> i32 {
    let watch = args
        .next()
        .and_then(|fd| fd.to_str()?.parse::<RawFd>().ok());
    let (Some(watch), Some(path), Some(arg0)) = (watch, args.next(), args.next()) else {
        return 125;
    };
    let rest: Vec<OsString> = args.collect();
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_child_subreaper(true);
    // Blocked here and in the thread below; the server starts with an
    // empty mask (std resets it), so it gets these with their defaults.
    let group_signals = [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ];
    let _ = group_signals
        .iter()
        .copied()
        .collect::<SigSet>()
        .thread_block();
    let mut command = std::process::Command::new(path);
    {
        use std::os::unix::process::CommandExt as _;
        command.arg0(arg0).args(rest);
    }
    super::die_with_parent_std(&mut command);
    let server = match command.spawn() {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(_) => return 127,
    };
    detach_stdio();
    std::thread::spawn(move || {
        wait_for_end_of_file(watch);
        let _ = kill(server, Signal::SIGKILL);
    });
    let ended = loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == server => break Ok(code),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == server => break Err(signal),
            // An orphan handed to this subreaper, reaped.
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => break Ok(125),
        }
    };
    end_tree();
    match ended {
        Ok(code) => code,
        Err(signal) => {
            let _ = SigSet::from(signal).thread_unblock();
            let _ = raise(signal);
            128 + signal as i32
        }
    }
}

/// The guardian's own standard streams are the server's pipes: it lets go
/// of them, so end of file reaches the client when the server's tree ends.
fn detach_stdio() {
    use std::os::fd::AsRawFd as _;
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..=2 {
            let _ = nix::unistd::dup2(null.as_raw_fd(), fd);
        }
    }
}

/// Returns when the pipe's other end is closed (or cannot be read).
fn wait_for_end_of_file(fd: RawFd) {
    let mut buffer = [0u8; 64];
    loop {
        match nix::unistd::read(fd, &mut buffer) {
            Ok(0) => return,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// Kills every child this guardian has, and each one handed to it as its
/// parent dies, until it has none.
fn end_tree() {
    loop {
        for pid in children() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        match waitpid(None, None) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// This process's children, from every thread's `children` file.
fn children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(
                list.split_whitespace()
                    .filter_map(|pid| pid.parse::<i32>().ok()),
            );
        }
    }
    pids
}
