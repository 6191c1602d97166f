//! A client's call path as a tower [`Service`]: a [`Call`] (method, params,
//! the request's own options) in, the raw result out. The innermost
//! service, [`SessionCalls`], sends the call on the current session through
//! the session-loss rule and the replay policy; an application puts any
//! tower middleware around it for this server's calls alone
//! ([`McpClient::with_call_layer`]): a bulkhead, a breaker, a rate-limit
//! retry from [`crate::layers`], or tower's own. The client's typed
//! methods (every listing page, `tools/call`, `prompts/get`,
//! `resources/read`, `completion/complete`, `ping`, `request`) go through
//! it; subscriptions and tasks keep their own paths (a subscription is
//! state on the session, a task's creation is never sent twice).
//!
//! The layers are built once per client and shared by its clones and its
//! sessions: state a policy keeps (a breaker's count, a bulkhead's permits)
//! is the server's, whatever session is current.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::Value;
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt};

use super::{ClientError, Inner, McpClient, Reconnect};
use crate::protocol::methods;
use crate::replay::ReplayPolicy;
use crate::session::RequestOptions;
use crate::transport::error::BoxError;

/// One request through a client's call path.
///
/// ```
/// use mcp_connect::client::Call;
/// use serde_json::json;
///
/// let call = Call::new("tools/call", Some(json!({ "name": "add", "arguments": {} })));
/// assert!(!call.is_idempotent_read());
/// assert!(Call::new("tools/list", None).is_idempotent_read());
/// ```
#[derive(Clone)]
pub struct Call {
    operation: &'static str,
    method: Cow<'static, str>,
    params: Option<Value>,
    options: RequestOptions,
    /// The handle's choices, carried so the innermost service acts as the
    /// handle that made the call would.
    reconnect: Reconnect,
    replay: ReplayPolicy,
}

impl Call {
    /// A call of `method` with `params`, and the session's own limits.
    pub fn new(method: impl Into<Cow<'static, str>>, params: Option<Value>) -> Self {
        Call {
            operation: "request",
            method: method.into(),
            params,
            options: RequestOptions::default(),
            reconnect: Reconnect::OnNextCall,
            replay: ReplayPolicy::Never,
        }
    }

