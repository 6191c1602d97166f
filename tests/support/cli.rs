//! Running the built `mcp-connect` command under a watchdog.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// No command test may take longer than this.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// The command with these arguments, stdout and stderr piped.
pub fn command(args: &[&str]) -> Command {
    // Set in the command crate's test targets only.
    let path = option_env!("CARGO_BIN_EXE_mcp-connect")
        .unwrap_or_else(|| panic!("the command's tests run from its crate (cli/)"));
    let mut command = Command::new(path);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// `mcp-connect serve --config CONFIG --listen 127.0.0.1:0 --json` with
/// `extra`: the running child and the URL its first line says it serves
/// (the line read within [`COMMAND_LIMIT`]).
pub async fn serve(config: &str, extra: &[&str]) -> (Child, String) {
    serve_with_env(config, extra, &[]).await
}

/// [`serve`] with `env` set for the command.
pub async fn serve_with_env(config: &str, extra: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut args = vec![
        "serve",
        "--config",
        config,
        "--listen",
        "127.0.0.1:0",
        "--json",
    ];
    args.extend_from_slice(extra);
    let mut child = command(&args).envs(env.iter().copied()).spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        line
    });
    let line = tokio::time::timeout(COMMAND_LIMIT, line)
        .await
        .expect("the serving line")
        .unwrap();
    let serving: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(serving["event"], "serving", "{line}");
    (child, serving["url"].as_str().unwrap().to_owned())
}

/// Runs the command to completion; kills it and fails the test if it is
/// still running after [`COMMAND_LIMIT`].
pub fn run(args: &[&str]) -> Output {
    run_command(command(args))
}

/// [`run`] for a prepared command (extra environment and the like).
pub fn run_command(mut command: Command) -> Output {
    let child = command.spawn().expect("the command starts");
    finish(child, COMMAND_LIMIT)
}

/// Waits for a started command within `limit`, collecting its output.
pub fn finish(mut child: Child, limit: Duration) -> Output {
    // Drain the pipes on threads so a chatty command cannot block on them.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child, limit);
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Waits for the child within `limit`; kills it and panics past that.
pub fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait on the command") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("watchdog: the command ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Runs the command from async tests (the test's own servers keep running
/// on the runtime meanwhile).
pub async fn run_async(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args)
    })
    .await
    .unwrap()
}

/// stdout as JSON lines (with `--json`).
pub fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}
