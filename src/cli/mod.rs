//! The command's argument parsing and output.

mod args;
mod authorize;
mod output;
mod run;
mod signals;

pub(crate) use run::main;
