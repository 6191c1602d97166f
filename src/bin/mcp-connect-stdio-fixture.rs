//! A scriptable legacy stdio MCP server for tests (feature `testkit`).
//!
//! ```text
//! mcp-connect-stdio-fixture [--spawn-log FILE] [--faulty-spawns N]
//!     [--exit-on METHOD]... [--stall-on METHOD]... [--ignore-eof] [--ignore-term]
//! ```
//!
//! It answers `initialize` (echoing the offered version), `ping`,
//! `tools/list` and `tools/call` (the tool `echo` returns its `text`
//! argument), and `-32601` to anything else, `server/discover` included.
//! Each start appends its pid to `--spawn-log`; with `--faulty-spawns N` the
//! faults apply only to the first N starts, so a test can make the first
//! attempt fail and a fresh one succeed. `--exit-on` exits (code 3) on
//! receiving the method; `--stall-on` never answers it; `--ignore-eof` keeps
//! running after stdin closes; `--ignore-term` blocks SIGTERM. A
//! `tools/call` of the tool `ask` first asks the client `roots/list` and
//! answers with the first root's URI.

use mcp_connect::protocol::{methods, RequestKind};
use std::io::{BufRead, Write};

use serde_json::{json, Value};

struct Options {
    spawn_log: Option<String>,
    faulty_spawns: Option<usize>,
    exit_on: Vec<String>,
    stall_on: Vec<String>,
    ignore_eof: bool,
    ignore_term: bool,
}

fn options() -> Options {
    let mut options = Options {
        spawn_log: None,
        faulty_spawns: None,
        exit_on: Vec::new(),
        stall_on: Vec::new(),
        ignore_eof: false,
        ignore_term: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&arg));
        match arg.as_str() {
            "--spawn-log" => options.spawn_log = Some(value()),
            "--faulty-spawns" => options.faulty_spawns = value().parse().ok(),
            "--exit-on" => options.exit_on.push(value()),
            "--stall-on" => options.stall_on.push(value()),
            "--ignore-eof" => options.ignore_eof = true,
            "--ignore-term" => options.ignore_term = true,
            _ => usage(&arg),
        }
    }
    options
}

fn usage(arg: &str) -> ! {
    eprintln!("mcp-connect-stdio-fixture: unexpected argument {arg:?}");
    std::process::exit(2)
}

/// Appends this process to the spawn log and returns its 1-based index.
fn record_spawn(log: &str) -> usize {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("spawn log opens");
    writeln!(file, "{}", std::process::id()).expect("spawn log writes");
    std::fs::read_to_string(log)
        .map(|s| s.lines().count())
        .unwrap_or(1)
}

fn main() {
    let options = options();
    let spawn = options.spawn_log.as_deref().map(record_spawn).unwrap_or(1);
    let faulty = options.faulty_spawns.is_none_or(|n| spawn <= n);
    if options.ignore_term {
        let mut set = nix::sys::signal::SigSet::empty();
        set.add(nix::sys::signal::Signal::SIGTERM);
        set.thread_block().expect("SIGTERM blocks");
    }
    let stdout = std::io::stdout();
    // A `tools/call` of `ask` waits here while the server asks the client
    // for its roots; the answer completes it.
    let mut asking: Option<Value> = None;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if faulty && options.exit_on.iter().any(|m| m == method) {
            std::process::exit(3);
        }
        if faulty && options.stall_on.iter().any(|m| m == method) {
            continue;
        }
        let Some(id) = message.get("id") else {
            continue;
        };
        if method.is_empty() && id == "srv-1" {
            let Some(call) = asking.take() else { continue };
            let root = message["result"]["roots"][0]["uri"]
                .as_str()
                .unwrap_or("none");
            let reply = json!({ "jsonrpc": "2.0", "id": call, "result": { "content": [
                { "type": "text", "text": root }
            ]}});
            let mut out = stdout.lock();
            let _ = writeln!(out, "{reply}");
            let _ = out.flush();
            continue;
        }
        let kind = RequestKind::of(method);
        if kind == RequestKind::CallTool && message["params"]["name"] == "ask" {
            asking = Some(id.clone());
            let ask = json!({ "jsonrpc": "2.0", "id": "srv-1", "method": methods::ROOTS_LIST });
            let mut out = stdout.lock();
            let _ = writeln!(out, "{ask}");
            let _ = out.flush();
            continue;
        }
        let reply = match kind {
            RequestKind::Initialize => json!({ "jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "stdio-fixture", "version": std::process::id().to_string() }
            }}),
            RequestKind::Ping => json!({ "jsonrpc": "2.0", "id": id, "result": {} }),
            RequestKind::ListTools => json!({ "jsonrpc": "2.0", "id": id, "result": { "tools": [
                { "name": "echo", "inputSchema": { "type": "object" } }
            ]}}),
            RequestKind::CallTool => json!({ "jsonrpc": "2.0", "id": id, "result": { "content": [
                { "type": "text", "text": message["params"]["arguments"]["text"].as_str().unwrap_or_default() }
            ]}}),
            _ => {
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "Method not found" } })
            }
        };
        let mut out = stdout.lock();
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
    if options.ignore_eof {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}
