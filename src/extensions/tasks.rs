//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, on the
//! 2026-07-28 protocol): a server may answer a `tools/call` with a durable
//! task handle instead of the result, and the client polls for it.
//!
//! The client offers tasks per request (the extension in the request's
//! `clientCapabilities`), and only where the application asked for a
//! handle: a plain `call_tool` never gets one, so code that does not know
//! tasks never sees them. The server then decides, call by call. Three
//! methods follow: `tasks/get` (the task's state, with the server's
//! requests for input, the result or the error), `tasks/update` (answers to
//! those requests) and `tasks/cancel`. Task ids survive the session, so a
//! long-lived client can go on polling after it reconnects; creating a task
//! is never sent twice.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::protocol::{CallToolResult, RpcError};

mod requests;

pub use requests::{CancelTask, GetTask, TaskCall, UpdateTask};

/// The extension's identifier, as it appears under
/// `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How long a wait for a task lasts without a timeout of the caller's
/// (`Session::wait_task`).
pub const DEFAULT_TASK_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client to answer the server's requests.
    InputRequired,
    /// Done, with a result.
    Completed,
    /// Done, with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task is over (completed, failed or cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// A task handle: what `tools/call` returns when the server made a task,
/// and the common part of every `tasks/get` answer. Its status message is
/// the server's text and is never printed by this crate.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    /// The server's id for the task.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// The server's words on it.
    #[serde(default)]
    pub status_message: Option<String>,
    /// When it was made (ISO 8601).
    #[serde(default)]
    pub created_at: String,
    /// When it last changed (ISO 8601).
    #[serde(default)]
    pub last_updated_at: String,
    /// How long the server keeps it from its creation, in milliseconds;
    /// `None` for no limit.
    #[serde(default, deserialize_with = "lenient_millis")]
    pub ttl_ms: Option<u64>,
    /// How often the server suggests polling, in milliseconds. A value
    /// that is no non-negative integer is no suggestion: the task is still
    /// returned (it exists at the server; refusing it would orphan it).
    #[serde(default, deserialize_with = "lenient_millis")]
    pub poll_interval_ms: Option<u64>,
}

/// A non-negative integer number of milliseconds, or `None` for anything
/// else (negative, fractional, a string, `null`).
fn lenient_millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Value::deserialize(d)?.as_u64())
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("status", &self.status)
            .field("ttl_ms", &self.ttl_ms)
            .field("poll_interval_ms", &self.poll_interval_ms)
            .finish_non_exhaustive()
    }
}

/// A task as `tasks/get` tells it: the handle, and what its status
/// carries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskState {
    /// The handle, refreshed.
    pub task: Task,
    /// What the status carries.
    pub detail: TaskDetail,
}

/// What a task's status carries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TaskDetail {
    /// Still running.
    Working,
    /// The server's requests (sampling, elicitation, roots), by key, to
    /// answer with `tasks/update`.
    InputRequired(Map<String, Value>),
    /// The tool's result.
    Completed(CallToolResult),
    /// The error the task ended with.
    Failed(RpcError),
    /// Cancelled.
    Cancelled,
}

/// What a `tools/call` that offered a task got back.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Called {
    /// The result, at once.
    Result(CallToolResult),
    /// A task to poll for it.
    Task(Task),
}

/// Why a task gave no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The task was cancelled (by this client or by the server).
    #[error("the task was cancelled")]
    Cancelled,
    /// A `tasks/get` answer lacks what its status requires (the result,
    /// the error, the input requests), or is not a task.
    #[error("the server's task state is malformed")]
    Malformed,
    /// The server answered a `tools/call` with a task although the request
    /// did not offer the extension.
    #[error("the server made a task the request did not offer")]
    Unrequested,
}

/// Reads a `tasks/get` result.
pub(crate) fn state(result: &str) -> Result<TaskState, TaskError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire {
        #[serde(flatten)]
        task: Task,
        #[serde(default)]
        input_requests: Option<Map<String, Value>>,
        #[serde(default)]
        result: Option<CallToolResult>,
        #[serde(default)]
        error: Option<RpcError>,
    }
    let wire: Wire = serde_json::from_str(result).map_err(|_| TaskError::Malformed)?;
    let detail = match wire.task.status {
        TaskStatus::Working => TaskDetail::Working,
        TaskStatus::Cancelled => TaskDetail::Cancelled,
        TaskStatus::InputRequired => {
            TaskDetail::InputRequired(wire.input_requests.ok_or(TaskError::Malformed)?)
        }
        TaskStatus::Completed => TaskDetail::Completed(wire.result.ok_or(TaskError::Malformed)?),
        TaskStatus::Failed => TaskDetail::Failed(wire.error.ok_or(TaskError::Malformed)?),
    };
    Ok(TaskState {
        task: wire.task,
        detail,
    })
}

/// A `tools/call` result: a task handle (`resultType: "task"`) or the
/// result.
pub(crate) fn called(result: &str) -> Result<Called, TaskError> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "resultType", default, borrow)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    let kind: Kind<'_> = serde_json::from_str(result).map_err(|_| TaskError::Malformed)?;
    if kind.result_type.as_deref() == Some("task") {
        let task = serde_json::from_str(result).map_err(|_| TaskError::Malformed)?;
        return Ok(Called::Task(task));
    }
    serde_json::from_str(result)
        .map(Called::Result)
        .map_err(|_| TaskError::Malformed)
}

/// Whether `params` offer the extension in their `clientCapabilities`.
pub(crate) fn offered(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(crate::protocol::meta_keys::CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn handle(status: &str) -> Value {
        json!({
            "taskId": "t-1", "status": status, "createdAt": "2026-12-02T10:00:00Z",
            "lastUpdatedAt": "2026-12-02T10:00:01Z", "ttlMs": 60000, "pollIntervalMs": 50
        })
    }

    #[test]
    fn a_task_handle_and_a_result_are_told_apart() {
        let mut task = handle("working");
        task["resultType"] = json!("task");
        let Ok(Called::Task(task)) = called(&task.to_string()) else {
            panic!("a task")
        };
        assert_eq!(task.task_id, "t-1");
        assert_eq!(task.poll_interval_ms, Some(50));
        let result = json!({ "resultType": "complete", "content": [] }).to_string();
        assert!(matches!(called(&result), Ok(Called::Result(_))));
    }

    #[test]
    fn each_status_needs_what_it_carries() {
        let mut done = handle("completed");
        done["result"] = json!({ "content": [{ "type": "text", "text": "ok" }] });
        assert!(matches!(
            state(&done.to_string()).unwrap().detail,
            TaskDetail::Completed(_)
        ));
        let mut failed = handle("failed");
        failed["error"] = json!({ "code": -32603, "message": "boom" });
        let TaskDetail::Failed(error) = state(&failed.to_string()).unwrap().detail else {
            panic!("failed")
        };
        assert_eq!(error.code(), -32603);
        for bare in ["completed", "failed", "input_required"] {
            assert_eq!(
                state(&handle(bare).to_string()).unwrap_err(),
                TaskError::Malformed,
                "{bare}"
            );
        }
        assert!(state(r#"{"status":"working"}"#).is_err(), "no task id");
        assert!(TaskStatus::Cancelled.is_terminal() && !TaskStatus::InputRequired.is_terminal());
    }

    #[test]
    fn a_task_handle_prints_no_status_message() {
        let mut task = handle("working");
        task["statusMessage"] = json!("canary-status");
        let task: Task = serde_json::from_value(task).unwrap();
        assert!(!format!("{task:?}").contains("canary"));
    }
}
