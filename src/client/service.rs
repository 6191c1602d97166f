//! A client's call path as a tower [`Service`]: a [`Call`] (an encoded
//! request and its own options) in, the raw result out. The innermost
//! service sends the call on the current session through the session-loss
//! rule and the replay policy (never twice for a call that offers a task);
//! an application puts any tower middleware around it for this server's
//! calls alone ([`McpClientBuilder::with_call_layer`](super::McpClientBuilder::with_call_layer)):
//! a bulkhead, a breaker, a rate-limit retry from [`crate::layers`], or
//! tower's own. Every request of the client's `send` goes through it, each
//! page of a listing on its own; subscriptions and the wait for a task keep
//! their own paths (a subscription is state on the session, a wait is many
//! polls).
//!
//! The layers are built once per client and shared by its clones and its
//! sessions: state a policy keeps (a breaker's count, a bulkhead's permits)
//! is the server's, whatever session is current.

use std::fmt;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt};

use super::{Call, ClientError, Inner, McpClient};
use crate::session::Session;
use crate::transport::error::BoxError;

/// A server's default limit on its calls: `idle` without a word from the
/// server (each progress notification restarts it; a call asks for
/// progress whenever this applies), never more than `cap` in all. A call
/// with a limit of its own keeps it. On expiry the server is told
/// (`notifications/cancelled` on the legacy era).
///
/// ```no_run
/// use std::time::Duration;
/// # fn run(builder: mcp_connect::client::McpClientBuilder) -> mcp_connect::client::McpClientBuilder {
/// builder.with_call_layer(mcp_connect::client::idle_timeout(
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
        if call.options().has_timeout() {
            return call;
        }
        let options = call
            .options()
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

/// A layer of the call path, kept until the path is built.
pub(super) type PendingLayer = Box<dyn FnOnce(CallService) -> CallService + Send>;

/// `layer` as a pending one.
pub(super) fn pending<L>(layer: L) -> PendingLayer
where
    L: Layer<CallService> + Send + 'static,
    L::Service:
        Service<Call, Response = Box<serde_json::value::RawValue>> + Clone + Send + Sync + 'static,
    <L::Service as Service<Call>>::Error: Into<BoxError>,
    <L::Service as Service<Call>>::Future: Send + 'static,
{
    Box::new(move |inner: CallService| {
        CallService::new(layer.layer(inner).map_err(into_client_error))
    })
}

/// A client's call path, its layers boxed.
pub type CallService = BoxCloneSyncService<Call, Box<RawValue>, ClientError>;

/// The innermost service of a client's call path: the call on the current
/// session (built if there is none), through the session-loss rule and the
/// replay policy.
#[derive(Clone)]
pub(super) struct SessionCalls {
    /// Weak: the client holds its call path, which must not keep it alive.
    pub(super) client: Weak<Inner>,
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
            McpClient { inner }.on_session(&call).await
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
    /// The innermost service of this client's call path (a replica's, for
    /// [`ReplicasLayer`](super::ReplicasLayer)).
    pub(super) fn session_calls(&self) -> CallService {
        CallService::new(SessionCalls {
            client: Arc::downgrade(&self.inner),
        })
    }

    /// Sends `call` through this client's call path, layers and all.
    pub(super) async fn call(&self, call: Call) -> Result<Box<RawValue>, ClientError> {
        // With telemetry on, what a call that no session sends needs to be
        // counted: it has no span, but cost its caller the time.
        let unsent = self.inner.request.instruments().map(|telemetry| {
            let started = std::time::Instant::now();
            (telemetry, started, call.request().clone())
        });
        let outcome = match &self.inner.calls {
            Some(service) => service.clone().oneshot(call).await,
            // No layer: straight to the session, nothing boxed.
            None => self.on_session(&call).await,
        };
        if let (Some((telemetry, started, request)), Err(error)) = (unsent, &outcome) {
            if error.before_any_session() {
                crate::telemetry::call::record_unsent(
                    telemetry,
                    self.inner.request.peer(),
                    &request,
                    started.elapsed(),
                    error.failure().kind.as_str(),
                );
            }
        }
        outcome
    }

    /// The call on the current session: the innermost service's work. A
    /// call that offers a task is never sent twice.
    async fn on_session(&self, call: &Call) -> Result<Box<RawValue>, ClientError> {
        let request = call.request();
        let operation = request.kind().operation();
        let send = |session: Arc<Session>| {
            let request = request.clone();
            async move { session.send_encoded(request, call.options()).await }
        };
        if request.offers_task() {
            self.run_once(operation, send).await
        } else {
            self.run(operation, send).await
        }
    }
}

/// A client is a tower [`Service`] of [`Call`]s: its call path, layers
/// and all, for an application that composes its own middleware around it.
impl Service<Call> for McpClient {
    type Response = Box<RawValue>;
    type Error = ClientError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ClientError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let client = self.clone();
        Box::pin(async move { client.call(call).await })
    }
}
