//! The calls an application makes through the client. Each request goes
//! through the client's call path ([`Call`], with any layers the
//! application put on it) to the current session, which applies the
//! session-loss rule and the opt-in replay; a listing sends each page that
//! way. Subscriptions and tasks run on the session directly: a
//! subscription is state on the session, and a task's creation is never
//! sent twice.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{Call, ClientError, McpClient};
use crate::error::Error;
use crate::extensions::tasks::{Called, Task};
use crate::protocol::{
    methods, CallToolParams, CallToolResult, GetPromptParams, ListToolsResult, Prompt,
    ReadResourceParams, Resource, ResourceTemplate, Tool,
};
use crate::session::{collect_pages, page_params, shape, RequestOptions};

impl McpClient {
    /// `resources/subscribe`, kept: every later session of this client
    /// subscribes again before it serves a call.
    pub async fn subscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.run(methods::RESOURCES_SUBSCRIBE, |session| async move {
            session.subscribe(uri).await
        })
        .await?;
        self.subscriptions().insert(uri.to_owned());
        Ok(())
    }

    /// `resources/unsubscribe`, and no renewal on later sessions.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.subscriptions().remove(uri);
        self.run(methods::RESOURCES_UNSUBSCRIBE, |session| async move {
            session.unsubscribe(uri).await
        })
        .await
    }

    /// `tools/call`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, &RequestOptions::default())
            .await
    }

    /// `tools/call` with its own [`RequestOptions`] (cancellation, timeout,
    /// progress).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: &Value,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        // A `&str` and a `Value` always serialize to a `Value`.
        let params =
            serde_json::to_value(CallToolParams { name, arguments }).expect("params serialize");
        self.call_as("call_tool", methods::TOOLS_CALL, Some(params), options)
            .await
    }

    /// `tools/call` offering a task (SEP-2663): the result, or a task to
    /// [`wait_task`](Self::wait_task) for. Never sent twice, whatever the
    /// [`ReplayPolicy`](crate::replay::ReplayPolicy): a second sending
    /// could start a second task.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<Called, ClientError> {
        self.run_once("call_tool_as_task", |s| async move {
            s.call_tool_as_task(name, arguments).await
        })
        .await
    }

    /// Waits for a task's result on the current session (see
    /// [`Session::wait_task`](crate::Session::wait_task)). Task ids outlive
    /// sessions: after a failure that lost the session, waiting again polls
    /// the same task on the next one.
    pub async fn wait_task(
        &self,
        task: &Task,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        self.run(
            "wait_task",
            |s| async move { s.wait_task(task, options).await },
        )
        .await
    }

    /// `tasks/cancel`.
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), ClientError> {
        self.run(
            "cancel_task",
            |s| async move { s.cancel_task(task_id).await },
        )
        .await
    }

    /// `tools/list`, every page, each through the call path.
    pub async fn list_tools(&self) -> Result<ListToolsResult, ClientError> {
        let tools: Vec<Tool> = self
            .listing("list_tools", methods::TOOLS_LIST, "tools")
            .await?;
        // The client's session keeps the tools' header declarations (the
        // modern era's `Mcp-Param-*`) and leaves out invalid ones. A client
        // whose calls went to replicas may have none of its own: then the
        // listing is as the server sent it, and each replica's session
        // learns the declarations when a call needs them.
        match self.current().await {
            Ok(Some((session, _))) => Ok(session.tools_listed(tools, None, true)),
            _ => Ok(ListToolsResult {
                tools,
                next_cursor: None,
                extra: Default::default(),
                excluded: Vec::new(),
            }),
        }
    }

    /// `prompts/list`, every page.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.listing("list_prompts", methods::PROMPTS_LIST, "prompts")
            .await
    }

    /// `resources/list`, every page.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.listing("list_resources", methods::RESOURCES_LIST, "resources")
            .await
    }

    /// `resources/templates/list`, every page.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.listing(
            "list_resource_templates",
            methods::RESOURCES_TEMPLATES_LIST,
            "resourceTemplates",
        )
        .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&Value>,
    ) -> Result<Value, ClientError> {
        // A `&str` and a `Value` always serialize to a `Value`.
        let params =
            serde_json::to_value(GetPromptParams { name, arguments }).expect("params serialize");
        self.call_as(
            "get_prompt",
            methods::PROMPTS_GET,
            Some(params),
            &RequestOptions::default(),
        )
        .await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, ClientError> {
        // A `&str` always serializes to a `Value`.
        let params = serde_json::to_value(ReadResourceParams { uri }).expect("params serialize");
        self.call_as(
            "read_resource",
            methods::RESOURCES_READ,
            Some(params),
            &RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete` (see [`Session::complete`](crate::Session::complete)).
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Value, ClientError> {
        let params = json!({ "ref": reference, "argument": { "name": argument, "value": value } });
        self.call_as(
            "complete",
            methods::COMPLETION_COMPLETE,
            Some(params),
            &RequestOptions::default(),
        )
        .await
    }

    /// Any request, raw result, through the call path.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.call(Call::new(method.to_owned(), params).made_by(self))
            .await
    }

    /// One request through the call path, its result read as `T`.
    async fn call_as<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        method: &'static str,
        params: Option<Value>,
        options: &RequestOptions,
    ) -> Result<T, ClientError> {
        let call = Call::of(self, operation, method, params, options.clone());
        let raw = self.call(call).await?;
        serde_json::from_str(raw.get()).map_err(|e| self.local(operation, shape(e)))
    }

    /// Every page of a listing, each through the call path.
    async fn listing<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        method: &'static str,
        key: &str,
    ) -> Result<Vec<T>, ClientError> {
        collect_pages(
            key,
            |cursor| {
                let options = RequestOptions::default();
                self.call(Call::of(
                    self,
                    operation,
                    method,
                    page_params(cursor.as_deref()),
                    options,
                ))
            },
            |error| self.local(operation, error),
        )
        .await
    }

    /// An error found here, after the session answered (a result of the
    /// wrong shape, a listing that does not end): the session stays.
    fn local(&self, operation: &'static str, error: Error) -> ClientError {
        ClientError::Call {
            operation,
            generation: self.generation(),
            session_lost: false,
            error,
        }
    }
}
