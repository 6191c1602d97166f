//! The command's argument parsing and output.

mod args;
mod authorize;
mod config;
mod output;
mod request;
mod run;
mod signals;

pub(crate) use run::main;
