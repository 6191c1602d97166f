//! mcp-connect under a deterministic simulation.
//!
//! The real client (its pooled HTTP client, transports, handshake,
//! recovery, long-lived clients, a server group and call policies) runs on turmoil's
//! simulated hosts and network; the servers are simulated hosts too. The
//! network, the clock, every fault and every random choice of the client
//! come from one seed, so any run replays byte for byte.
//!
//! ```text
//! cd sim
//! cargo run --release -- run [--seeds 2000] [--from 0] [--threads 2] [--expect-violation]
//! cargo run --release -- replay --seed N      # the whole trace and the verdict
//! cargo run --release -- hash --seed N        # the trace's hash
//! ```
//!
//! `run` also runs every seed in `regressions.txt` first. It exits 1 when a
//! property is broken (with `--expect-violation`, which stops at the first
//! violation: when none is), printing
//! each failing seed, the broken property, the trace lines that explain
//! it, and the command that replays it.

mod check;
mod faults;
mod ledger;
mod net;
mod server;
mod target;
mod workload;
mod world;

use std::process::ExitCode;
use std::time::Instant;

use check::{check, explain, Violation};
use world::Run;

/// Failing seeds printed in full; the rest are counted.
const SHOWN: usize = 3;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{name} takes a number"))
            })
            .unwrap_or(default)
    };
    match args.first().map(String::as_str) {
        Some("run") => run_many(
            value("--from", 0),
            value("--seeds", 2_000),
            value("--threads", 2) as usize,
            args.iter().any(|a| a == "--expect-violation"),
        ),
        Some("replay") => replay(value("--seed", 0)),
        Some("hash") => {
            let run = world::run(value("--seed", 0));
            println!(
                "seed {}: trace hash {:016x} ({} lines)",
                run.seed,
                run.ledger.trace_hash(),
                run.ledger.trace().len()
            );
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: mcp-connect-sim run [--seeds N] [--from S] [--threads T] [--expect-violation] | replay --seed S | hash --seed S");
            ExitCode::from(2)
        }
    }
}

/// The seeds kept because they once failed, run before any other.
fn regressions() -> Vec<u64> {
    include_str!("../regressions.txt")
        .lines()
        .filter_map(|line| line.split('#').next()?.trim().parse().ok())
        .collect()
}

fn run_many(from: u64, count: u64, threads: usize, expect_violation: bool) -> ExitCode {
    let began = Instant::now();
    let mut seeds = regressions();
    seeds.extend(from..from + count);
    let chunks: Vec<Vec<u64>> = (0..threads.max(1))
        .map(|t| {
            seeds
                .iter()
                .copied()
                .skip(t)
                .step_by(threads.max(1))
                .collect()
        })
        .collect();
    // Looking for a violation (a broken build), the first one ends the run.
    let found = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<(u64, f64, Vec<String>)> = std::thread::scope(|scope| {
        let found = &found;
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .take_while(|_| !found.load(std::sync::atomic::Ordering::Relaxed))
                        .map(|seed| {
                            let result = verdict(seed);
                            if expect_violation && !result.2.is_empty() {
                                found.store(true, std::sync::atomic::Ordering::Relaxed);
                            }
                            result
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a simulation thread"))
            .collect()
    });
    let mut failing: Vec<&(u64, f64, Vec<String>)> = results
        .iter()
        .filter(|(_, _, found)| !found.is_empty())
        .collect();
    failing.sort_by_key(|(seed, _, _)| *seed);
    let hours: f64 = results.iter().map(|(_, secs, _)| secs).sum::<f64>() / 3600.0;
    for (seed, _, _) in failing.iter().take(SHOWN) {
        let run = world::run(*seed);
        report(&run, &check(&run));
    }
    println!(
        "{} seeds ({} regressions, then {from}..{}) on {threads} threads: {} with violations, {hours:.1} simulated hours, {:.1} s",
        results.len(),
        regressions().len(),
        from + count,
        failing.len(),
        began.elapsed().as_secs_f64()
    );
    match (failing.is_empty(), expect_violation) {
        (true, false) | (false, true) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// One seed's simulated seconds and violations. A panic anywhere in the
/// run is a violation too.
fn verdict(seed: u64) -> (u64, f64, Vec<String>) {
    match std::panic::catch_unwind(|| {
        let run = world::run(seed);
        let found: Vec<String> = check(&run).iter().map(ToString::to_string).collect();
        (run.simulated.as_secs_f64(), found)
    }) {
        Ok((secs, found)) => (seed, secs, found),
        Err(_) => (seed, 0.0, vec!["the run panicked".into()]),
    }
}

fn report(run: &Run, found: &[Violation]) {
    for violation in found {
        println!("VIOLATION seed {}: {violation}", run.seed);
    }
    if let Some(first) = found.first() {
        println!(
            "  replay: cd sim && cargo run --release -- replay --seed {}",
            run.seed
        );
        println!("  trace (the call's lines, network and life events):");
        for line in explain(run, first) {
            println!("    {line}");
        }
    }
}

fn replay(seed: u64) -> ExitCode {
    let run = world::run(seed);
    for line in run.ledger.trace() {
        println!("{line}");
    }
    let found = check(&run);
    println!(
        "seed {seed}: trace hash {:016x}, {:.1} simulated s, {} violations",
        run.ledger.trace_hash(),
        run.simulated.as_secs_f64(),
        found.len()
    );
    for violation in &found {
        println!("VIOLATION seed {seed}: {violation}");
    }
    match found.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 47: each seed, run twice (the second time on another thread),
    /// gives the same trace byte for byte, and another seed another trace.
    /// Among these seeds some retry with jittered backoff, so the client's
    /// own random choices must come from the seed too.
    #[test]
    fn the_same_seed_gives_the_same_trace() {
        for seed in 10..16 {
            let first = world::run(seed);
            let again = std::thread::spawn(move || world::run(seed))
                .join()
                .expect("thread");
            assert!(first.ledger.trace().len() > 40, "a trace worth comparing");
            assert_eq!(first.ledger.trace(), again.ledger.trace(), "seed {seed}");
            assert_eq!(first.ledger.trace_hash(), again.ledger.trace_hash());
            let next = world::run(seed + 100);
            assert_ne!(next.ledger.trace_hash(), first.ledger.trace_hash());
        }
    }
}
