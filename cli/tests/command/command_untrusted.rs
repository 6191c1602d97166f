//! Issue 63: what a server.json cannot make the command do (item 1, on its
//! effect: the runtime is run only as the launcher means it), and waits
//! that the first signal and the deadline end (items 11 and 12).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::support::cli::{command, finish, run_command};
use crate::support::{Recorded, Script, ScriptServer};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-untrusted-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fake `npx` that writes the arguments it was given, one per line, and
/// a marker file the document would have it `touch`.
fn fake_npx(bin: &Path, log: &Path) {
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\nexit 0\n",
        log.display()
    );
    let npx = bin.join("npx");
    std::fs::write(&npx, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn server_json(dir: &Path, identifier: &str) -> PathBuf {
    let document = serde_json::json!({ "name": "io.github.acme/files", "version": "1.0.0",
        "packages": [ { "registryType": "npm", "identifier": identifier, "version": "1.0.0",
                        "transport": { "type": "stdio" } } ] });
    let path = dir.join(format!("{}.json", identifier.len()));
    std::fs::write(&path, document.to_string()).unwrap();
    path
}

/// Item 1: an identifier that npx would read as its option (`--call=...`
/// ran a shell command) never reaches npx; a valid one reaches it after
/// `--`, where npx reads no option.
#[test]
fn a_hostile_identifier_never_reaches_the_runtime() {
    let dir = scratch("npx");
    let log = dir.join("npx-args");
    fake_npx(&dir, &log);
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let hostile = server_json(&dir, &format!("--call=touch {}", dir.join("ran").display()));
    let mut run = command(&["--server-json", hostile.to_str().unwrap()]);
    run.env("PATH", &path);
    let output = run_command(run);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a valid npm package name"), "{stderr}");
    assert!(!log.exists(), "npx was run");
    assert!(!dir.join("ran").exists());

    let benign = server_json(&dir, "@acme/files");
    let mut run = command(&[
        "--server-json",
        benign.to_str().unwrap(),
        "--probe-timeout",
        "1s",
    ]);
    run.env("PATH", &path);
    let _ = run_command(run);
    let given = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        given.lines().collect::<Vec<_>>(),
        ["-y", "--", "@acme/files@1.0.0"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 11: a config file that is a FIFO nobody writes held the command in
/// a blocking read past the first signal; now SIGTERM ends it at once.
#[test]
fn a_config_that_never_reads_ends_at_the_first_signal() {
    let dir = scratch("fifo");
    let fifo = dir.join("servers.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let child = command(&["--config", fifo.to_str().unwrap()])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let sent = Instant::now();
    let output = finish(child, Duration::from_secs(20));
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "took {:?}",
        sent.elapsed()
    );
    assert_eq!(output.status.code(), Some(143), "{output:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 12: registry fetches run together (eight entries answered after
/// 1 s each take about 1 s, not 8) and within `--deadline` (a registry
/// that never answers holds the command no longer than it).
#[tokio::test(flavor = "multi_thread")]
async fn registry_fetches_run_together_and_within_the_deadline() {
    let slow = ScriptServer::start(|request: &Recorded| {
        let Some(rest) = request
            .path
            .strip_prefix("/v0.1/servers/io.github.acme%2Fs")
        else {
            return Script::Status(404);
        };
        let name = rest.split('/').next().unwrap_or_default();
        let answer = serde_json::json!({ "server": { "name": format!("io.github.acme/s{name}"),
            "version": "1.0.0", "remotes": [] } });
        Script::Delayed(Duration::from_secs(1), Box::new(Script::Json(200, answer)))
    })
    .await;
    let entries: Vec<String> = (0..8)
        .map(|i| format!(r#""s{i}": {{ "registry": "io.github.acme/s{i}", "version": "1.0.0" }}"#))
        .collect();
    let dir = scratch("registry");
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        format!("{{ \"mcpServers\": {{ {} }} }}", entries.join(", ")),
    )
    .unwrap();
    let base = slow.url().trim_end_matches("/mcp").to_owned();
    let check = |registry: String, deadline: &'static str| {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let run = command(&[
                "--config",
                config.to_str().unwrap(),
                "--check",
                "--registry",
                &registry,
                "--deadline",
                deadline,
            ]);
            (run_command(run), started.elapsed())
        })
    };
    let (output, took) = check(base, "20s").await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(slow.recorded().len(), 8, "{stdout}");
    assert!(
        took < Duration::from_secs(4),
        "8 fetches took {took:?}: {stdout}"
    );

    let stalled = ScriptServer::start(|_: &Recorded| Script::Stall).await;
    let base = stalled.url().trim_end_matches("/mcp").to_owned();
    let (output, took) = check(base, "1s").await.unwrap();
    assert!(took < Duration::from_secs(5), "took {took:?}: {output:?}");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 16: text from a server.json reaches no message unescaped: a name
/// with a terminal escape is no registry name (it was printed as it was,
/// in "no package of ... can be started"), and every error chain is
/// escaped before it is printed.
#[test]
fn a_documents_text_never_drives_the_terminal() {
    let dir = scratch("escape");
    let document = serde_json::json!({ "name": "io.github.acme/files\u{1b}[2J\u{1b}[31mOWNED",
        "version": "1.0.0", "packages": [] });
    let path = dir.join("server.json");
    std::fs::write(&path, document.to_string()).unwrap();
    let output = run_command(command(&["--server-json", path.to_str().unwrap()]));
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(stderr.contains("not a server.json"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
