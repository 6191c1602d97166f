//! What the process holds: tasks, file descriptors, child processes and
//! resident memory, read from tokio's metrics and `/proc` (Linux).

use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub struct Holdings {
    pub tasks: usize,
    pub fds: usize,
    pub children: usize,
    pub rss_kib: i64,
}

impl Holdings {
    pub fn now() -> Holdings {
        Holdings {
            tasks: tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks(),
            fds: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()),
            children: children(),
            rss_kib: rss_kib(),
        }
    }

    /// Waits (up to `patience`) for what was freed to be released: tasks
    /// finishing their last poll, sockets closing, children being reaped.
    pub async fn settled(baseline: Holdings, patience: Duration) -> Holdings {
        let until = tokio::time::Instant::now() + patience;
        loop {
            let now = Holdings::now();
            let settled =
                now.tasks <= baseline.tasks && now.fds <= baseline.fds && now.children == 0;
            if settled || tokio::time::Instant::now() >= until {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Processes whose parent is this one (zombies included: an unreaped child
/// is a leak too).
fn children() -> usize {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) state ppid ...`; comm may hold spaces and parens.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                == Some(me.as_str())
        })
        .count()
}

fn rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}
