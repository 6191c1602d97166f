//! The command's argument parsing and output.

mod args;
mod output;
mod run;
mod signals;

pub(crate) use run::main;
