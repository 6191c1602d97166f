//! Instructions per lifecycle and per call, counted by valgrind's callgrind.
//!
//! Wall-clock ratios on a shared two-core machine move by 10-20% from run to
//! run; the instructions a client executes for the same work do not. Each
//! figure comes from two child processes, one client each, run under
//! `valgrind --tool=callgrind` with two run lengths (`n` and `2n`): the
//! difference divided by `n` is the cost of one lifecycle (establish, one
//! `tools/call`, close) or of one `tools/call` on an established session,
//! with start-up, warm-up and exit cancelled out. The servers run in other
//! processes, outside valgrind. The child runs on a current-thread runtime:
//! idle workers of a multi-threaded one would add instructions that depend
//! on timing.
//!
//! `instructions` prints the tables (bench/instructions.md): instructions,
//! then allocations (valgrind's dhat) and syscalls (`strace -f -c`) per
//! lifecycle. `instructions --check` counts ours only (bare and full
//! stack, against the canned server) and fails when instructions are more
//! than [`TOLERANCE`] above the baseline committed for the toolchain in
//! use (bench/instructions-baseline.json), or allocations above it at all
//! (they are exact); `--write-baseline` rewrites that toolchain's entry,
//! for a commit that says why.

use std::collections::BTreeMap;
use std::process::Command;

use crate::clients::Era;

/// How much above the baseline a figure may be before the check fails.
pub const TOLERANCE: f64 = 0.03;

/// The baseline keys of allocation counts start with this.
const ALLOCATIONS: &str = "allocations ";

/// Lifecycles or calls before the counted ones, in both run lengths.
pub(crate) const WARM_UP: usize = 20;

/// What one child process does `n` times after the warm-up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Work {
    /// Establish, one `tools/call`, close.
    Lifecycle,
    /// One `tools/call` on a session established once.
    Call,
}

impl Work {
    fn name(self) -> &'static str {
        match self {
            Work::Lifecycle => "lifecycle",
            Work::Call => "call",
        }
    }
}

/// The child: `count WHICH ERA URL WORK N`, on a current-thread runtime.
pub fn child(args: &[String]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (which, era, url) = (&args[0], crate::era_named(&args[1]), args[2].clone());
    let work = if args[3] == "call" {
        Work::Call
    } else {
        Work::Lifecycle
    };
    let n: usize = args[4].parse().expect("a count");
    runtime.block_on(async move {
        let client = crate::client_named(which);
        match work {
            Work::Lifecycle => {
                for _ in 0..WARM_UP + n {
                    let held = client.establish(&url, era).await;
                    held.call().await;
                    held.close().await;
                }
            }
            Work::Call => {
                let held = client.establish(&url, era).await;
                for _ in 0..WARM_UP + n {
                    held.call().await;
                }
                held.close().await;
            }
        }
    });
    // rmcp's background tasks would be torn down differently run to run.
    std::process::exit(0);
}

/// What is counted of a child's run.
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// Instructions executed (callgrind).
    Instructions,
    /// Heap blocks allocated (valgrind's dhat).
    Allocations,
    /// System calls, every thread (`strace -f -c`).
    Syscalls,
}

/// What `counter` counts of the child doing `n` units of `work`.
fn collected(counter: Counter, which: &str, era: Era, url: &str, work: Work, n: usize) -> u64 {
    let child = std::env::current_exe().expect("this program");
    let child_args = ["count", which, era.name(), url, work.name(), &n.to_string()];
    let summary = summary_path();
    let output = counting(counter, &summary)
        .arg(child)
        .args(child_args)
        .output()
        .unwrap_or_else(|e| panic!("valgrind or strace (apt-get install valgrind strace): {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "counting failed: {stderr}");
    count_of(counter, &stderr, &summary)
}

/// Where `strace -c` writes its summary for this process.
pub(crate) fn summary_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("strace-{}", std::process::id()))
}

/// The counting tool for `counter`, ready for the program and its
/// arguments (`strace` writes its summary to `summary`).
pub(crate) fn counting(counter: Counter, summary: &std::path::Path) -> Command {
    match counter {
        Counter::Instructions | Counter::Allocations => {
            let mut command = Command::new("valgrind");
            command.args(match counter {
                Counter::Instructions => ["--tool=callgrind", "--callgrind-out-file=/dev/null"],
                _ => ["--tool=dhat", "--dhat-out-file=/dev/null"],
            });
            command
        }
        Counter::Syscalls => {
            let mut command = Command::new("strace");
            command.args(["-f", "-c", "-o"]).arg(summary);
            command
        }
    }
}

