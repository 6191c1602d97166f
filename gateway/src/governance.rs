//! Policy, quotas and the audit record around every request that lists or
//! calls a tool, in both eras and over stdio: the one place
//! [`crate::answer`] and the 2026-07-28 rounds go through before a member
//! is asked.
//!
//! A [`Gate`] is opened before the request is answered (a call the policy
//! or a quota refuses is answered there, never sent) and closed with its
//! answer (a listing or a search filtered for the principal; a call's
//! record written). With nothing configured the gate is open and costs a
//! compare.

use std::sync::Arc;
use std::time::SystemTime;

use mcp_connect::group::{is_meta_tool, ServerGroup};
use mcp_connect::protocol::{codes, methods, RequestKind};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::audit::{AuditRecord, AuditSink, Outcome};
use crate::downstream::Downstream;
use crate::policy::{Action, Decision, Policy, ToolRequest};
use crate::quota::{QuotaDecision, Quotas};
use crate::reply::Answer;
use crate::reply::RpcFailure;
use crate::Principal;

/// What the gateway governs calls with; all off by default.
#[derive(Default, Clone)]
pub(crate) struct Governance {
    pub(crate) policy: Option<Arc<dyn Policy>>,
    pub(crate) quotas: Option<Quotas>,
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    /// The argument fields a record keeps.
    pub(crate) audit_arguments: Vec<String>,
}

/// Who asks, and who can be asked to approve.
#[derive(Clone, Copy, Default)]
pub(crate) struct Caller<'a> {
    pub(crate) principal: Option<&'a Principal>,
    /// A 2025 session whose client may be asked (elicitation).
    pub(crate) approver: Option<&'a Arc<Downstream>>,
}

/// A request let through, waiting for its answer.
#[must_use]
pub(crate) struct Gate<'a> {
    governance: &'a Governance,
    group: &'a ServerGroup,
    principal: Option<&'a Principal>,
    kind: Kind,
}

enum Kind {
    Open,
    Listing,
    Search,
    Call(Box<Facts>),
}

/// What a call's record says besides its answer.
struct Facts {
    time: SystemTime,
    started: Instant,
    server: Option<String>,
    tool: String,
    decision: Option<Decision>,
    quota: QuotaDecision,
    request_bytes: usize,
    arguments: Map<String, Value>,
}

const DESCRIBE_TOOL: &str = "describe_tool";
const SEARCH_TOOLS: &str = "search_tools";

impl Governance {
    /// Whether nothing is configured: every gate would be open.
    pub(crate) fn is_off(&self) -> bool {
        self.policy.is_none() && self.quotas.is_none() && self.audit.is_none()
    }

    /// Opens the gate for `kind` with `params`, or answers the request.
    pub(crate) async fn gate<'a>(
        &'a self,
        group: &'a ServerGroup,
        caller: Caller<'a>,
        kind: RequestKind,
        params: Option<&Value>,
    ) -> Result<Gate<'a>, Answer> {
        let mut gate = Gate {
            governance: self,
            group,
            principal: caller.principal,
            kind: Kind::Open,
        };
        if self.is_off() {
            return Ok(gate);
        }
        match kind {
            RequestKind::ListTools if self.policy.is_some() => gate.kind = Kind::Listing,
            RequestKind::CallTool => {
                let name = (params.and_then(|p| p.get("name")))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let arguments = params.and_then(|p| p.get("arguments"));
                gate.kind = match meta(group, name) {
                    Some(SEARCH_TOOLS) if self.policy.is_some() => Kind::Search,
                    Some(SEARCH_TOOLS) => Kind::Open,
                    Some(DESCRIBE_TOOL) => {
                        let target = text(arguments, "name");
                        if gate.decide(Action::List, target, None) == Some(Decision::Deny) {
                            return Err(no_such_tool());
                        }
                        Kind::Open
                    }
                    // `call_tool`: decided as the call of the tool it names.
                    Some(_) => {
                        let target = text(arguments, "name");
                        let inner = arguments.and_then(|a| a.get("arguments"));
                        gate.call(target, inner, caller.approver).await?
                    }
                    None => gate.call(name, arguments, caller.approver).await?,
                };
            }
            _ => {}
        }
        Ok(gate)
    }
}