    /// This call with its own options (timeout, cancellation, progress,
    /// cache).
    #[must_use]
    pub fn with_options(mut self, options: RequestOptions) -> Self {
        self.options = options;
        self
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params.
    pub fn params(&self) -> Option<&Value> {
        self.params.as_ref()
    }

    /// The request's own options.
    pub fn options(&self) -> &RequestOptions {
        &self.options
    }

    /// The client operation that made it (`call_tool`, `list_tools`, ...),
    /// as logs and errors name it.
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// Whether sending it twice cannot change anything: a listing,
    /// `resources/read`, `prompts/get`, `completion/complete`,
    /// `server/discover` or `ping`. What a hedge or a replica failover may
    /// send again; a `tools/call` never is, whatever the server's
    /// annotations say.
    pub fn is_idempotent_read(&self) -> bool {
        matches!(
            &*self.method,
            methods::TOOLS_LIST
                | methods::PROMPTS_LIST
                | methods::RESOURCES_LIST
                | methods::RESOURCES_TEMPLATES_LIST
                | methods::RESOURCES_READ
                | methods::PROMPTS_GET
                | methods::COMPLETION_COMPLETE
                | methods::SERVER_DISCOVER
                | methods::PING
        )
    }

    /// The method, params and options, for a session to send.
    pub(super) fn into_request(self) -> (Cow<'static, str>, Option<Value>, RequestOptions) {
        (self.method, self.params, self.options)
    }

    /// The liveness check (`ping`, or the modern era's `server/discover`)
    /// made as this call is (its reconnect and replay choices).
    pub(super) fn liveness(&self) -> Call {
        Call {
            operation: methods::PING,
            method: Cow::Borrowed(methods::PING),
            params: None,
            options: RequestOptions::default(),
            reconnect: self.reconnect,
            replay: self.replay,
        }
    }

    /// This call as `client` would make it (its reconnect and replay
    /// choices).
    pub(super) fn made_by(mut self, client: &McpClient) -> Self {
        self.reconnect = client.reconnect;
        self.replay = client.replay;
        self
    }

    pub(super) fn of(
        client: &McpClient,
        operation: &'static str,
        method: &'static str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Self {
        Call {
            operation,
            method: Cow::Borrowed(method),
            params,
            options,
            reconnect: client.reconnect,
            replay: client.replay,
        }
    }
}

/// A server's default limit on its calls: `idle` without a word from the
/// server (each progress notification restarts it; a call asks for
/// progress whenever this applies), never more than `cap` in all. A call
/// with a limit of its own keeps it. On expiry the server is told
/// (`notifications/cancelled` on the legacy era).
///
/// ```no_run
/// use std::time::Duration;
/// # fn run(client: mcp_connect::McpClient) -> mcp_connect::McpClient {
/// client.with_call_layer(mcp_connect::client::idle_timeout(
///     Duration::from_secs(30),
///     Duration::from_secs(300),
/// ))
/// # }
/// ```
pub fn idle_timeout(
    idle: Duration,
    cap: Duration,
) -> tower::util::MapRequestLayer<impl Fn(Call) -> Call + Clone + Send + Sync + 'static> {
    tower::util::MapRequestLayer::new(move |call: Call| {
        if call.options.has_timeout() {
            return call;
        }
        let options = call
            .options
            .clone()
            .with_timeout(idle)
            .reset_timeout_on_progress(cap);
        call.with_options(options)
    })
}

/// A cap on the size of this server's results, beside the transport's
/// limit on a whole message: a result of more than `limit` bytes (its JSON
/// as received) fails the call with [`ClientError::ResultTooLarge`], so a
/// giant tool result never reaches a model's context.
pub fn result_cap(limit: usize) -> ResultCapLayer {
    ResultCapLayer { limit }
}

/// The layer [`result_cap`] makes.
#[derive(Debug, Clone, Copy)]
pub struct ResultCapLayer {
    limit: usize,
}

impl<S> Layer<S> for ResultCapLayer {
    type Service = ResultCap<S>;

    fn layer(&self, inner: S) -> ResultCap<S> {
        ResultCap {
            inner,
            limit: self.limit,
        }
    }
}

/// The service a [`ResultCapLayer`] makes.
#[derive(Debug, Clone)]
pub struct ResultCap<S> {
    inner: S,
    limit: usize,
}

impl<S> Service<Call> for ResultCap<S>
where
    S: Service<Call, Response = Box<RawValue>, Error = ClientError>,
    S::Future: Send + 'static,
{
    type Response = Box<RawValue>;
    type Error = ClientError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ClientError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let limit = self.limit;
        let answer = self.inner.call(call);
        Box::pin(async move {
            let raw = answer.await?;
            let size = raw.get().len();
            if size > limit {
                return Err(ClientError::ResultTooLarge { limit, size });
            }
            Ok(raw)
        })
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Params are the application's data: never shown.
        f.debug_struct("Call")
            .field("operation", &self.operation)
            .field("method", &self.method)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A client's call path, its layers boxed.
pub type CallService = BoxCloneSyncService<Call, Box<RawValue>, ClientError>;

/// The innermost service of a client's call path: the call on the current
/// session (built if there is none), through the session-loss rule and the
/// replay policy.
#[derive(Clone)]
pub struct SessionCalls {
    /// Weak: the client holds its call path, which must not keep it alive.
    client: Weak<Inner>,
}

impl fmt::Debug for SessionCalls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionCalls").finish_non_exhaustive()
    }
}