/// The figure `counter` reported: in valgrind's `stderr`, or in strace's
/// `summary` file.
pub(crate) fn count_of(counter: Counter, stderr: &str, summary: &std::path::Path) -> u64 {
    let (text, marker) = match counter {
        Counter::Instructions => (stderr.to_owned(), "Collected :"),
        Counter::Allocations => (stderr.to_owned(), "Total:"),
        Counter::Syscalls => {
            let text = std::fs::read_to_string(summary).expect("strace's summary");
            let _ = std::fs::remove_file(summary);
            (text, " total")
        }
    };
    let line = text
        .lines()
        .find(|line| line.contains(marker))
        .unwrap_or_else(|| panic!("no '{marker}' line: {text}"))
        .to_owned();
    let number = |field: &str| field.replace(',', "").parse::<u64>().ok();
    let fields: Vec<&str> = line.split_whitespace().collect();
    let found = match counter {
        // "==PID== Collected : 123"
        Counter::Instructions => fields.last().and_then(|f| number(f)),
        // "==PID== Total: 1,234 bytes in 56 blocks"
        Counter::Allocations => fields.iter().rev().nth(1).and_then(|f| number(f)),
        // "100.00 0.001 1 1234 12 total": the calls column
        Counter::Syscalls => fields.get(3).and_then(|f| number(f)),
    };
    found.unwrap_or_else(|| panic!("unreadable: {line}"))
}

/// `counter` per unit of `work`: the difference of `2n` and `n`, over `n`.
fn per_unit(counter: Counter, which: &str, era: Era, url: &str, work: Work, n: usize) -> f64 {
    let short = collected(counter, which, era, url, work, n);
    let long = collected(counter, which, era, url, work, 2 * n);
    long.saturating_sub(short) as f64 / n as f64
}

/// One row: a server and era, each contender's figure for `work`.
struct Row {
    server: &'static str,
    era: Era,
    work: Work,
    figures: Vec<f64>,
}

impl Row {
    /// The baseline's key of `which`'s figure in this row.
    fn key(&self, which: &str) -> String {
        let (era, work) = (self.era.name(), self.work.name());
        format!("{which} {} {era} {work}", self.server)
    }
}

/// The contenders, by the names the child knows them by.
const CONTENDERS: [(&str, &str); 4] = [
    ("ours", "ours (bare connector)"),
    ("stack", "ours, full stack"),
    ("rmcp2", "rmcp pooled"),
    ("floor", "raw-hyper floor"),
];

/// `instructions [--quick] [--check] [--write-baseline]`.
pub async fn run(args: &[String]) {
    let quick = args.iter().any(|a| a == "--quick");
    let check = args.iter().any(|a| a == "--check");
    let write = args.iter().any(|a| a == "--write-baseline");
    let n = if quick || check || write { 100 } else { 200 };
    let rmcp = crate::spawn_server(&["serve"]).await;
    let canned = crate::spawn_server(&["serve-canned", &rmcp.url]).await;
    let names: Vec<&str> = if check || write {
        vec!["ours", "stack"]
    } else {
        CONTENDERS.iter().map(|(name, _)| *name).collect()
    };
    // The check counts against the canned server only: its answers cost
    // next to nothing and arrive alike every run, so ours varies by under
    // 0.5% there (up to 1.6% against rmcp's multi-threaded server).
    let servers = if check || write {
        vec![("canned", &canned.url)]
    } else {
        vec![("rmcp", &rmcp.url), ("canned", &canned.url)]
    };
    let mut rows = Vec::new();
    for (server, url) in servers {
        for era in [Era::Legacy, Era::Modern] {
            for work in [Work::Lifecycle, Work::Call] {
                let figures = names
                    .iter()
                    .map(|which| per_unit(Counter::Instructions, which, era, url, work, n))
                    .collect();
                rows.push(Row {
                    server,
                    era,
                    work,
                    figures,
                });
            }
        }
    }
    let mut measured: BTreeMap<String, f64> = rows
        .iter()
        .flat_map(|row| {
            names
                .iter()
                .zip(&row.figures)
                .map(move |(which, figure)| (row.key(which), figure.round()))
        })
        .collect();
    if check || write {
        // Allocations are counted exactly (the same every run): one more
        // per lifecycle or call fails the check, however cheap.
        for row in &rows {
            for which in &names {
                let key = format!("{ALLOCATIONS}{}", row.key(which));
                let url = &canned.url;
                let figure = per_unit(Counter::Allocations, which, row.era, url, row.work, n);
                measured.insert(key, figure);
            }
        }
        // The demo server answers listings (the canned one does not), in
        // this process, outside the count.
        let demo = mcp_connect::demo::DemoServer::start().await.unwrap();
        for era in [Era::Legacy, Era::Modern] {
            let url = &demo.url();
            for (counter, prefix) in [
                (Counter::Instructions, ""),
                (Counter::Allocations, ALLOCATIONS),
            ] {
                let figure = crate::gateway_count::per_call(counter, era, url, n).await;
                let key = format!("{prefix}gateway demo {} call", era.name());
                measured.insert(
                    key,
                    if prefix.is_empty() {
                        figure.round()
                    } else {
                        figure
                    },
                );
            }
        }
        baseline(&measured, write);
        return;
    }
    println!("{}", table(&rows));
    let demo = mcp_connect::demo::DemoServer::start().await.unwrap();
    println!("{}", gateway_rows(&demo.url(), n).await);
    println!("{}", resources(&rmcp.url, n));
}