/// The meta-tool `name` is, when the group answers it as one (the
/// library's own rule: discovery on, or no tool of that name).
fn meta(group: &ServerGroup, name: &str) -> Option<&'static str> {
    if !is_meta_tool(name) {
        return None;
    }
    let meta = group.catalogue().tool(name).is_none() || group.shown_tools().is_discovery();
    let name = match name {
        SEARCH_TOOLS => SEARCH_TOOLS,
        DESCRIBE_TOOL => DESCRIBE_TOOL,
        _ => "call_tool",
    };
    meta.then_some(name)
}

fn text<'v>(value: Option<&'v Value>, field: &str) -> &'v str {
    (value.and_then(|v| v.get(field)))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn no_such_tool() -> Answer {
    raw(&json!({ "content": [{ "type": "text",
        "text": "no tool has that name; search_tools finds tools" }], "isError": true }))
}

fn raw(value: &Value) -> Answer {
    serde_json::value::to_raw_value(value)
        .map_err(|_| RpcFailure::new(codes::INTERNAL_ERROR, "the answer could not be written"))
}

impl<'a> Gate<'a> {
    /// The policy's decision on `tool` (`None`: no policy, or no such
    /// tool).
    fn decide(&self, action: Action, tool: &str, arguments: Option<&Value>) -> Option<Decision> {
        let policy = self.governance.policy.as_ref()?;
        let catalogue = self.group.catalogue();
        let server = &catalogue.tool(tool)?.server;
        let mut request = ToolRequest::new(self.principal, server, tool);
        if let Some(arguments) = arguments {
            request = request.with_arguments(arguments);
        }
        Some(policy.decide(action, &request))
    }

    /// A call of `tool`: decided, counted, and remembered for its record;
    /// or answered here.
    async fn call(
        &self,
        tool: &str,
        arguments: Option<&Value>,
        approver: Option<&Arc<Downstream>>,
    ) -> Result<Kind, Answer> {
        let server = (self.group.catalogue().tool(tool)).map(|t| t.server.to_string());
        let mut facts = Facts {
            time: SystemTime::now(),
            started: Instant::now(),
            server,
            tool: tool.to_owned(),
            decision: None,
            quota: QuotaDecision::Unlimited,
            request_bytes: arguments.map_or(0, json_len),
            arguments: self.kept(arguments),
        };
        facts.decision = self.decide(Action::Call, tool, arguments);
        let approved = match facts.decision {
            Some(Decision::Deny) => false,
            Some(Decision::RequireApproval) => approve(approver, self.principal, &facts).await,
            _ => true,
        };
        if !approved {
            let hidden = self.decide(Action::List, tool, None) == Some(Decision::Deny);
            let failure = match hidden {
                // A tool it may not see is one that does not exist.
                true => RpcFailure::new(codes::INVALID_PARAMS, "Unknown tool"),
                false => RpcFailure::new(
                    codes::INVALID_REQUEST,
                    "the policy does not allow this call",
                ),
            };
            return Err(self.refused(facts, Outcome::Denied, failure));
        }
        if let (Some(quotas), Some(server)) = (&self.governance.quotas, &facts.server) {
            facts.quota = quotas.take(self.principal, server, tool).await;
            if !facts.quota.lets_through() {
                let failure = match facts.quota {
                    QuotaDecision::Refused { retry_after } => {
                        let ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
                        RpcFailure::new(codes::RATE_LIMITED, "the quota is spent")
                            .with_data(json!({ "retryAfterMs": ms.max(1) }))
                    }
                    _ => RpcFailure::new(codes::INTERNAL_ERROR, "the quota cannot be checked now"),
                };
                return Err(self.refused(facts, Outcome::Throttled, failure));
            }
        }
        Ok(Kind::Call(Box::new(facts)))
    }

