//! One call on the current session, and what its failure means: the
//! session-loss rule decides whether the session is gone (then it is
//! dropped and disposed, and the next call builds a new one), the
//! suspicion bounds refusals that replace sessions, and the opt-in replay
//! sends a provably undelivered call once more on the new session.

use std::sync::Arc;

use std::sync::atomic::Ordering;

use super::{ClientError, McpClient, Reconnect};
use crate::client::replay::{undelivered, ReplayPolicy, Undelivered};
use crate::client::session_loss::{LossReason, SessionFate};
use crate::error::Error;
use crate::session::Session;

impl McpClient {
    /// Drops session `generation` if it is still the current one, and
    /// disposes of it.
    pub(super) fn lost(&self, generation: u64) {
        let dead = self.take_live(|live| live.generation == generation);
        if let Some(dead) = dead {
            // The error is the call's, not the disposal's.
            super::dispose(Arc::clone(&dead.session));
            if self.inner.reconnect == Reconnect::InBackground {
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
                self.inner.replay == ReplayPolicy::Undelivered
                    || *evidence == Undelivered::VersionRefused
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

    /// Keeps the flag a success reads in step with the suspicion (called
    /// under the lock, after each change).
    pub(super) fn note_suspicion(&self, suspicion: &crate::client::session_loss::Suspicion) {
        (self.inner.suspicious).store(!suspicion.is_clear(), Ordering::Relaxed);
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
                // The lock only when a success changes something.
                if self.inner.suspicious.load(Ordering::Relaxed) {
                    let mut shared = self.shared();
                    shared.suspicion.on_success();
                    self.note_suspicion(&shared.suspicion);
                }
                Ok(value)
            }
            Err(error) => {
                let reason = self.inner.loss.judge(&error, has_session_id);
                let verdict = {
                    let mut shared = self.shared();
                    let verdict = shared.suspicion.on_failure(generation, reason);
                    self.note_suspicion(&shared.suspicion);
                    verdict
                };
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
