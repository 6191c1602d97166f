//! A [`Policy`] written in Cedar (feature `cedar`, the `cedar-policy`
//! crate): policies a security team can read, test and review apart from
//! the code.
//!
//! The entity model each question is put in:
//!
//! - principal `User::"<subject>"`, with attributes `issuer` (the token's
//!   issuer) and `scopes` (a set of strings); a caller nobody
//!   authenticated is `Anonymous::""`, which no `User` policy matches;
//! - action `Action::"list_tool"` or `Action::"call_tool"`;
//! - resource `Tool::"<exposed name>"` with the attribute `server` (the
//!   member that offers it);
//! - context `{ "arguments": ... }`, a call's arguments as Cedar values
//!   (JSON numbers that are not integers become strings, `null`s are left
//!   out: Cedar has neither), `{}` for a listing.
//!
//! Cedar's answer is allow or deny. A `permit` policy annotated
//! `@approval` allows only after the person agrees: when every policy that
//! allowed a call carries it, the decision is
//! [`Decision::RequireApproval`].
//!
//! ```cedar
//! permit(principal, action == Action::"list_tool", resource);
//! permit(principal == User::"alice", action == Action::"call_tool", resource)
//!   when { resource.server == "github" };
//! @approval("")
//! permit(principal, action == Action::"call_tool", resource == Tool::"github__delete_repo");
//! forbid(principal, action == Action::"call_tool", resource)
//!   when { context.arguments has path && context.arguments.path like "/etc/*" };
//! ```

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicySet,
    RestrictedExpression,
};
use serde_json::{Map, Value};

use super::{Action, Decision, Policy, ToolRequest};

/// The policies did not parse. `Display` says so; the source has Cedar's
/// own diagnostics (positions in the policy text, never a request).
#[derive(Debug, thiserror::Error)]
#[error("the Cedar policies do not parse")]
pub struct CedarError(#[source] Box<dyn std::error::Error + Send + Sync>);

/// Cedar policies as a [`Policy`].
pub struct CedarPolicy {
    policies: PolicySet,
    authorizer: Authorizer,
    actions: [EntityUid; 2],
}

impl std::fmt::Debug for CedarPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CedarPolicy")
            .field("policies", &self.policies.policies().count())
            .finish_non_exhaustive()
    }
}

fn uid(kind: &str, id: &str) -> EntityUid {
    let kind = EntityTypeName::from_str(kind).expect("a fixed entity type parses");
    EntityUid::from_type_name_and_id(kind, EntityId::new(id))
}

impl CedarPolicy {
    /// The policies in `text` (Cedar's policy syntax).
    pub fn from_text(text: &str) -> Result<Self, CedarError> {
        let policies = PolicySet::from_str(text).map_err(|e| CedarError(Box::new(e)))?;
        Ok(CedarPolicy {
            policies,
            authorizer: Authorizer::new(),
            actions: [
                uid("Action", Action::List.as_str()),
                uid("Action", Action::Call.as_str()),
            ],
        })
    }

    fn entities(&self, request: &ToolRequest<'_>) -> Option<(EntityUid, EntityUid, Entities)> {
        let principal = match request.principal {
            Some(principal) => {
                let id = uid("User", principal.subject());
                let scopes = (principal.scopes().iter())
                    .map(|s| RestrictedExpression::new_string(s.clone()));
                let attributes = HashMap::from([
                    (
                        "issuer".to_owned(),
                        RestrictedExpression::new_string(principal.issuer().to_owned()),
                    ),
                    ("scopes".to_owned(), RestrictedExpression::new_set(scopes)),
                ]);
                Entity::new(id, attributes, HashSet::new()).ok()?
            }
            None => Entity::with_uid(uid("Anonymous", "")),
        };
        let server = RestrictedExpression::new_string(request.server.to_owned());
        let tool = Entity::new(
            uid("Tool", request.tool),
            HashMap::from([("server".to_owned(), server)]),
            HashSet::new(),
        )
        .ok()?;
        let uids = (principal.uid(), tool.uid());
        let entities = Entities::from_entities([principal, tool], None).ok()?;
        Some((uids.0, uids.1, entities))
    }
}

impl Policy for CedarPolicy {
    fn decide(&self, action: Action, request: &ToolRequest<'_>) -> Decision {
        // Anything that cannot be put to Cedar is denied, never allowed.
        let Some((principal, resource, entities)) = self.entities(request) else {
            return Decision::Deny;
        };
        let arguments = request
            .arguments
            .map_or(Value::Object(Map::new()), cedar_value);
        let context = serde_json::json!({ "arguments": arguments });
        let Ok(context) = Context::from_json_value(context, None) else {
            return Decision::Deny;
        };
        let action = self.actions[usize::from(action == Action::Call)].clone();
        let Ok(cedar_request) =
            cedar_policy::Request::new(principal, action, resource, context, None)
        else {
            return Decision::Deny;
        };
        let response = (self.authorizer).is_authorized(&cedar_request, &self.policies, &entities);
        if response.decision() != cedar_policy::Decision::Allow {
            return Decision::Deny;
        }
        let approval =
            |id| (self.policies.policy(id)).is_some_and(|p| p.annotation("approval").is_some());
        let mut reasons = response.diagnostics().reason().peekable();
        match reasons.peek().is_some() && reasons.all(approval) {
            true => Decision::RequireApproval,
            false => Decision::Allow,
        }
    }
}

/// A JSON value as Cedar takes it: integers as they are, other numbers as
/// strings, `null`s left out.
fn cedar_value(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_i64() => value.clone(),
        Value::Number(n) => Value::String(n.to_string()),
        Value::Array(items) => Value::Array(
            (items.iter())
                .filter(|v| !v.is_null())
                .map(cedar_value)
                .collect(),
        ),
        Value::Object(fields) => Value::Object(
            (fields.iter())
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), cedar_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}
