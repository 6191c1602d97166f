//! How an application sets a client up, once: when it reconnects, what ends
//! its establishments, its cool-down, its session-loss rule, its replay
//! policy and the layers of its call path. What the builder makes is fixed:
//! a client's configuration never changes under its calls, and its clones
//! share all of it.

use mcp_connect_layers::jitter::jitter;
use mcp_connect_layers::recovery::Backoff;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tower::{Layer, Service};

use super::cool_down::{Flaps, COOL_DOWN};
use super::service::{pending, PendingLayer, SessionCalls};
use super::{
    Call, CallPolicies, CallService, ClientError, Generation, Inner, McpClient, Reconnect, Shared,
    State,
};
use crate::client::replay::ReplayPolicy;
use crate::client::session_loss::{LossSignal, SessionLossRule, Suspicion};
use crate::establish::Establish;
use crate::request::ConnectRequest;
use crate::transport::error::BoxError;

/// Sets up an [`McpClient`] ([`McpClient::builder`]).
pub struct McpClientBuilder {
    stack: Establish,
    request: ConnectRequest,
    reconnect: Reconnect,
    replay: ReplayPolicy,
    shutdown: Option<CancellationToken>,
    cool_down: Backoff,
    loss: SessionLossRule,
    /// The call path's layers, innermost first.
    layers: Vec<Step>,
}

/// One step of the call path, innermost first: a layer, or policies
/// (expanded at build, where a replica's client can be made).
enum Step {
    Layer(PendingLayer),
    Policies(CallPolicies),
}

impl std::fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("request", &self.request)
            .field("reconnect", &self.reconnect)
            .field("replay", &self.replay)
            .field("layers", &self.layers.len())
            .finish_non_exhaustive()
    }
}

impl McpClientBuilder {
    pub(super) fn new(stack: Establish, request: ConnectRequest) -> Self {
        McpClientBuilder {
            stack,
            request,
            reconnect: Reconnect::OnNextCall,
            replay: ReplayPolicy::Never,
            shutdown: None,
            cool_down: COOL_DOWN,
            loss: SessionLossRule::default(),
            layers: Vec::new(),
        }
    }

    /// When a call finds the session dead, rebuild it at once in the
    /// background or on the next call (the default).
    #[must_use]
    pub fn with_reconnect(mut self, reconnect: Reconnect) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// Ends every establishment of the client, the first and every
    /// reconnect, when `token` is cancelled (a service shutting down); the
    /// first establishment's own token, if its request had one, takes its
    /// place for that one.
    #[must_use]
    pub fn with_shutdown(mut self, token: CancellationToken) -> Self {
        self.shutdown = Some(token);
        self
    }

    /// The cool-down after failed reconnects (default: full jitter under a
    /// ceiling doubling from 100 ms to 30 s).
    #[must_use]
    pub fn with_cool_down(mut self, cool_down: Backoff) -> Self {
        self.cool_down = cool_down;
        self
    }

