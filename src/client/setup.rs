//! How an application sets a client up: when it reconnects, what ends its
//! establishments, its cool-down, its session-loss rule and its replay
//! policy. The handle's own choices (reconnect, replay) apply to it and to
//! clones made from it afterwards; the rest belongs to the client and its
//! clones share it.

use mcp_connect_layers::recovery::Backoff;
use tokio_util::sync::CancellationToken;

use super::{McpClient, Reconnect};
use crate::replay::ReplayPolicy;
use crate::session_loss::{LossSignal, SessionLossRule};

impl McpClient {
    /// When a call through this handle finds the session dead, rebuild it
    /// at once in the background or on the next call. Applies to this handle
    /// and to clones made from it afterwards; clones made before keep
    /// their own choice.
    #[must_use]
    pub fn with_reconnect(mut self, reconnect: Reconnect) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// Ends every establishment of this client, the first and every
    /// reconnect, when `token` is cancelled (a service shutting down); the
    /// first establishment's own token, if its request had one, takes its
    /// place for that one. It belongs to the client: its clones share it.
    #[must_use]
    pub fn with_shutdown(self, token: CancellationToken) -> Self {
        *self.inner.shutdown.lock().expect("shutdown lock poisoned") = Some(token);
        self
    }

    /// The cool-down after failed reconnects (default: full jitter under a
    /// ceiling doubling from 100 ms to 30 s). It belongs to the client:
    /// its clones share it.
    #[must_use]
    pub fn with_cool_down(self, cool_down: Backoff) -> Self {
        self.cool_down().0 = cool_down;
        self
    }

    /// Widens or narrows the session-loss rule (see
    /// [`crate::session_loss`]): `rule` is asked about every failed call,
    /// with the default verdict in [`LossSignal::default`], and answers
    /// whether the session is gone. It belongs to the client: its clones
    /// share it.
    ///
    /// A server known to answer an unknown session with 401 (an rmcp
    /// server was reported doing so) can have that counted, on sessions
    /// that carry an id:
    ///
    /// ```no_run
    /// # fn run(client: mcp_connect::McpClient) -> mcp_connect::McpClient {
    /// client.with_session_loss(|signal| {
    ///     signal.default.is_some()
    ///         || (signal.has_session_id && signal.error.http_status() == Some(401))
    /// })
    /// # }
    /// ```
    ///
    /// A refusal the rule adds this way is bounded like a 400 without id:
    /// when the replacing session's first request is refused the same way,
    /// the call fails with [`ClientError::RefusedAgain`](super::ClientError::RefusedAgain) and the refusal no
    /// longer replaces sessions until a request succeeds.
    #[must_use]
    pub fn with_session_loss(
        self,
        rule: impl Fn(&LossSignal<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        *self.inner.loss.lock().expect("loss rule lock poisoned") = SessionLossRule::new(rule);
        self
    }

    /// Which failed calls through this handle are sent once more on the
    /// next session: none by default; [`ReplayPolicy::Undelivered`] sends
    /// those the server provably never received. Applies like
    /// [`with_reconnect`](Self::with_reconnect).
    #[must_use]
    pub fn with_replay(mut self, replay: ReplayPolicy) -> Self {
        self.replay = replay;
        self
    }

    /// A lazy client of another request on this client's establishment
    /// stack, ended by this client's shutdown token (set before): a
    /// replica's.
    pub(crate) fn sibling(&self, request: crate::ConnectRequest) -> McpClient {
        let sibling = McpClient::lazy(self.inner.stack.clone(), request);
        let shutdown = self.inner.shutdown.lock().expect("shutdown lock poisoned");
        match shutdown.as_ref() {
            Some(token) => sibling.with_shutdown(token.clone()),
            None => sibling,
        }
    }
}