impl Service<Call> for SessionCalls {
    type Response = Box<RawValue>;
    type Error = ClientError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ClientError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let client = self.client.upgrade();
        Box::pin(async move {
            let Some(inner) = client else {
                return Err(ClientError::Gone);
            };
            let client = McpClient {
                inner,
                reconnect: call.reconnect,
                replay: call.replay,
            };
            client.send(&call).await
        })
    }
}

/// A call path layer's error as the client's: the `ClientError` it wraps,
/// or the layer's own.
pub(super) fn into_client_error(error: impl Into<BoxError>) -> ClientError {
    match error.into().downcast::<ClientError>() {
        Ok(error) => *error,
        Err(other) => ClientError::Layer(other.into()),
    }
}

impl McpClient {
    /// Puts `layer` around this client's call path (outside any layer put
    /// before): a policy for this server's calls alone. Built once; the
    /// client's clones and every later session share it.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use mcp_connect::McpClient;
    /// use tower::limit::GlobalConcurrencyLimitLayer;
    ///
    /// # fn run(client: McpClient) -> McpClient {
    /// // At most 4 calls in flight to this server, whatever the session.
    /// client.with_call_layer(GlobalConcurrencyLimitLayer::new(4))
    /// # }
    /// ```
    ///
    /// A layer whose errors are not [`ClientError`]s (tower's `Timeout` or
    /// `LoadShed`, whose error is a `BoxError`) is taken too: an error that
    /// is a `ClientError` underneath comes back as one, any other is
    /// [`ClientError::Layer`].
    #[must_use]
    pub fn with_call_layer<L>(self, layer: L) -> Self
    where
        L: Layer<CallService>,
        L::Service: Service<Call, Response = Box<RawValue>> + Clone + Send + Sync + 'static,
        <L::Service as Service<Call>>::Error: Into<BoxError>,
        <L::Service as Service<Call>>::Future: Send + 'static,
    {
        {
            let mut calls = self.calls();
            let inner = calls.take().unwrap_or_else(|| self.session_calls());
            let layered = layer.layer(inner).map_err(into_client_error);
            *calls = Some(CallService::new(layered));
        }
        self
    }

    /// The innermost service of this client's call path.
    pub fn session_calls(&self) -> CallService {
        CallService::new(SessionCalls {
            client: Arc::downgrade(&self.inner),
        })
    }

    /// Sends `call` through this client's call path, layers and all.
    pub async fn call(&self, call: Call) -> Result<Box<RawValue>, ClientError> {
        let layered = self.calls().clone();
        // With telemetry on, what a call that no session sends needs to be
        // counted: it has no span, but cost its caller the time.
        let unsent = self.inner.request.instruments().map(|telemetry| {
            let started = std::time::Instant::now();
            (telemetry, started, call.method.clone(), call.params.clone())
        });
        let outcome = match layered {
            Some(service) => service.oneshot(call).await,
            // No layer: straight to the session, nothing boxed.
            None => self.send(&call).await,
        };
        if let (Some((telemetry, started, method, params)), Err(error)) = (unsent, &outcome) {
            if error.before_any_session() {
                crate::telemetry::call::record_unsent(
                    telemetry,
                    self.inner.request.peer(),
                    &method,
                    params.as_ref(),
                    started.elapsed(),
                    error.failure().kind.as_str(),
                );
            }
        }
        outcome
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Option<CallService>> {
        // Held for one clone or one change, which cannot panic.
        self.inner.calls.lock().expect("call path lock poisoned")
    }

    /// The call on the current session: the innermost service's work.
    async fn send(&self, call: &Call) -> Result<Box<RawValue>, ClientError> {
        self.run(call.operation, |session| {
            let params = call.params.clone();
            // A `ping` is the liveness check of the session's era.
            let method = match &*call.method {
                methods::PING => session.era().liveness_method(),
                method => method,
            };
            async move { session.request_with(method, params, &call.options).await }
        })
        .await
    }
}
