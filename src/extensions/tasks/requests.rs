//! The extension's requests: a `tools/call` that offers a task, and the
//! three task methods.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{called, state, Called, TaskState};
use crate::protocol::{CallTool, EncodedRequest, McpRequest, RequestKind};

/// A `tools/call` that offers the server a task (on the 2026-07-28 era;
/// on older eras it is a plain call): the result at once, or a
/// [`Task`](super::Task) to wait for. Never sent twice, whatever the
/// client's [`ReplayPolicy`](crate::client::replay::ReplayPolicy): a second
/// sending could start a second task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskCall<'a>(CallTool<'a>);

impl<'a> TaskCall<'a> {
    /// `call`, offering a task.
    pub fn new(call: CallTool<'a>) -> Self {
        TaskCall(call)
    }
}

impl McpRequest for TaskCall<'_> {
    type Output = Called;

    fn kind(&self) -> RequestKind {
        RequestKind::CallTool
    }

    fn target(&self) -> Option<&str> {
        self.0.target()
    }

    fn retarget(&mut self, name: &str) {
        self.0.retarget(name);
    }

    fn encode(&self) -> EncodedRequest {
        self.0.encode().offering_task()
    }

    fn read(raw: Box<RawValue>) -> Result<Called, serde_json::Error> {
        called(raw.get()).map_err(serde::de::Error::custom)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskId<'a> {
    task_id: &'a str,
}

/// `tasks/get`: where the task is, and what its status carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetTask<'a>(pub &'a str);

impl McpRequest for GetTask<'_> {
    type Output = TaskState;

    fn kind(&self) -> RequestKind {
        RequestKind::GetTask
    }

    fn encode(&self) -> EncodedRequest {
        EncodedRequest::new(
            RequestKind::GetTask,
            Some(&TaskId { task_id: self.0 }),
            None,
        )
    }

    fn read(raw: Box<RawValue>) -> Result<TaskState, serde_json::Error> {
        state(raw.get()).map_err(serde::de::Error::custom)
    }
}

/// `tasks/cancel`: asks the server to cancel the task; its status says
/// when it is cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelTask<'a>(pub &'a str);

impl McpRequest for CancelTask<'_> {
    type Output = ();

    fn kind(&self) -> RequestKind {
        RequestKind::CancelTask
    }

    fn encode(&self) -> EncodedRequest {
        EncodedRequest::new(
            RequestKind::CancelTask,
            Some(&TaskId { task_id: self.0 }),
            None,
        )
    }

    fn read(_: Box<RawValue>) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

/// `tasks/update`: answers to the task's requests for input, by key.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateTask<'a> {
    /// The task.
    pub task_id: &'a str,
    /// The answers, by the key of the request they answer.
    pub responses: &'a Map<String, Value>,
}

impl McpRequest for UpdateTask<'_> {
    type Output = ();

    fn kind(&self) -> RequestKind {
        RequestKind::UpdateTask
    }

    fn encode(&self) -> EncodedRequest {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            task_id: &'a str,
            input_responses: &'a Map<String, Value>,
        }
        let params = Params {
            task_id: self.task_id,
            input_responses: self.responses,
        };
        EncodedRequest::new(RequestKind::UpdateTask, Some(&params), None)
    }

    fn read(_: Box<RawValue>) -> Result<(), serde_json::Error> {
        Ok(())
    }
}