    /// Widens or narrows the session-loss rule (see
    /// [`crate::client::session_loss`]): `rule` is asked about every failed call,
    /// with the default verdict in [`LossSignal::default`], and answers
    /// whether the session is gone.
    ///
    /// A server known to answer an unknown session with 401 (an rmcp
    /// server was reported doing so) can have that counted, on sessions
    /// that carry an id:
    ///
    /// ```no_run
    /// # fn run(builder: mcp_connect::client::McpClientBuilder) -> mcp_connect::client::McpClientBuilder {
    /// builder.with_session_loss(|signal| {
    ///     signal.default.is_some()
    ///         || (signal.has_session_id && signal.error.http_status() == Some(401))
    /// })
    /// # }
    /// ```
    ///
    /// A refusal the rule adds this way is bounded like a 400 without id:
    /// when the replacing session's first request is refused the same way,
    /// the call fails with [`ClientError::RefusedAgain`] and the refusal no
    /// longer replaces sessions until a request succeeds.
    #[must_use]
    pub fn with_session_loss(
        mut self,
        rule: impl Fn(&LossSignal<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.loss = SessionLossRule::new(rule);
        self
    }

    /// Which failed calls are sent once more on the next session: none by
    /// default; [`ReplayPolicy::Undelivered`] sends those the server
    /// provably never received.
    #[must_use]
    pub fn with_replay(mut self, replay: ReplayPolicy) -> Self {
        self.replay = replay;
        self
    }

    /// Puts `layer` around the client's call path (outside any layer put
    /// before): a policy for this server's calls alone, built once and
    /// shared by the client's clones and every later session.
    ///
    /// ```no_run
    /// use mcp_connect::McpClient;
    /// use tower::limit::GlobalConcurrencyLimitLayer;
    ///
    /// # fn run(stack: mcp_connect::Establish, request: mcp_connect::ConnectRequest) -> McpClient {
    /// // At most 4 calls in flight to this server, whatever the session.
    /// McpClient::builder(stack, request)
    ///     .with_call_layer(GlobalConcurrencyLimitLayer::new(4))
    ///     .build()
    /// # }
    /// ```
    ///
    /// A layer whose errors are not [`ClientError`]s (tower's `Timeout` or
    /// `LoadShed`, whose error is a `BoxError`) is taken too: an error that
    /// is a `ClientError` underneath comes back as one, any other is
    /// [`ClientError::Layer`].
    #[must_use]
    pub fn with_call_layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<CallService> + Send + 'static,
        L::Service: Service<Call, Response = Box<serde_json::value::RawValue>>
            + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as Service<Call>>::Error: Into<BoxError>,
        <L::Service as Service<Call>>::Future: Send + 'static,
    {
        self.layers.push(Step::Layer(pending(layer)));
        self
    }

    /// `policies` on the call path, in their fixed order (see
    /// [`CallPolicies`]), outside any layer put before. Replicas are lazy
    /// clients of the same stack, ended by the same shutdown token.
    #[must_use]
    pub fn with_policies(mut self, policies: CallPolicies) -> Self {
        self.layers.push(Step::Policies(policies));
        self
    }

    /// The client, which connects on its first call.
    ///
    /// A deadline or cancellation token set on the request bounds the first
    /// establishment only: every later one (after the session died) gets
    /// the stack's own budget, so a start-up deadline that has passed never
    /// stops the client from reconnecting. A token that ends every
    /// establishment is [`with_shutdown`](Self::with_shutdown).
    pub fn build(self) -> McpClient {
        let sibling = |replica: &ConnectRequest| {
            let sibling = McpClientBuilder::new(self.stack.clone(), replica.clone());
            match &self.shutdown {
                Some(token) => sibling.with_shutdown(token.clone()).build(),
                None => sibling.build(),
            }
        };
        let mut layers = Vec::new();
        for step in self.layers {
            match step {
                Step::Layer(layer) => layers.push(layer),
                Step::Policies(policies) => layers.extend(policies.layers(sibling)),
            }
        }
        let (request, deadline, cancel) = self.request.split_per_connect();
        let first_connect = (deadline.is_some() || cancel.is_some()).then_some((deadline, cancel));
        let inner = std::sync::Arc::new_cyclic(|weak| {
            let calls = layers.into_iter().fold(None, |calls, layer| {
                let inner = calls.unwrap_or_else(|| {
                    CallService::new(SessionCalls {
                        client: weak.clone(),
                    })
                });
                Some(layer(inner))
            });
            Inner {
                stack: self.stack,
                request,
                reconnect: self.reconnect,
                replay: self.replay,
                shutdown: self.shutdown,
                cool_down: self.cool_down,
                loss: self.loss,
                calls,
                shared: std::sync::Mutex::new(Shared {
                    state: State::Empty,
                    jitter: jitter(),
                    subscriptions: Default::default(),
                    suspicion: Suspicion::default(),
                    flaps: Flaps::default(),
                    first_connect,
                    loss_cause: Default::default(),
                }),
                live: Default::default(),
                suspicious: Default::default(),
                building: tokio::sync::Mutex::new(()),
                generations: watch::channel(Generation::default()).0,
            }
        });
        McpClient { inner }
    }

    /// The client, connected now: fails if the first session cannot be
    /// established.
    pub async fn connect(self) -> Result<McpClient, ClientError> {
        let client = self.build();
        client.session().await?;
        Ok(client)
    }
}
