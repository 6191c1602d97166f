//! A modern `tools/call`'s `Mcp-Param-*` headers, from the tools'
//! `x-mcp-header` declarations (read from the response cache's tool list
//! when the session has listed nothing yet). When the server refuses the
//! call with `HeaderMismatch` before running it, the tools are listed
//! again (never from the cache: their declarations may be new) and the
//! call sent once more; a listing that fails leaves the refusal as the
//! answer. Every other request passes untouched.

use mcp_connect_layers::Stage;

use super::{Answer, Verdict};
use crate::error::{Error, ErrorKind};
use crate::protocol::{codes, Era, Request, RequestKind};
use crate::response_cache::CacheMode;
use crate::session::{RequestOptions, Session};

/// One exchange's tool headers: whether it listed the tools again.
#[derive(Default)]
pub(super) struct ParamHeaders {
    relisted: bool,
}

impl ParamHeaders {
    /// Sets the call's headers (a modern `tools/call` only).
    pub(super) async fn prepare(
        &self,
        session: &Session,
        request: &mut Request,
    ) -> Result<(), Error> {
        if !carries_param_headers(session, request) {
            return Ok(());
        }
        session.seed_tool_headers().await;
        request.param_headers = headers_for(session, request)?;
        Ok(())
    }

    /// A `HeaderMismatch` is cured once by listing the tools.
    pub(super) async fn judge(
        &mut self,
        session: &Session,
        request: &mut Request,
        answer: &Answer,
    ) -> Result<Verdict, Error> {
        let mismatch = matches!(answer, Ok(Err(rpc)) if rpc.code() == codes::HEADER_MISMATCH);
        if !mismatch || self.relisted || !carries_param_headers(session, request) {
            return Ok(Verdict::Stands);
        }
        self.relisted = true;
        let fresh = RequestOptions::new().with_cache(CacheMode::Refresh);
        // A listing runs the whole path again: boxed, so the path's future
        // does not contain itself.
        if Box::pin(session.list_tools_with(&fresh)).await.is_err() {
            return Ok(Verdict::Stands);
        }
        request.param_headers = headers_for(session, request)?;
        Ok(Verdict::SendAgain)
    }
}

/// The headers of a call, or the typed refusal to call a tool whose
/// declarations are invalid.
fn headers_for(session: &Session, request: &Request) -> Result<Vec<(String, String)>, Error> {
    session
        .tool_headers
        .for_call(request.body())
        .map_err(|reason| Error::new(Stage::REQUEST, ErrorKind::InvalidTool(reason)))
}

/// Whether `request` carries `Mcp-Param-*` headers on this session: a
/// `tools/call` on the modern era. The one place that asks.
fn carries_param_headers(session: &Session, request: &Request) -> bool {
    request.body().kind() == RequestKind::CallTool && session.era() == Era::Modern
}
