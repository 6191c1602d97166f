//! The requests that name a tool, a prompt or a resource: the name a group
//! routes them by is theirs, and [`McpRequest::retarget`] renames it.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{read_as, EncodedRequest, McpRequest, RequestKind};
use crate::protocol::CallToolResult;

/// `tools/call`: a tool by name, with its arguments (an object).
#[derive(Clone, PartialEq)]
pub struct CallTool<'a> {
    name: Cow<'a, str>,
    arguments: &'a Value,
}

#[derive(Serialize)]
struct NameAndArguments<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Value>,
}

impl<'a> CallTool<'a> {
    /// A call of tool `name` with `arguments`.
    pub fn new(name: impl Into<Cow<'a, str>>, arguments: &'a Value) -> Self {
        CallTool {
            name: name.into(),
            arguments,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments.
    pub fn arguments(&self) -> &Value {
        self.arguments
    }
}

impl McpRequest for CallTool<'_> {
    type Output = CallToolResult;

    fn kind(&self) -> RequestKind {
        RequestKind::CallTool
    }

    fn target(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn retarget(&mut self, name: &str) {
        self.name = Cow::Owned(name.to_owned());
    }

    fn encode(&self) -> EncodedRequest {
        let params = NameAndArguments {
            name: &self.name,
            arguments: Some(self.arguments),
        };
        EncodedRequest::new(RequestKind::CallTool, Some(&params), Some(&self.name))
    }

    fn read(raw: Box<RawValue>) -> Result<CallToolResult, serde_json::Error> {
        read_as(&raw)
    }
}

/// `prompts/get`: a prompt by name, with its arguments if any; the result
/// as the server sent it.
#[derive(Clone, PartialEq)]
pub struct GetPrompt<'a> {
    name: Cow<'a, str>,
    arguments: Option<&'a Value>,
}

impl<'a> GetPrompt<'a> {
    /// Prompt `name`, without arguments.
    pub fn new(name: impl Into<Cow<'a, str>>) -> Self {
        GetPrompt {
            name: name.into(),
            arguments: None,
        }
    }

    /// With `arguments` (an object of strings).
    #[must_use]
    pub fn with_arguments(mut self, arguments: &'a Value) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

impl McpRequest for GetPrompt<'_> {
    type Output = Value;

    fn kind(&self) -> RequestKind {
        RequestKind::GetPrompt
    }

    fn target(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn retarget(&mut self, name: &str) {
        self.name = Cow::Owned(name.to_owned());
    }

    fn encode(&self) -> EncodedRequest {
        let params = NameAndArguments {
            name: &self.name,
            arguments: self.arguments,
        };
        EncodedRequest::new(RequestKind::GetPrompt, Some(&params), Some(&self.name))
    }

    fn read(raw: Box<RawValue>) -> Result<Value, serde_json::Error> {
        read_as(&raw)
    }
}

/// `resources/read`: a resource by URI; the result as the server sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResource<'a> {
    uri: Cow<'a, str>,
}

#[derive(Serialize)]
struct Uri<'a> {
    uri: &'a str,
}

impl<'a> ReadResource<'a> {
    /// The resource at `uri`.
    pub fn new(uri: impl Into<Cow<'a, str>>) -> Self {
        ReadResource { uri: uri.into() }
    }
}

impl McpRequest for ReadResource<'_> {
    type Output = Value;

    fn kind(&self) -> RequestKind {
        RequestKind::ReadResource
    }

    fn target(&self) -> Option<&str> {
        Some(&self.uri)
    }

    fn retarget(&mut self, uri: &str) {
        self.uri = Cow::Owned(uri.to_owned());
    }

    fn encode(&self) -> EncodedRequest {
        let params = Uri { uri: &self.uri };
        EncodedRequest::new(RequestKind::ReadResource, Some(&params), Some(&self.uri))
    }

    fn read(raw: Box<RawValue>) -> Result<Value, serde_json::Error> {
        read_as(&raw)
    }
}

/// `completion/complete`: candidates for one argument's partial value of
/// a prompt (`{"type": "ref/prompt", "name": ...}`) or a resource template
/// (`{"type": "ref/resource", "uri": ...}`); the result as sent.
#[derive(Clone, PartialEq)]
pub struct Complete<'a> {
    reference: &'a Value,
    argument: &'a str,
    value: &'a str,
}

impl<'a> Complete<'a> {
    /// Candidates for `argument`, typed so far as `value`, of `reference`.
    pub fn new(reference: &'a Value, argument: &'a str, value: &'a str) -> Self {
        Complete {
            reference,
            argument,
            value,
        }
    }
}

impl McpRequest for Complete<'_> {
    type Output = Value;

    fn kind(&self) -> RequestKind {
        RequestKind::Complete
    }

    fn encode(&self) -> EncodedRequest {
        #[derive(Serialize)]
        struct Argument<'a> {
            name: &'a str,
            value: &'a str,
        }
        #[derive(Serialize)]
        struct Params<'a> {
            #[serde(rename = "ref")]
            reference: &'a Value,
            argument: Argument<'a>,
        }
        let params = Params {
            reference: self.reference,
            argument: Argument {
                name: self.argument,
                value: self.value,
            },
        };
        EncodedRequest::new(RequestKind::Complete, Some(&params), None)
    }

    fn read(raw: Box<RawValue>) -> Result<Value, serde_json::Error> {
        read_as(&raw)
    }
}

impl std::fmt::Debug for CallTool<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names and arguments are the application's data: never shown.
        f.debug_struct("CallTool").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for GetPrompt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names and arguments are the application's data: never shown.
        f.debug_struct("GetPrompt").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Complete<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names and arguments are the application's data: never shown.
        f.debug_struct("Complete").finish_non_exhaustive()
    }
}
