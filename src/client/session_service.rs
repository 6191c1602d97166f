//! One session's requests as a tower [`Service`], for an application that
//! holds a [`Session`] of its own (not an [`McpClient`](super::McpClient))
//! and wants tower middleware on it: a [`Call`] in, the raw result out,
//! through the session's own steps (`session::path`).
//!
//! The session's own `send` does not go through this: a tower `Service`
//! owns its future, so each call here costs one `Arc` clone and one boxed
//! future, which the session's own path does without (see `session::path`
//! for why its steps are not tower layers). A session never reconnects; a
//! long-lived client with policies that outlive a session is
//! [`McpClientBuilder::with_call_layer`](super::McpClientBuilder::with_call_layer).

use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tower::Service;

use super::Call;
use crate::error::Error;
use crate::session::Session;

/// A session as a tower [`Service`] of [`Call`]s.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcp_connect::client::{Call, SessionService};
/// use mcp_connect::protocol::{ListTools, McpRequest};
/// use tower::{ServiceBuilder, ServiceExt};
///
/// # async fn run(session: mcp_connect::Session) -> Result<(), mcp_connect::Error> {
/// // At most 4 requests in flight on this session.
/// let service = ServiceBuilder::new()
///     .concurrency_limit(4)
///     .service(SessionService::new(Arc::new(session)));
/// let tools = service.oneshot(Call::new(ListTools::first().encode())).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct SessionService {
    session: Arc<Session>,
}

impl SessionService {
    /// `session`'s requests as a service.
    pub fn new(session: Arc<Session>) -> Self {
        SessionService { session }
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

impl Service<Call> for SessionService {
    type Response = Box<RawValue>;
    type Error = Error;
    type Future = BoxFuture<'static, Result<Box<RawValue>, Error>>;

    /// Always ready: a closed session answers each call with its closure.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let session = Arc::clone(&self.session);
        Box::pin(async move {
            let (request, options) = call.into_parts();
            session.send_encoded(request, &options).await
        })
    }
}
