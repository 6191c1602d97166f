//! The calls an application makes through the client: each runs on the
//! current session through [`McpClient::run`](super::McpClient), which
//! applies the session-loss rule and the opt-in replay; none rebuilds a
//! request the session already knows how to make.

use crate::protocol::methods;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{ClientError, McpClient};
use crate::extensions::tasks::{Called, Task};
use crate::protocol::{CallToolResult, ListToolsResult, Prompt, Resource, ResourceTemplate};
use crate::session::RequestOptions;

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
        self.run("call_tool", |s| async move {
            s.call_tool(name, arguments).await
        })
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
        self.run("call_tool", |s| async move {
            s.call_tool_with(name, arguments, options).await
        })
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

    /// `tools/list`, every page.
    pub async fn list_tools(&self) -> Result<ListToolsResult, ClientError> {
        self.run("list_tools", |s| async move { s.list_tools().await })
            .await
    }

    /// `prompts/list`, every page.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.run("list_prompts", |s| async move { s.list_prompts().await })
            .await
    }

    /// `resources/list`, every page.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.run(
            "list_resources",
            |s| async move { s.list_resources().await },
        )
        .await
    }

    /// `resources/templates/list`, every page.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.run("list_resource_templates", |s| async move {
            s.list_resource_templates().await
        })
        .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&Value>,
    ) -> Result<Value, ClientError> {
        self.run("get_prompt", |s| async move {
            s.get_prompt(name, arguments).await
        })
        .await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, ClientError> {
        self.run(
            "read_resource",
            |s| async move { s.read_resource(uri).await },
        )
        .await
    }

    /// Any request, raw result.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.run("request", |s| {
            let params = params.clone();
            async move { s.request(method, params).await }
        })
        .await
    }
}
