//! The requests a client sends, one type each: [`CallTool`], [`ListTools`],
//! [`GetPrompt`], [`ReadResource`], [`Complete`], [`Ping`], ... and
//! [`RawRequest`] for a method this crate has no type for.
//!
//! Each knows its method, what its result is read as, and the name a
//! group or a gateway routes it by (a tool's or prompt's name, a
//! resource's URI). [`McpRequest::encode`] turns one into an
//! [`EncodedRequest`]: its params serialized once, its
//! [`RequestKind`] and routing name computed once. Everything after that
//! (a session's steps, a client's call path, a hedge, a span, the
//! `Mcp-Name` header) asks the encoded request what it is, never a method
//! string: the one place a method name is read back into a kind is
//! [`RequestKind::of`], for raw requests.
//!
//! Why serialized once: a call's arguments are the application's data,
//! often large. They used to become a `serde_json::Value` per facade and be
//! copied again on the client's path; now they are written to JSON text
//! once, and every send (a retry under a new id, a replay, a hedge) reuses
//! the text, shared.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::methods;

mod listings;
mod named;
mod simple;

#[cfg(feature = "skills")]
pub(crate) use listings::listing;
pub use listings::{ListPrompts, ListResourceTemplates, ListResources, ListTools};
pub use named::{CallTool, Complete, GetPrompt, ReadResource};
pub use simple::{Ping, RawRequest, SetLoggingLevel, Subscribe, Unsubscribe};

/// An MCP request: its params, what its result is read as, and what it is.
///
/// ```
/// use mcp_connect::protocol::{CallTool, McpRequest, RequestKind};
/// use serde_json::json;
///
/// let arguments = json!({ "a": 1, "b": 2 });
/// let call = CallTool::new("add", &arguments).encode();
/// assert_eq!(call.kind(), RequestKind::CallTool);
/// assert_eq!(call.target(), Some("add"));
/// assert!(!call.is_idempotent_read());
/// assert_eq!(call.params(), Some(r#"{"name":"add","arguments":{"a":1,"b":2}}"#));
/// ```
pub trait McpRequest: Send {
    /// What the result is read as.
    type Output: Send + 'static;

    /// What it is.
    fn kind(&self) -> RequestKind;

    /// The name a group routes this request by: a tool's or a prompt's
    /// name, a resource's URI. `None` for requests that name nothing.
    fn target(&self) -> Option<&str> {
        None
    }

    /// This request for a server that knows its target as `name` (a
    /// group's catalogue name becomes the member's own). Requests that
    /// name nothing ignore it.
    fn retarget(&mut self, name: &str) {
        let _ = name;
    }

    /// The request, its params serialized once.
    fn encode(&self) -> EncodedRequest;

    /// The server's result as this request's output.
    ///
    /// # Errors
    ///
    /// The result does not have the shape the method promises.
    fn read(raw: Box<RawValue>) -> Result<Self::Output, serde_json::Error>;

    /// For a listing asked for every page: the cursor after `output`'s
    /// page (taken out of it) and the request for the next page. The
    /// facades' `send` follows it until it says `None`, stopping at a
    /// repeated cursor and after [`MAX_PAGES`](crate::session::MAX_PAGES).
    fn next_page(&self, output: &mut Self::Output) -> Option<(String, Self)>
    where
        Self: Sized,
    {
        let _ = output;
        None
    }

    /// The next page's items added to `output`.
    fn join(output: &mut Self::Output, page: Self::Output) {
        let _ = (output, page);
    }
}

/// What a request is, for every rule that asks: hedging, replay, spans,
/// routing headers, the response cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestKind {
    /// `ping`.
    Ping,
    /// `server/discover`.
    Discover,
    /// `initialize`.
    Initialize,
    /// `tools/list`.
    ListTools,
    /// `tools/call`.
    CallTool,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
    /// `resources/list`.
    ListResources,
    /// `resources/templates/list`.
    ListResourceTemplates,
    /// `resources/read`.
    ReadResource,
    /// `resources/subscribe`.
    Subscribe,
    /// `resources/unsubscribe`.
    Unsubscribe,
    /// `completion/complete`.
    Complete,
    /// `logging/setLevel`.
    SetLoggingLevel,
    /// `subscriptions/listen` (2026-07-28 era).
    Listen,
    /// `tasks/get`.
    GetTask,
    /// `tasks/update`.
    UpdateTask,
    /// `tasks/cancel`.
    CancelTask,
    /// `skills/list`.
    ListSkills,
    /// `skills/get`.
    GetSkill,
    /// A method this crate has no type for.
    Other,
}

