//! Where stdio servers are started: one thread that lives as long as the
//! process.
//!
//! On Linux a server without a guardian is armed with `PR_SET_PDEATHSIG`,
//! so that it dies when this process is killed outright. The kernel sends
//! that signal when the *thread* that forked the child ends, not the
//! process: a server started from a thread that later exits (a
//! blocking-pool thread, a short-lived runtime's worker, a thread of the
//! application's own) would be killed while its session is still in use.
//! Forking from a thread that never ends makes the server's lifetime the
//! process's. The thread is started on the first spawn and waits on a
//! channel; the spawn itself is a fork and an exec, so the caller waits
//! for it as it waited for the fork before.

use std::sync::mpsc;
use std::sync::OnceLock;

use tokio::process::{Child, Command};

type Job = Box<dyn FnOnce() + Send>;

/// The spawning thread's queue; `None` when the thread could not start.
static QUEUE: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

fn queue() -> Option<&'static mpsc::Sender<Job>> {
    QUEUE
        .get_or_init(|| {
            let (sender, jobs) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("mcp-connect-spawner".into())
                .spawn(move || {
                    // Never ends while the process runs: the senders are
                    // in a static.
                    for job in jobs {
                        job();
                    }
                })
                .ok()
                .map(|_| sender)
        })
        .as_ref()
}

/// Spawns `command` from the spawning thread, registered with the caller's
/// runtime (which reaps it and drives its pipes). Without that thread
/// (it could not be started) the caller's thread spawns it, as before.
pub(super) fn spawn(mut command: Command) -> std::io::Result<Child> {
    let Some(queue) = queue() else {
        return command.spawn();
    };
    let runtime = tokio::runtime::Handle::current();
    let (reply, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _entered = runtime.enter();
        let _ = reply.send(command.spawn());
    });
    if let Err(mpsc::SendError(job)) = queue.send(job) {
        // The thread is gone (it cannot be, short of a panic in a spawn):
        // run the job here rather than lose the spawn.
        job();
    }
    answer.recv().unwrap_or_else(|_| {
        Err(std::io::Error::other(
            "the spawning thread ended before the server started",
        ))
    })
}
