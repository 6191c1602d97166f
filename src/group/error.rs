//! Why a group operation failed.

use std::fmt;
use std::sync::Arc;

use mcp_connect_layers::{Classify, Failure, FailureKind, Stage};

use super::health::HealthState;
use crate::client::ClientError;

/// Why a group operation failed. Names of tools, prompts and servers are
/// shown (they are the caller's words or the configuration's); resource
/// URIs, arguments and server messages never are.
#[derive(Debug)]
#[non_exhaustive]
pub enum GroupError {
    /// No tool of the current catalogue has this name.
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// No prompt of the current catalogue has this name.
    UnknownPrompt {
        /// The name asked for.
        name: String,
    },
    /// No usable server lists a resource at the URI.
    UnknownResource,
    /// Several servers list a resource at the URI: read it through one
    /// server's client.
    AmbiguousResource {
        /// The servers that list it.
        servers: Vec<Arc<str>>,
    },
    /// The request names no tool, prompt or resource (a listing, a
    /// `ping`), so no one server is its: the catalogue is the group's
    /// listing, and a member's client takes the rest.
    Unroutable {
        /// The request's operation (`list_tools`, `ping`, ...).
        operation: &'static str,
    },
    /// The group has no server of this name.
    UnknownServer {
        /// The name asked for.
        name: String,
    },
    /// The group already has a server of this name.
    Duplicate {
        /// The name.
        name: String,
    },
    /// The server is not usable now.
    NotUsable {
        /// The server.
        server: Arc<str>,
        /// Where it stands.
        state: HealthState,
    },
    /// Every server settled and none is usable (or the group is empty).
    NoneUsable,
    /// The call was routed to its server and failed there: the client
    /// could not establish a session or the call itself failed. Shown as
    /// the server's name and the client's fact; the chain goes on with the
    /// client's cause, so a report is no deeper than a lone client's.
    Call {
        /// The server.
        server: Arc<str>,
        /// What its client said (boxed: it is large, and most group
        /// errors are not calls).
        error: Box<ClientError>,
    },
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::UnknownTool { name } => {
                write!(f, "no tool named {name:?} in the catalogue")
            }
            GroupError::UnknownPrompt { name } => {
                write!(f, "no prompt named {name:?} in the catalogue")
            }
            GroupError::UnknownResource => {
                f.write_str("no server in the catalogue lists that resource")
            }
            GroupError::AmbiguousResource { servers } => {
                write!(f, "{} servers list that resource", servers.len())
            }
            GroupError::Unroutable { operation } => {
                write!(f, "a group routes no {operation} request: it names no server's tool, prompt or resource")
            }
            GroupError::UnknownServer { name } => {
                write!(f, "no server named {name:?} in the group")
            }
            GroupError::Duplicate { name } => {
                write!(f, "the group already has a server named {name:?}")
            }
            GroupError::NotUsable { server, state } => {
                write!(f, "server {server:?} is {}", state.as_str())
            }
            GroupError::NoneUsable => f.write_str("no server of the group is usable"),
            GroupError::Call { server, error } => write!(f, "server {server:?}: {error}"),
        }
    }
}

impl std::error::Error for GroupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // The client's fact is in this error's own message.
            GroupError::Call { error, .. } => error.source(),
            _ => None,
        }
    }
}

impl Classify for GroupError {
    fn failure(&self) -> Failure {
        match self {
            GroupError::Call { error, .. } => error.failure(),
            GroupError::NotUsable { state, .. } => state
                .failure()
                .copied()
                .unwrap_or_else(|| Failure::new(Stage::REQUEST, FailureKind::Other)),
            _ => Failure::new(Stage::REQUEST, FailureKind::Configuration),
        }
    }
}

crate::error::report::reportable!(GroupError);