    /// The argument fields a record keeps.
    fn kept(&self, arguments: Option<&Value>) -> Map<String, Value> {
        let fields = &self.governance.audit_arguments;
        match (arguments.and_then(Value::as_object), fields.is_empty()) {
            (Some(given), false) => (fields.iter())
                .filter_map(|f| given.get(f).map(|v| (f.clone(), v.clone())))
                .collect(),
            _ => Map::new(),
        }
    }

    fn refused(&self, facts: Facts, outcome: Outcome, failure: RpcFailure) -> Answer {
        self.record(facts, outcome, 0);
        Err(failure)
    }

    fn record(&self, facts: Facts, outcome: Outcome, response_bytes: usize) {
        let Some(sink) = &self.governance.audit else {
            return;
        };
        sink.record(&AuditRecord {
            time: facts.time,
            principal: self.principal.cloned(),
            server: facts.server,
            tool: facts.tool,
            decision: facts.decision,
            quota: facts.quota,
            outcome,
            duration: facts.started.elapsed(),
            request_bytes: facts.request_bytes,
            response_bytes,
            arguments: facts.arguments,
        });
    }

    /// The request's answer, as the principal may see it; a call's record
    /// written.
    pub(crate) fn finish(mut self, answer: Answer) -> Answer {
        match std::mem::replace(&mut self.kind, Kind::Open) {
            Kind::Open => answer,
            Kind::Listing => answer.and_then(|result| self.filtered(&result, false)),
            Kind::Search => answer.and_then(|result| self.filtered(&result, true)),
            Kind::Call(facts) => {
                let (outcome, bytes) = match &answer {
                    Err(_) => (Outcome::Error, 0),
                    Ok(result) if is_error(result) => (Outcome::ToolError, result.get().len()),
                    Ok(result) => (Outcome::Result, result.get().len()),
                };
                self.record(*facts, outcome, bytes);
                answer
            }
        }
    }

    /// A listing's tools (or a search's, in its structured content and its
    /// text) without those the principal may not see.
    fn filtered(&self, result: &RawValue, search: bool) -> Answer {
        let unwritable = || RpcFailure::new(codes::INTERNAL_ERROR, "the answer could not be read");
        let mut value: Value = serde_json::from_str(result.get()).map_err(|_| unwritable())?;
        let tools = match search {
            true => value.pointer_mut("/structuredContent/tools"),
            false => value.get_mut("tools"),
        };
        if let Some(Value::Array(tools)) = tools {
            tools.retain(|tool| {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                self.decide(Action::List, name, None) != Some(Decision::Deny)
            });
        }
        if search {
            let text = (value.get("structuredContent")).map(Value::to_string);
            if let (Some(text), Some(first)) = (text, value.pointer_mut("/content/0/text")) {
                *first = Value::String(text);
            }
        }
        raw(&value)
    }
}

/// Whether a tool's result says it failed (`isError`).
fn is_error(result: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(default, rename = "isError")]
        is_error: bool,
    }
    serde_json::from_str::<Flag>(result.get()).is_ok_and(|flag| flag.is_error)
}

/// The length of `value` written as JSON, without writing it anywhere.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Asks the person, through the client that called, whether the call may
/// go ahead; no when nobody can be asked or the answer is not an accept.
async fn approve(
    approver: Option<&Arc<Downstream>>,
    principal: Option<&Principal>,
    facts: &Facts,
) -> bool {
    let Some(down) = approver.filter(|down| down.declared("elicitation")) else {
        return false;
    };
    let who = principal.map_or(String::new(), |p| format!(" as {}", p.subject()));
    let server = facts.server.as_deref().unwrap_or("?");
    let message = format!("Allow the call of {} on {server}{who}?", facts.tool);
    let params = json!({ "message": message,
        "requestedSchema": { "type": "object", "properties": {} } });
    let asked = crate::relay::ask(Arc::downgrade(down), methods::ELICITATION_CREATE, params);
    match asked.await {
        Ok(answer) => answer.get("action").and_then(Value::as_str) == Some("accept"),
        Err(_) => false,
    }
}
