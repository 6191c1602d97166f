//! The calls an application makes through the client: [`McpClient::send`]
//! for any request, and the conveniences applications expect. Each request
//! goes through the client's call path (with any layers the application
//! put on it) to the current session, which applies the session-loss rule
//! and the opt-in replay; a listing sends each page that way.
//! Subscriptions and the wait for a task run on the session directly: a
//! subscription is state on the session, a wait is many polls.

use serde_json::Value;

use super::{Call, ClientError, McpClient};
use crate::error::Error;
use crate::extensions::tasks::Task;
use crate::protocol::{CallTool, CallToolResult, ListTools, ListToolsResult, McpRequest};
use crate::session::{more_pages, shape, RequestOptions};

impl McpClient {
    /// Sends a request through the client's call path and reads its
    /// result; a listing asked for every page is followed to its last
    /// page, each page through the call path. A
    /// [`Call`](crate::session::Call) gives the request options of its
    /// own. A `tools/call` that offers a task
    /// ([`TaskCall`](crate::extensions::tasks::TaskCall)) is never sent
    /// twice, whatever the replay policy.
    ///
    /// ```no_run
    /// # async fn run(client: mcp_connect::McpClient) -> Result<(), mcp_connect::client::ClientError> {
    /// use mcp_connect::protocol::{GetPrompt, ListResources};
    ///
    /// let resources = client.send(ListResources::all()).await?;
    /// let prompt = client.send(GetPrompt::new("greet")).await?;
    /// # drop((resources, prompt)); Ok(()) }
    /// ```
    pub async fn send<R: McpRequest>(
        &self,
        call: impl Into<crate::session::Call<R>>,
    ) -> Result<R::Output, ClientError> {
        let call = call.into();
        let (request, options) = (call.request(), call.options());
        let local = |error| self.local(request.kind().operation(), error);
        let raw = (self.call(Call::new(request.encode()).with_options(options.clone()))).await?;
        let mut output = R::read(raw).map_err(|e| local(shape(e)))?;
        if let Some(next) = request.next_page(&mut output) {
            let send = |request| self.call(Call::new(request).with_options(options.clone()));
            Box::pin(more_pages(next, &mut output, send, local)).await?;
        }
        Ok(output)
    }

    /// `tools/call` ([`send`](Self::send) with a [`CallTool`]).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<CallToolResult, ClientError> {
        self.send(CallTool::new(name, arguments)).await
    }

    /// `tools/list`, every page, each through the call path.
    ///
    /// The client's session keeps the tools' header declarations (the
    /// modern era's `Mcp-Param-*`) and leaves out invalid ones, as
    /// [`Session::list_tools`](crate::Session::list_tools) does. A client
    /// whose calls went to replicas may have no session of its own: then
    /// the listing is as the server sent it, and each replica's session
    /// learns the declarations when a call needs them.
    pub async fn list_tools(&self) -> Result<ListToolsResult, ClientError> {
        let tools = self.send(ListTools::all()).await?.items;
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

    /// Subscribes to a resource, kept: every later session of this client
    /// subscribes again before it serves a call.
    pub async fn subscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.run("subscribe", |session| async move {
            session.subscribe(uri).await
        })
        .await?;
        self.shared().subscriptions.insert(uri.to_owned());
        Ok(())
    }

    /// Unsubscribes from a resource, and no renewal on later sessions.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.shared().subscriptions.remove(uri);
        self.run("unsubscribe", |session| async move {
            session.unsubscribe(uri).await
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
