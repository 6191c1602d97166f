//! One run: the simulated world of one seed (three servers and the client
//! on simulated hosts), the fault schedule applied between simulator steps,
//! and the ledger it leaves.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::faults::{schedule, Action, Draw};
use crate::ledger::{Ledger, Shared};
use crate::server::{self, Lasting, Path, Spec};
use crate::workload::{self, WINDOW};

/// The servers: faulty ones that answer a stale session each way the
/// field does, and fault-free ones whose links never fail and whose tools
/// fail half the time (behind breakers). The first three each have a
/// client of their own; the last two are members of one `ServerGroup`.
pub static SERVERS: [Spec; 5] = [
    Spec {
        name: "alpha",
        stale_status: 404,
        faulty: true,
        path: Path::Replay,
    },
    Spec {
        name: "beta",
        stale_status: 400,
        faulty: true,
        path: Path::Client,
    },
    Spec {
        name: "gamma",
        stale_status: 404,
        faulty: false,
        path: Path::Breaker,
    },
    Spec {
        name: "delta",
        stale_status: 400,
        faulty: true,
        path: Path::Group,
    },
    Spec {
        name: "epsilon",
        stale_status: 404,
        faulty: false,
        path: Path::Group,
    },
];

/// How far simulated time moves in one step of the simulator.
pub const TICK: Duration = Duration::from_millis(10);

/// What a run leaves.
pub struct Run {
    pub seed: u64,
    pub ledger: Ledger,
    /// Simulated time the run took.
    pub simulated: Duration,
    /// The simulator's own failure: a host's software failed or panicked.
    pub failed: Option<String>,
}

/// Runs `seed`'s world to its end.
pub fn run(seed: u64) -> Run {
    let ledger: Shared = Arc::default();
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(900))
        // The simulator's grain. Most steps are empty, so it sets the
        // speed: 1 ms ran 9x slower. At 10 ms a round trip takes tens of
        // milliseconds, as on a real network; the properties allow
        // 100 ms for the grain.
        .tick_duration(TICK)
        .build();
    for (index, spec) in SERVERS.iter().enumerate() {
        let lasting = Lasting {
            ledger: Arc::clone(&ledger),
            draw: Arc::new(Mutex::new(Draw::new(seed, index as u64 + 1))),
            lives: Arc::new(AtomicU64::new(0)),
        };
        let spec = *spec;
        sim.host(spec.name, move || server::serve(spec, lasting.clone()));
    }
    sim.client("client", workload::run(seed, &SERVERS, Arc::clone(&ledger)));
    let faulty: Vec<&'static str> = SERVERS
        .iter()
        .filter(|s| s.faulty)
        .map(|s| s.name)
        .collect();
    let plan = schedule(&mut Draw::new(seed, 0), &faulty, WINDOW);
    let mut plan = plan.into_iter().peekable();
    let failed = loop {
        while plan.peek().is_some_and(|(at, _)| *at <= sim.elapsed()) {
            let (_, action) = plan.next().expect("peeked");
            apply(&mut sim, action);
            let mut ledger = ledger.lock().expect("ledger");
            ledger.note(sim.elapsed(), format_args!("net: {action:?}"));
        }
        match sim.step() {
            Ok(true) => break None,
            Ok(false) => {}
            Err(error) => break Some(error.to_string()),
        }
    };
    let simulated = sim.elapsed();
    drop(sim);
    let ledger = std::mem::take(&mut *ledger.lock().expect("ledger"));
    Run {
        seed,
        ledger,
        simulated,
        failed,
    }
}

fn apply(sim: &mut turmoil::Sim<'_>, action: Action) {
    match action {
        Action::Partition(server) => sim.partition("client", server),
        Action::Hold(server) => sim.hold("client", server),
        Action::Heal(server) => {
            sim.repair("client", server);
            sim.release("client", server);
        }
        Action::Latency(server, latency) => sim.set_link_latency("client", server, latency),
        Action::Kill(server) => sim.crash(server),
        Action::Restart(server) => sim.bounce(server),
    }
}