/// Allocations and syscalls per lifecycle against the rmcp server.
fn resources(url: &str, n: usize) -> String {
    let mut out = String::from(
        "| per lifecycle, rmcp server | ours (bare) | ours, full stack | rmcp pooled | floor | ours / floor |\n|---|---|---|---|---|---|\n",
    );
    for (counter, what) in [
        (Counter::Allocations, "allocations"),
        (Counter::Syscalls, "syscalls"),
    ] {
        for era in [Era::Legacy, Era::Modern] {
            let figures: Vec<f64> = CONTENDERS
                .iter()
                .map(|(which, _)| per_unit(counter, which, era, url, Work::Lifecycle, n))
                .collect();
            out.push_str(&format!(
                "| {what}, {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} |\n",
                year(era),
                figures[0],
                figures[1],
                figures[2],
                figures[3],
                figures[0] / figures[3],
            ));
        }
    }
    out
}

/// Instructions and allocations per call forwarded by the gateway (the
/// demo server behind it, in this process).
async fn gateway_rows(url: &str, n: usize) -> String {
    let mut out = String::from(
        "| forwarded call, demo server | gateway instructions | gateway allocations |\n|---|---|---|\n",
    );
    for era in [Era::Legacy, Era::Modern] {
        let instructions = crate::gateway_count::per_call(Counter::Instructions, era, url, n).await;
        let allocations = crate::gateway_count::per_call(Counter::Allocations, era, url, n).await;
        out.push_str(&format!(
            "| {} | {:.1}k | {allocations:.1} |\n",
            year(era),
            instructions / 1000.0
        ));
    }
    out
}

fn year(era: Era) -> &'static str {
    match era {
        Era::Legacy => "2025",
        Era::Modern => "2026",
    }
}

/// The markdown table, with the ratios the issue sets goals on.
fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| server, era | per | ours (bare) | ours, full stack | rmcp pooled | floor | ours / floor | stack / bare | ours / rmcp |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let [ours, stack, rmcp, floor] = [0, 1, 2, 3].map(|i| row.figures[i]);
        let k = |v: f64| format!("{:.1}k", v / 1000.0);
        out.push_str(&format!(
            "| {}, {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} |\n",
            row.server,
            year(row.era),
            row.work.name(),
            k(ours),
            k(stack),
            k(rmcp),
            k(floor),
            ours / floor,
            stack / ours,
            ours / rmcp,
        ));
    }
    out
}

/// The toolchain the figures belong to: `rustc --version`.
fn toolchain() -> String {
    let output = Command::new("rustc")
        .arg("--version")
        .output()
        .expect("rustc");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/instructions-baseline.json");

/// Compares `measured` with the committed baseline of this toolchain (or
/// rewrites it); exits 1 on a figure more than [`TOLERANCE`] above it.
fn baseline(measured: &BTreeMap<String, f64>, write: bool) {
    let toolchain = toolchain();
    let text = std::fs::read_to_string(BASELINE).unwrap_or_else(|_| "{}".to_owned());
    let mut all: BTreeMap<String, BTreeMap<String, f64>> =
        serde_json::from_str(&text).expect("the baseline file is JSON");
    if write {
        all.insert(toolchain.clone(), measured.clone());
        let text = serde_json::to_string_pretty(&all).expect("serializes");
        std::fs::write(BASELINE, text + "\n").expect("writes the baseline");
        println!("baseline for {toolchain} written");
        return;
    }
    let Some(expected) = all.get(&toolchain) else {
        eprintln!(
            "no instruction baseline for {toolchain} in bench/instructions-baseline.json: \
             run `cargo run --release --manifest-path bench/Cargo.toml -- instructions --write-baseline` \
             and commit it, saying why"
        );
        std::process::exit(1);
    };
    let mut worse = 0;
    for (key, figure) in measured {
        let Some(base) = expected.get(key) else {
            eprintln!("{key}: {figure:.1}, no baseline figure");
            worse += 1;
            continue;
        };
        let ratio = figure / base;
        let more = if key.starts_with(ALLOCATIONS) {
            *figure > base + 0.5
        } else {
            ratio > 1.0 + TOLERANCE
        };
        let verdict = if more {
            worse += 1;
            "MORE"
        } else {
            "ok"
        };
        println!("{key}: {figure:.1} (baseline {base:.1}, {ratio:.3}x) {verdict}");
    }
    if worse > 0 {
        eprintln!(
            "{worse} figure(s) above the baseline: instructions by more than {:.0}%, or allocations at all",
            TOLERANCE * 100.0
        );
        std::process::exit(1);
    }
}