/// Every kind with a method of its own, for [`RequestKind::of`].
const KNOWN: [RequestKind; 20] = [
    RequestKind::Ping,
    RequestKind::Discover,
    RequestKind::Initialize,
    RequestKind::ListTools,
    RequestKind::CallTool,
    RequestKind::ListPrompts,
    RequestKind::GetPrompt,
    RequestKind::ListResources,
    RequestKind::ListResourceTemplates,
    RequestKind::ReadResource,
    RequestKind::Subscribe,
    RequestKind::Unsubscribe,
    RequestKind::Complete,
    RequestKind::SetLoggingLevel,
    RequestKind::Listen,
    RequestKind::GetTask,
    RequestKind::UpdateTask,
    RequestKind::CancelTask,
    RequestKind::ListSkills,
    RequestKind::GetSkill,
];

impl RequestKind {
    /// The kind of a method named by its string (a raw request's).
    pub fn of(method: &str) -> RequestKind {
        KNOWN
            .into_iter()
            .find(|kind| kind.method() == Some(method))
            .unwrap_or(RequestKind::Other)
    }

    /// The method, for every kind but [`Other`](RequestKind::Other).
    pub fn method(self) -> Option<&'static str> {
        Some(match self {
            RequestKind::Ping => methods::PING,
            RequestKind::Discover => methods::SERVER_DISCOVER,
            RequestKind::Initialize => methods::INITIALIZE,
            RequestKind::ListTools => methods::TOOLS_LIST,
            RequestKind::CallTool => methods::TOOLS_CALL,
            RequestKind::ListPrompts => methods::PROMPTS_LIST,
            RequestKind::GetPrompt => methods::PROMPTS_GET,
            RequestKind::ListResources => methods::RESOURCES_LIST,
            RequestKind::ListResourceTemplates => methods::RESOURCES_TEMPLATES_LIST,
            RequestKind::ReadResource => methods::RESOURCES_READ,
            RequestKind::Subscribe => methods::RESOURCES_SUBSCRIBE,
            RequestKind::Unsubscribe => methods::RESOURCES_UNSUBSCRIBE,
            RequestKind::Complete => methods::COMPLETION_COMPLETE,
            RequestKind::SetLoggingLevel => methods::LOGGING_SET_LEVEL,
            RequestKind::Listen => methods::SUBSCRIPTIONS_LISTEN,
            RequestKind::GetTask => methods::TASKS_GET,
            RequestKind::UpdateTask => methods::TASKS_UPDATE,
            RequestKind::CancelTask => methods::TASKS_CANCEL,
            RequestKind::ListSkills => methods::SKILLS_LIST,
            RequestKind::GetSkill => methods::SKILLS_GET,
            RequestKind::Other => return None,
        })
    }

    /// Whether sending it twice cannot change anything: a listing,
    /// `resources/read`, `prompts/get`, `completion/complete`,
    /// `server/discover`, `ping`. What a hedge or a replica failover may
    /// send again; a `tools/call` never is, whatever the server's
    /// annotations say.
    pub fn is_idempotent_read(self) -> bool {
        matches!(
            self,
            RequestKind::ListTools
                | RequestKind::ListPrompts
                | RequestKind::ListResources
                | RequestKind::ListResourceTemplates
                | RequestKind::ReadResource
                | RequestKind::GetPrompt
                | RequestKind::Complete
                | RequestKind::Discover
                | RequestKind::Ping
        )
    }

    /// Whether it is a listing (every page of which the response cache
    /// and a group may keep).
    pub fn is_listing(self) -> bool {
        matches!(
            self,
            RequestKind::ListTools
                | RequestKind::ListPrompts
                | RequestKind::ListResources
                | RequestKind::ListResourceTemplates
        )
    }

    /// The param that holds the name it is routed by, for the kinds that
    /// name a tool, a prompt or a resource.
    pub(crate) fn target_key(self) -> Option<&'static str> {
        match self {
            RequestKind::CallTool | RequestKind::GetPrompt => Some("name"),
            RequestKind::ReadResource | RequestKind::Subscribe | RequestKind::Unsubscribe => {
                Some("uri")
            }
            _ => None,
        }
    }

    /// The name logs and errors give the operation (`call_tool`,
    /// `list_tools`, ...; `request` for a raw one).
    pub fn operation(self) -> &'static str {
        match self {
            RequestKind::Ping => "ping",
            RequestKind::Discover => "discover",
            RequestKind::Initialize => "initialize",
            RequestKind::ListTools => "list_tools",
            RequestKind::CallTool => "call_tool",
            RequestKind::ListPrompts => "list_prompts",
            RequestKind::GetPrompt => "get_prompt",
            RequestKind::ListResources => "list_resources",
            RequestKind::ListResourceTemplates => "list_resource_templates",
            RequestKind::ReadResource => "read_resource",
            RequestKind::Subscribe => "subscribe",
            RequestKind::Unsubscribe => "unsubscribe",
            RequestKind::Complete => "complete",
            RequestKind::SetLoggingLevel => "set_logging_level",
            RequestKind::Listen => "listen",
            RequestKind::GetTask => "get_task",
            RequestKind::UpdateTask => "update_task",
            RequestKind::CancelTask => "cancel_task",
            RequestKind::ListSkills => "list_skills",
            RequestKind::GetSkill => "get_skill",
            RequestKind::Other => "request",
        }
    }
}

