//! The typed surface of a session: [`Session::send`] for any
//! [`McpRequest`], and the conveniences applications expect
//! ([`list_tools`](Session::list_tools), [`call_tool`](Session::call_tool),
//! the subscriptions), each one line over it or over the session's own
//! state.
//!
//! A listing asked for every page ([`ListTools::all`] and its siblings)
//! follows `nextCursor` until the server stops sending one, bounded twice:
//! a cursor the server already sent ends it with
//! [`PaginationError::CursorRepeated`] (a loop), and more than
//! [`MAX_PAGES`] pages with [`PaginationError::TooManyPages`]. The same
//! loop serves every facade ([`more_pages`]).

use std::collections::HashSet;
use std::future::Future;

use mcp_connect_layers::Stage;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{Call, RequestOptions, Session};
use crate::error::{Error, ErrorKind, PaginationError};
use crate::protocol::{
    CallTool, CallToolResult, EncodedRequest, Era, ListTools, ListToolsResult, McpRequest,
    Subscribe, Tool, Unsubscribe,
};

/// The most pages one listing reads.
pub const MAX_PAGES: usize = 1000;

/// A result that does not have the shape its method promises.
pub(crate) fn shape(error: serde_json::Error) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::Result(error.into()))
}

/// The pages after the first of a listing asked for every page, from
/// `next` (the first page's cursor and the request for the page after it),
/// joined into `output`: `send` sends one encoded request, `local` makes
/// this function's own errors the caller's type. Each facade sends the
/// first page itself and boxes this future: a request of one answer (every
/// call) is not nested in a pagination loop, and only a listing of several
/// pages pays for the box.
pub(crate) async fn more_pages<R, E, F, Fut>(
    next: (String, R),
    output: &mut R::Output,
    mut send: F,
    local: impl Fn(Error) -> E,
) -> Result<(), E>
where
    R: McpRequest,
    F: FnMut(EncodedRequest) -> Fut,
    Fut: Future<Output = Result<Box<RawValue>, E>>,
{
    let (mut cursor, mut next) = next;
    let mut seen = HashSet::new();
    for _ in 1..MAX_PAGES {
        if !seen.insert(cursor) {
            return Err(local(Error::new(
                Stage::REQUEST,
                ErrorKind::Pagination(PaginationError::CursorRepeated),
            )));
        }
        let mut page = R::read(send(next.encode()).await?).map_err(|e| local(shape(e)))?;
        let following = next.next_page(&mut page);
        R::join(output, page);
        match following {
            None => return Ok(()),
            Some((after, request)) => (cursor, next) = (after, request),
        }
    }
    Err(local(Error::new(
        Stage::REQUEST,
        ErrorKind::Pagination(PaginationError::TooManyPages { limit: MAX_PAGES }),
    )))
}

impl Session {
    /// Sends a request and reads its result; a listing asked for every
    /// page ([`ListTools::all`]) is followed to its last page. A
    /// [`Call`] gives the request options of its own (a timeout, a
    /// cancellation token, progress, the response cache's use).
    ///
    /// ```no_run
    /// # async fn run(session: mcp_connect::Session) -> Result<(), mcp_connect::Error> {
    /// use std::time::Duration;
    /// use mcp_connect::protocol::{CallTool, ListPrompts, ReadResource};
    /// use mcp_connect::session::{Call, RequestOptions};
    /// use serde_json::json;
    ///
    /// let prompts = session.send(ListPrompts::all()).await?;
    /// let resource = session.send(ReadResource::new("file:///notes.txt")).await?;
    /// let arguments = json!({ "a": 1, "b": 2 });
    /// let quick = RequestOptions::new().with_timeout(Duration::from_secs(5));
    /// let sum = session
    ///     .send(Call::new(CallTool::new("add", &arguments)).with_options(quick))
    ///     .await?;
    /// # drop((prompts, resource, sum)); Ok(()) }
    /// ```
    ///
    /// Fails with [`CancelSource::RequestTimeout`](mcp_connect_layers::CancelSource::RequestTimeout)
    /// when its limit expires and with [`ErrorKind::Cancelled`] when its
    /// token is cancelled; in both cases, and when the future is dropped,
    /// the server is told on the legacy era with `notifications/cancelled`.
    pub async fn send<R: McpRequest>(&self, call: impl Into<Call<R>>) -> Result<R::Output, Error> {
        let call = call.into();
        let (request, options) = (call.request(), call.options());
        let raw = self.send_encoded(request.encode(), options).await?;
        let mut output = R::read(raw).map_err(shape)?;
        if let Some(next) = request.next_page(&mut output) {
            let send = |request| self.send_encoded(request, options);
            Box::pin(more_pages(next, &mut output, send, |error| error)).await?;
        }
        Ok(output)
    }

    /// `tools/list`, every page.
    ///
    /// On the 2026-07-28 era a tool whose `x-mcp-header` declarations are
    /// invalid is left out (it is in [`ListToolsResult::excluded`], and
    /// calling it fails with [`ErrorKind::InvalidTool`]); the valid ones'
    /// declarations are remembered so that calls send their `Mcp-Param-*`
    /// headers.
    ///
    /// With a [response cache](crate::response_cache) on a modern session,
    /// fresh pages come from it.
    pub async fn list_tools(&self) -> Result<ListToolsResult, Error> {
        self.list_tools_with(&RequestOptions::default()).await
    }

    /// [`list_tools`](Self::list_tools) with its own options, for every
    /// page (for example to refresh the response cache).
    pub(crate) async fn list_tools_with(
        &self,
        options: &RequestOptions,
    ) -> Result<ListToolsResult, Error> {
        let call = Call::new(ListTools::all()).with_options(options.clone());
        let page = self.send(call).await?;
        Ok(self.tools_listed(page.items, None, true))
    }

    /// The tools of a listing as this session keeps them: on the modern
    /// era their header declarations recorded and the invalid ones left
    /// out.
    pub(crate) fn tools_listed(
        &self,
        tools: Vec<Tool>,
        next_cursor: Option<String>,
        complete: bool,
    ) -> ListToolsResult {
        let (tools, excluded) = match self.era() {
            Era::Modern => self.tool_headers.record(tools, complete),
            Era::Legacy => (tools, Vec::new()),
        };
        ListToolsResult {
            tools,
            next_cursor,
            extra: Default::default(),
            excluded,
        }
    }

    /// `tools/call` ([`send`](Self::send) with a [`CallTool`]).
    pub async fn call_tool(&self, name: &str, arguments: &Value) -> Result<CallToolResult, Error> {
        self.send(CallTool::new(name, arguments)).await
    }

    /// Subscribes to a resource: the server then sends
    /// `notifications/resources/updated` for `uri` to the listener.
    ///
    /// `resources/subscribe` on the legacy era; on the 2026-07-28 era the
    /// session's `subscriptions/listen` again with `uri` added, failing
    /// with [`SubscriptionError::NotAcknowledged`](crate::error::SubscriptionError)
    /// when the server does not take it.
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        match self.era() {
            Era::Modern => self.subscribe_modern(uri).await,
            Era::Legacy => self.send(Subscribe::new(uri)).await,
        }
    }

    /// Unsubscribes from a resource (`resources/unsubscribe`, or the
    /// modern era's subscription again without it).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        match self.era() {
            Era::Modern => self.unsubscribe_modern(uri).await,
            Era::Legacy => self.send(Unsubscribe::new(uri)).await,
        }
    }
}
