//! The Tasks extension on a session (SEP-2663): waiting for a task (its
//! requests are [`TaskCall`], [`GetTask`], [`UpdateTask`] and
//! [`CancelTask`], sent like any other). Waiting polls `tasks/get` at
//! the server's suggested interval (clamped), answers its requests for
//! input with the session's handler (`tasks/update`), and ends at a
//! terminal status, the caller's timeout, or the caller's cancellation,
//! which cancels the task (`tasks/cancel`).

use std::time::Duration;

use mcp_connect_layers::{CancelSource, Stage};
use tokio::time::Instant;

use super::{RequestOptions, Session};
use crate::error::{Error, ErrorKind};
#[cfg(doc)]
use crate::extensions::tasks::TaskCall;
use crate::extensions::tasks::{
    CancelTask, GetTask, Task, TaskDetail, TaskError, UpdateTask, DEFAULT_TASK_WAIT,
};
use crate::inbound::InputRequiredError;
use crate::protocol::CallToolResult;
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
                let _ = self.send(CancelTask(&task.task_id)).await;
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
            let state = self.send(GetTask(&task.task_id)).await?;
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
                    let update = UpdateTask {
                        task_id: &task.task_id,
                        responses: &responses,
                    };
                    self.send(update).await?;
                }
                TaskDetail::Working => {}
            }
            let pause = interval.map_or(DEFAULT_POLL, Duration::from_millis);
            tokio::time::sleep(pause.clamp(MIN_POLL, MAX_POLL)).await;
        }
    }
}
