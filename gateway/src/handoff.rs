//! A request for a 2025 session another replica holds, handed to that
//! replica (`crate::replicas` says how and why).

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt as _;
use mcp_connect::protocol::codes;

use crate::inner::Inner;
use crate::reply::{self, Reply, RpcFailure};

impl Inner {
    /// A request for a session another replica holds, handed to it; the
    /// request back when it is not one (no replicas, no session, or a
    /// session held here or nowhere).
    pub(crate) async fn held_elsewhere<B>(
        &self,
        parts: http::request::Parts,
        body: B,
    ) -> Result<Reply, (http::request::Parts, B)>
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (Some(replicas), Some(session)) = (
            self.sessions.replicas(),
            crate::checks::session_id(&parts.headers),
        ) else {
            return Err((parts, body));
        };
        if self.sessions.holds(session) {
            return Err((parts, body));
        }
        let Some(owner) = replicas.owner(session, &parts.headers).await else {
            return Err((parts, body));
        };
        let session = session.to_owned();
        let Ok(collected) = http_body_util::Limited::new(body, self.max_body)
            .collect()
            .await
        else {
            let failure = RpcFailure::new(codes::INVALID_REQUEST, "the body is too large");
            return Ok(reply::error(StatusCode::PAYLOAD_TOO_LARGE, None, &failure));
        };
        let handed = replicas.hand_on(&session, owner, parts, collected.to_bytes());
        Ok(handed
            .await
            .unwrap_or_else(|| reply::session_not_found(None)))
    }
}
