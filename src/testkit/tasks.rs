//! A 2026-07-28 server with the Tasks extension (SEP-2663), written from
//! the extension's text: its `tools/call` makes a task when the request
//! offers the extension (and answers at once when it does not), and serves
//! `tasks/get`, `tasks/update` and `tasks/cancel` for it.

use crate::protocol::{methods, RequestKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use super::http::{error, result, Recorded, Script};

/// How the server's tasks go.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct TaskPlan {
    /// `tasks/get` answers `working` this many times first.
    pub working_polls: u32,
    /// Then the task asks for input (an elicitation form with defaults)
    /// once, and waits for `tasks/update`.
    pub asks_input: bool,
    /// Then it fails (`-32603`) instead of completing.
    pub fails: bool,
    /// The poll interval it suggests, in milliseconds.
    pub poll_interval_ms: Option<u64>,
}

impl TaskPlan {
    /// Completes after `working_polls` polls.
    pub fn new(working_polls: u32) -> Self {
        TaskPlan {
            working_polls,
            ..TaskPlan::default()
        }
    }

    /// Asks for input once before completing.
    #[must_use]
    pub fn asking_input(mut self) -> Self {
        self.asks_input = true;
        self
    }

    /// Fails instead of completing.
    #[must_use]
    pub fn failing(mut self) -> Self {
        self.fails = true;
        self
    }

    /// Suggests this poll interval.
    #[must_use]
    pub fn polling_every(mut self, millis: u64) -> Self {
        self.poll_interval_ms = Some(millis);
        self
    }
}

#[derive(Debug, Clone, Default)]
struct TaskRecord {
    polls: u32,
    answered: Option<Value>,
    cancelled: bool,
}

/// The tasks server's state; clones share it. Use [`respond`](Self::respond)
/// as (or in) a [`ScriptServer`](super::ScriptServer)'s closure.
#[derive(Debug, Clone, Default)]
pub struct TasksServer {
    plan: TaskPlan,
    tasks: Arc<Mutex<HashMap<String, TaskRecord>>>,
}

impl TasksServer {
    /// A server whose tasks follow `plan`.
    pub fn new(plan: TaskPlan) -> Self {
        TasksServer {
            plan,
            tasks: Arc::default(),
        }
    }

    /// Tasks made so far.
    pub fn created(&self) -> usize {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Tasks cancelled so far.
    pub fn cancelled(&self) -> usize {
        let tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        tasks.values().filter(|t| t.cancelled).count()
    }

    /// The answer to `request`.
    pub fn respond(&self, request: &Recorded) -> Script {
        let params = &request.body["params"];
        let answer = match RequestKind::of(request.rpc_method()) {
            RequestKind::Discover => result(
                request,
                json!({
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": { "tools": {}, "extensions": { crate::extensions::tasks::EXTENSION: {} } },
                }),
            ),
            RequestKind::CallTool if crate::extensions::tasks::offered(Some(params)) => {
                let id = format!("task-{}", self.created() + 1);
                self.tasks
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.clone(), TaskRecord::default());
                let mut handle = self.handle(&id, "working");
                handle["resultType"] = json!("task");
                result(request, handle)
            }
            RequestKind::CallTool => result(request, done()),
            RequestKind::GetTask => self.get(request),
            RequestKind::UpdateTask => self.update(request),
            RequestKind::CancelTask => self.cancel(request),
            _ => error(request, -32601, None),
        };
        Script::Json(200, answer)
    }

    fn handle(&self, id: &str, status: &str) -> Value {
        json!({
            "taskId": id,
            "status": status,
            "createdAt": "2026-12-02T00:00:00Z",
            "lastUpdatedAt": "2026-12-02T00:00:00Z",
            "ttlMs": 60_000,
            "pollIntervalMs": self.plan.poll_interval_ms,
        })
    }

    fn get(&self, request: &Recorded) -> Value {
        let id = request.body["params"]["taskId"]
            .as_str()
            .unwrap_or_default();
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(task) = tasks.get_mut(id) else {
            return error(request, -32602, None);
        };
        task.polls += 1;
        let state = if task.cancelled {
            self.handle(id, "cancelled")
        } else if task.polls <= self.plan.working_polls {
            self.handle(id, "working")
        } else if self.plan.asks_input && task.answered.is_none() {
            let mut state = self.handle(id, "input_required");
            state["inputRequests"] = json!({ "name": { "method": methods::ELICITATION_CREATE, "params": {
                "message": "name?", "requestedSchema": { "type": "object",
                    "properties": { "name": { "type": "string", "default": "Ada" } } } } } });
            state
        } else if self.plan.fails {
            let mut state = self.handle(id, "failed");
            state["error"] = json!({ "code": -32603, "message": "the task failed" });
            state
        } else {
            let mut state = self.handle(id, "completed");
            let mut finished = done();
            if let Some(answer) = &task.answered {
                finished["structuredContent"] = json!({ "answer": answer });
            }
            state["result"] = finished;
            state
        };
        let mut state = state;
        state["resultType"] = json!("complete");
        result(request, state)
    }

    fn update(&self, request: &Recorded) -> Value {
        let params = &request.body["params"];
        let id = params["taskId"].as_str().unwrap_or_default();
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        match (tasks.get_mut(id), params["inputResponses"].get("name")) {
            (Some(task), Some(answer)) => {
                task.answered = Some(answer.clone());
                result(request, json!({ "resultType": "complete" }))
            }
            _ => error(request, -32602, None),
        }
    }

    fn cancel(&self, request: &Recorded) -> Value {
        let id = request.body["params"]["taskId"]
            .as_str()
            .unwrap_or_default();
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        match tasks.get_mut(id) {
            Some(task) => {
                task.cancelled = true;
                result(request, json!({ "resultType": "complete" }))
            }
            None => error(request, -32602, None),
        }
    }
}

fn done() -> Value {
    json!({ "resultType": "complete", "content": [{ "type": "text", "text": "done" }] })
}
