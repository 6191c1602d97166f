//! The Tasks extension on a session (SEP-2663): a `tools/call` that offers
//! a task, and the task's methods. Waiting for a task polls `tasks/get` at
//! the server's suggested interval (clamped), answers its requests for
//! input with the session's handler (`tasks/update`), and ends at a
//! terminal status, the caller's timeout, or the caller's cancellation,
//! which cancels the task (`tasks/cancel`).

use crate::protocol::methods;
use std::time::Duration;

use mcp_connect_layers::{CancelSource, Stage};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::{RequestOptions, Session};
use crate::error::{Error, ErrorKind};
use crate::extensions::tasks::{
    self, Called, Task, TaskDetail, TaskError, TaskState, DEFAULT_TASK_WAIT,
};
use crate::inbound::InputRequiredError;
use crate::protocol::{meta_keys, CallToolParams, CallToolResult, Era};
use crate::session::MAX_INPUT_ROUNDS;

/// The poll interval when the server suggests none, and the bounds put on
/// a suggestion (a server cannot make a client spin, nor go silent).
const DEFAULT_POLL: Duration = Duration::from_millis(500);
const MIN_POLL: Duration = Duration::from_millis(20);
const MAX_POLL: Duration = Duration::from_secs(30);

fn task_error(error: TaskError) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::Task(error))
}

impl Session {
    /// `tools/call`, offering the server a task (the extension in this
    /// request's capabilities, 2026-07-28 era): the result at once, or a
    /// [`Task`] to [`wait_task`](Self::wait_task) for. On older eras the
    /// extension is not offered and the result comes as usual.
    pub async fn call_tool_as_task(&self, name: &str, arguments: &Value) -> Result<Called, Error> {
        self.call_tool_as_task_with(name, arguments, &RequestOptions::default())
            .await
    }

    /// [`call_tool_as_task`](Self::call_tool_as_task) with its own
    /// [`RequestOptions`] for the `tools/call` itself.
    pub async fn call_tool_as_task_with(
        &self,
        name: &str,
        arguments: &Value,
        options: &RequestOptions,
    ) -> Result<Called, Error> {
        if self.era() != Era::Modern {
            return self
                .call_tool_with(name, arguments, options)
                .await
                .map(Called::Result);
        }
        // A `&str` and a `Value` always serialize to a `Value`.
        let mut params =
            serde_json::to_value(CallToolParams { name, arguments }).expect("params serialize");
        let mut capabilities = match self.client.capabilities().clone() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let extensions = capabilities
            .entry("extensions")
            .or_insert_with(|| json!({}));
        if let Value::Object(extensions) = extensions {
            extensions.insert(tasks::EXTENSION.into(), json!({}));
        }
        params["_meta"] = json!({ meta_keys::CLIENT_CAPABILITIES: capabilities });
        let raw = self
            .request_with(methods::TOOLS_CALL, Some(params), options)
            .await?;
        tasks::called(raw.get()).map_err(task_error)
    }

    /// `tasks/get`: where the task is, and what its status carries.
    pub async fn get_task(&self, task_id: &str) -> Result<TaskState, Error> {
        let raw = self
            .request(methods::TASKS_GET, Some(json!({ "taskId": task_id })))
            .await?;
        tasks::state(raw.get()).map_err(task_error)
    }

    /// `tasks/update`: answers to the task's requests for input, by key.
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> Result<(), Error> {
        let params = json!({ "taskId": task_id, "inputResponses": responses });
        self.request(methods::TASKS_UPDATE, Some(params))
            .await
            .map(drop)
    }

    /// `tasks/cancel`: asks the server to cancel the task. The task's
    /// status says when it is cancelled.
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), Error> {
        self.request(methods::TASKS_CANCEL, Some(json!({ "taskId": task_id })))
            .await
            .map(drop)
    }

    /// Waits for `task`'s result: polls `tasks/get` at the server's
    /// suggested interval (20 ms to 30 s; 500 ms when it suggests none),
    /// answers requests for input with the session's handler (at most
    /// [`MAX_INPUT_ROUNDS`] times, each followed by a poll interval; one
    /// more is [`InputRequiredError::TooManyRounds`]), and returns
    /// the result when the task completes. A failed task is the server's
    /// error ([`ErrorKind::Rpc`]), a cancelled one
    /// [`TaskError::Cancelled`].
    ///
    /// `options.timeout` bounds the whole wait
    /// ([`DEFAULT_TASK_WAIT`]
    /// without one); when it expires the task goes on at the server and
    /// can be waited for again with its handle. `options.cancel` cancels
    /// the task (`tasks/cancel`) and ends the wait.
    pub async fn wait_task(
        &self,
        task: &Task,
        options: &RequestOptions,
    ) -> Result<CallToolResult, Error> {
        let until = Instant::now() + options.timeout.unwrap_or(DEFAULT_TASK_WAIT);
        let polling = self.poll_task(task);
        let cancelled = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = cancelled => {
                // Bounded like any request; the wait ends either way.
                let _ = self.cancel_task(&task.task_id).await;
                Err(Error::new(Stage::REQUEST, ErrorKind::Cancelled))
            }
            outcome = polling => outcome,
            () = tokio::time::sleep_until(until) => Err(Error::new(
                Stage::REQUEST,
                ErrorKind::Timeout(CancelSource::RequestTimeout),
            )),
        }
    }

    async fn poll_task(&self, task: &Task) -> Result<CallToolResult, Error> {
        let mut interval = task.poll_interval_ms;
        let mut rounds = 0;
        loop {
            let state = self.get_task(&task.task_id).await?;
            interval = state.task.poll_interval_ms.or(interval);
            match state.detail {
                TaskDetail::Completed(result) => return Ok(result),
                TaskDetail::Failed(error) => {
                    return Err(Error::new(Stage::REQUEST, ErrorKind::Rpc(error)))
                }
                TaskDetail::Cancelled => return Err(task_error(TaskError::Cancelled)),
                TaskDetail::InputRequired(requests) => {
                    // Capped like a request's input rounds, and paced like
                    // polls: a server asking on every poll cannot make the
                    // handler (a person, a model) spin.
                    rounds += 1;
                    if rounds > MAX_INPUT_ROUNDS {
                        return Err(Error::new(
                            Stage::REQUEST,
                            ErrorKind::InputRequired(InputRequiredError::TooManyRounds {
                                limit: MAX_INPUT_ROUNDS,
                            }),
                        ));
                    }
                    let responses = self
                        .inbound
                        .answer_inputs(&requests)
                        .await
                        .map_err(|e| Error::new(Stage::REQUEST, ErrorKind::InputRequired(e)))?;
                    self.update_task(&task.task_id, responses).await?;
                }
                TaskDetail::Working => {}
            }
            let pause = interval.map_or(DEFAULT_POLL, Duration::from_millis);
            tokio::time::sleep(pause.clamp(MIN_POLL, MAX_POLL)).await;
        }
    }
}
