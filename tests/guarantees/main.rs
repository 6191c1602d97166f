//! The sixteen guarantees, one module each, named by G-number (docs/ARCHITECTURE.md lists them).
//!
//! One test binary for the group, so the library links once for all of
//! them; each file is a module of its own.

#[path = "../support/mod.rs"]
mod support;

mod g01_opt_in;
mod g02_fresh;
mod g03_finite;
mod g04_conservative;
mod g05_aggregates;
mod g06_veto;
mod g07_pins;
mod g08_no_replay;
mod g09_one_deadline;
mod g10_terminal_closure;
mod g11_races;
mod g12_exactly_once;
mod g13_precedence;
mod g14_payload_free;
mod g15_established_sessions;
mod g16_manager;
