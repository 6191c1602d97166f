//! Why a group operation failed.

use std::sync::Arc;

use mcp_connect_layers::{Classify, Failure, FailureKind, Stage};

use super::health::HealthState;
use crate::client::ClientError;

/// Why a group operation failed. Names of tools, prompts and servers are
/// shown (they are the caller's words or the configuration's); resource
/// URIs, arguments and server messages never are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// No tool of the current catalogue has this name.
    #[error("no tool named {name:?} in the catalogue")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// No prompt of the current catalogue has this name.
    #[error("no prompt named {name:?} in the catalogue")]
    UnknownPrompt {
        /// The name asked for.
        name: String,
    },
    /// No usable server lists a resource at the URI.
    #[error("no server in the catalogue lists that resource")]
    UnknownResource,
    /// Several servers list a resource at the URI: read it through one
    /// server's client.
    #[error("{} servers list that resource", servers.len())]
    AmbiguousResource {
        /// The servers that list it.
        servers: Vec<Arc<str>>,
    },
    /// The group has no server of this name.
    #[error("no server named {name:?} in the group")]
    UnknownServer {
        /// The name asked for.
        name: String,
    },
    /// The group already has a server of this name.
    #[error("the group already has a server named {name:?}")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The server is not usable now.
    #[error("server {server:?} is {}", state.as_str())]
    NotUsable {
        /// The server.
        server: Arc<str>,
        /// Where it stands.
        state: HealthState,
    },
    /// Every server settled and none is usable (or the group is empty).
    #[error("no server of the group is usable")]
    NoneUsable,
    /// The call reached its server and failed there.
    #[error("the call to server {server:?} failed")]
    Call {
        /// The server.
        server: Arc<str>,
        /// What its client said (boxed: it is large, and most group
        /// errors are not calls).
        #[source]
        error: Box<ClientError>,
    },
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

crate::report::reportable!(GroupError);