/// A request ready to send: its method, its params as JSON text (written
/// once, shared by every send), what it is, and the name it is routed by.
/// Cheap to clone. Its `Debug` never shows the params: they are the
/// application's data.
#[derive(Clone)]
pub struct EncodedRequest {
    kind: RequestKind,
    method: Cow<'static, str>,
    params: Option<Arc<str>>,
    target: Option<Arc<str>>,
    /// The params carry a `_meta` of their own (raw requests only).
    own_meta: bool,
    /// A `tools/call` that offers the server a task (SEP-2663).
    offers_task: bool,
}

impl EncodedRequest {
    /// A request of `kind` whose params are `params` serialized, routed by
    /// `target`.
    pub(crate) fn new<P: Serialize + ?Sized>(
        kind: RequestKind,
        params: Option<&P>,
        target: Option<&str>,
    ) -> Self {
        EncodedRequest {
            kind,
            method: Cow::Borrowed(kind.method().expect("a typed request has a method")),
            params: params.map(json_text),
            target: target.map(Arc::from),
            own_meta: false,
            offers_task: false,
        }
    }

    /// A request of `method` with `params`, for a method this crate may
    /// have no type for; its kind is read from the method.
    pub fn raw(method: impl Into<Cow<'static, str>>, params: Option<&Value>) -> Self {
        let method = method.into();
        let kind = RequestKind::of(&method);
        let method = match kind.method() {
            Some(known) => Cow::Borrowed(known),
            None => method,
        };
        let target = params.and_then(|params| {
            let key = kind.target_key()?;
            params.get(key)?.as_str().map(Arc::from)
        });
        EncodedRequest {
            kind,
            method,
            params: params.map(json_text),
            target,
            own_meta: params.is_some_and(|params| params.get("_meta").is_some()),
            offers_task: false,
        }
    }

    /// What it is.
    pub fn kind(&self) -> RequestKind {
        self.kind
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params as JSON text, as they are sent.
    pub fn params(&self) -> Option<&str> {
        self.params.as_deref()
    }

    /// The name it is routed by: a tool's or prompt's name, a resource's
    /// URI.
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// Whether sending it twice cannot change anything (see
    /// [`RequestKind::is_idempotent_read`]).
    pub fn is_idempotent_read(&self) -> bool {
        self.kind.is_idempotent_read()
    }

    /// Whether it is a `tools/call` that offers the server a task, which
    /// is never sent twice.
    pub fn offers_task(&self) -> bool {
        self.offers_task
    }

    /// The params, read back (for the rare rule that needs their values:
    /// tool headers, input rounds, the response cache's key).
    pub(crate) fn params_value(&self) -> Option<Value> {
        let text = self.params.as_deref()?;
        Some(serde_json::from_str(text).expect("the params were written as JSON"))
    }

    /// These params instead (an input round's answers added).
    pub(crate) fn set_params(&mut self, params: &Value) {
        self.params = Some(json_text(params));
        self.own_meta = params.get("_meta").is_some();
    }

    pub(crate) fn has_own_meta(&self) -> bool {
        self.own_meta
    }

    /// This `tools/call` offering a task.
    pub(crate) fn offering_task(mut self) -> Self {
        self.offers_task = true;
        self
    }
}

impl fmt::Debug for EncodedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Params and target are the application's data: never shown.
        f.debug_struct("EncodedRequest")
            .field("method", &self.method)
            .field("offers_task", &self.offers_task)
            .finish_non_exhaustive()
    }
}

impl McpRequest for EncodedRequest {
    type Output = Box<RawValue>;

    fn kind(&self) -> RequestKind {
        self.kind
    }

    fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    fn retarget(&mut self, name: &str) {
        let Some(key) = self.kind.target_key() else {
            return;
        };
        let mut params = self
            .params_value()
            .unwrap_or_else(|| Value::Object(Default::default()));
        params[key] = Value::String(name.to_owned());
        self.set_params(&params);
        self.target = Some(Arc::from(name));
    }

    fn encode(&self) -> EncodedRequest {
        self.clone()
    }

    fn read(raw: Box<RawValue>) -> Result<Box<RawValue>, serde_json::Error> {
        Ok(raw)
    }
}

/// `value` as JSON text, shared.
fn json_text<P: Serialize + ?Sized>(value: &P) -> Arc<str> {
    let text = serde_json::to_string(value).expect("request params serialize to JSON");
    Arc::from(text)
}

/// A result read as `T`.
pub(crate) fn read_as<T: serde::de::DeserializeOwned>(
    raw: &RawValue,
) -> Result<T, serde_json::Error> {
    serde_json::from_str(raw.get())
}

#[cfg(test)]
mod tests;
