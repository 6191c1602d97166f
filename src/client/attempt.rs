//! One call on the current session, and what its failure means: the
//! session-loss rule decides whether the session is gone (then it is
//! dropped and disposed, and the next call builds a new one), the
//! suspicion bounds refusals that replace sessions, and the opt-in replay
//! sends a provably undelivered call once more on the new session.

use std::sync::Arc;

use super::{ClientError, McpClient, Reconnect, State};
use crate::error::Error;
use crate::replay::{undelivered, ReplayPolicy, Undelivered};
use crate::session::Session;
use crate::session_loss::{LossReason, SessionFate};

impl McpClient {
    /// Drops session `generation` if it is still the current one, and
    /// disposes of it.
    pub(super) fn lost(&self, generation: u64) {
        let dead = {
            let mut state = self.state();
            match &*state {
                State::Ready(session, current) if *current == generation => {
                    let dead = Arc::clone(session);
                    *state = State::Empty;
                    Some(dead)
                }
                _ => None,
            }
        };
        if let Some(dead) = dead {
            *self.inner.loss_cause.lock().expect("cause lock poisoned") = dead.loss_cause();
            // The error is the call's, not the disposal's.
            super::dispose(dead);
            if self.reconnect == Reconnect::InBackground {
                let client = self.clone();
                tokio::spawn(async move {
                    let _ = client.session().await;
                });
            }
        }
    }

    /// [`run`](Self::run) without the replay: for a call that must never be
    /// sent twice whatever the policy (creating a task). The session-loss
    /// rule still applies.
    pub(super) async fn run_once<T, F, Fut>(
        &self,
        operation: &'static str,
        call: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let (session, generation) = self.session().await?;
        self.attempt(operation, &call, session, generation).await
    }

    pub(super) async fn run<T, F, Fut>(
        &self,
        operation: &'static str,
        call: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let (session, generation) = self.session().await?;
        let error = match self.attempt(operation, &call, session, generation).await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        // Only after a loss: a kept session would get the call twice. A
        // refused remembered version is resent whatever the policy: the
        // server said it ran nothing.
        let evidence = match &error {
            ClientError::Call {
                error,
                session_lost: true,
                ..
            } => undelivered(error).filter(|evidence| {
                self.replay == ReplayPolicy::Undelivered || *evidence == Undelivered::VersionRefused
            }),
            _ => None,
        };
        let Some(evidence) = evidence else {
            return Err(error);
        };
        // The old session is already dropped; a new one, or the first
        // error when none can be had (the next call will say why).
        let Ok((session, generation)) = self.session().await else {
            return Err(error);
        };
        tracing::debug!(
            target: "mcp_connect::client",
            operation,
            evidence = evidence.as_str(),
            generation,
            "call never reached the server; sent once on the new session"
        );
        self.attempt(operation, &call, session, generation).await
    }

    /// One call on one session; a session found dead is dropped.
    pub(super) async fn attempt<T, F, Fut>(
        &self,
        operation: &'static str,
        call: &F,
        session: Arc<Session>,
        generation: u64,
    ) -> Result<T, ClientError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let has_session_id = session.has_session_id();
        match call(session).await {
            Ok(value) => {
                self.suspicion().on_success();
                Ok(value)
            }
            Err(error) => {
                let rule = self
                    .inner
                    .loss
                    .lock()
                    .expect("loss rule lock poisoned")
                    .clone();
                let reason = rule.judge(&error, has_session_id);
                let verdict = self.suspicion().on_failure(generation, reason);
                let failure = error.failure();
                tracing::warn!(
                    target: "mcp_connect::client",
                    operation,
                    http_status = failure.http_status,
                    jsonrpc_code = failure.jsonrpc_code,
                    kind = failure.kind.as_str(),
                    closure = failure.closure.map(|c| c.as_str()),
                    generation,
                    session_lost = matches!(verdict, SessionFate::Lost(_)),
                    loss_reason = reason.map(LossReason::as_str),
                    refused_again = matches!(verdict, SessionFate::RefusedAgain(_)),
                    "call failed"
                );
                match verdict {
                    SessionFate::Lost(_) => {
                        self.lost(generation);
                        Err(ClientError::Call {
                            operation,
                            generation,
                            session_lost: true,
                            error,
                        })
                    }
                    SessionFate::Kept => Err(ClientError::Call {
                        operation,
                        generation,
                        session_lost: false,
                        error,
                    }),
                    SessionFate::RefusedAgain(reason) => Err(ClientError::RefusedAgain {
                        operation,
                        generation,
                        reason,
                        error,
                    }),
                }
            }
        }
    }
}
