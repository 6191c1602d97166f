//! The command's argument parsing and output.

mod args;
mod output;
mod run;

pub(crate) use run::main;
