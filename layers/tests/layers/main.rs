//! The layers' tests, one binary: the deadline, recovery, and the layers
//! over a plain hyper client (feature `http`).

mod deadline;
mod over_http;
mod recovery;
