//! Who may see and call which tool: a [`Policy`] decides, for a principal,
//! a server and a tool (and, for a call, its arguments), whether to allow,
//! deny, or ask the person first.
//!
//! It is asked twice, and the second answer is the one that counts: when
//! a principal lists tools (a tool it may not see is left out of
//! `tools/list`, of `search_tools` and of `describe_tool`), and when it
//! calls one, whatever it was shown: a list filtered for a principal is
//! no boundary on its own, since a client may call a name it never
//! listed. A call to a meta-tool's `call_tool` is decided for the tool it
//! names.
//!
//! [`CedarPolicy`] (feature `cedar`) decides with policies written in
//! Cedar.

#[cfg(feature = "cedar")]
mod cedar;

use serde_json::Value;

#[cfg(feature = "cedar")]
pub use cedar::{CedarError, CedarPolicy};

use crate::Principal;

/// What the principal wants to do with the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// See it in a listing, a search or a description.
    List,
    /// Call it.
    Call,
}

impl Action {
    /// Its name in policies and records: `list_tool`, `call_tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::List => "list_tool",
            Action::Call => "call_tool",
        }
    }
}

/// A policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Refused: a listing leaves the tool out; a call is answered with an
    /// error and never reaches the server.
    Deny,
    /// A call goes ahead once the person agrees, asked through
    /// elicitation by the client that called (a 2025 session whose client
    /// declared elicitation); where nobody can be asked, denied. A listing
    /// shows the tool.
    RequireApproval,
}

impl Decision {
    /// Its name in records: `allow`, `deny`, `require_approval`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::RequireApproval => "require_approval",
        }
    }
}

/// The question put to a policy.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolRequest<'a> {
    /// Who asks; `None` when the gateway authenticates nobody (a stdio
    /// client, a gateway with static tokens or none).
    pub principal: Option<&'a Principal>,
    /// The member that offers the tool.
    pub server: &'a str,
    /// The tool's name as the gateway exposes it.
    pub tool: &'a str,
    /// A call's arguments (`None` for a listing).
    pub arguments: Option<&'a Value>,
}

impl<'a> ToolRequest<'a> {
    /// The question for `principal` about `server`'s tool `tool`.
    pub fn new(principal: Option<&'a Principal>, server: &'a str, tool: &'a str) -> Self {
        ToolRequest {
            principal,
            server,
            tool,
            arguments: None,
        }
    }

    /// With a call's arguments.
    pub fn with_arguments(mut self, arguments: &'a Value) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// Decides who may see and call which tool. Called on every listing and
/// every call: it should answer from what it holds (no I/O).
pub trait Policy: Send + Sync + 'static {
    /// The decision for `action` on `request`.
    fn decide(&self, action: Action, request: &ToolRequest<'_>) -> Decision;
}

impl<F> Policy for F
where
    F: Fn(Action, &ToolRequest<'_>) -> Decision + Send + Sync + 'static,
{
    fn decide(&self, action: Action, request: &ToolRequest<'_>) -> Decision {
        self(action, request)
    }
}
