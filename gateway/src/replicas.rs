//! Replicas: two or more gateways behind one load balancer, a 2025
//! session served by whichever replica the balancer picks.
//!
//! A 2025 session is more than its id: its event streams, the questions
//! its members asked and wait on, its own upstream sessions (one
//! `initialize` per member and principal). None of that moves between
//! processes, so the session stays where it was opened (its *owner*), and
//! the owner's address is claimed in an [`OwnerStore`] (Redis between
//! processes) under the session's id. A replica that gets a request for a
//! session it does not hold asks the store, and hands the request, as it
//! came, to the owner, relaying the answer (a stream included) as it
//! comes. A 2026-07-28 request stands alone and is served where it lands.
//!
//! The trade-off, against sealing the session's state into its id: every
//! request that lands on another replica than the owner costs a store read
//! and one more hop, and a session ends with its owner (its client gets
//! 404 and starts a new one, as the specification has every client do);
//! in exchange nothing is lost between requests (a member's question, a
//! stream to resume), no upstream session is opened twice, and the id
//! stays 128 random bits that name nothing.
//!
//! The owner re-checks everything (Host, Origin, the bearer token), so a
//! request is handed on with the client's own headers; the address comes
//! from the store sealed with the fleet's key, so nobody who can only
//! write to Redis picks where a client's token goes. A handed-on request
//! is marked ([`HANDED_ON`]) and never handed on again.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, Request, Response, StatusCode, Uri};
use http_body_util::Full;
use mcp_connect::store::OwnerStore;
use mcp_connect::transport::HttpClient;
use tower_service::Service as _;

use crate::body::ReplyBody;
use crate::reply::Reply;

/// The header a replica puts on a request it hands on.
pub(crate) const HANDED_ON: HeaderName = HeaderName::from_static("mcp-connect-handed-on");

/// How long the owner may take to start its answer.
const HEAD_BOUND: Duration = Duration::from_secs(60);

/// Headers of one hop only, never handed on (RFC 9110, 7.6.1), and the
/// length, which the relayed body sets anew.
const HOP_BY_HOP: [HeaderName; 6] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
    header::UPGRADE,
    header::PROXY_AUTHORIZATION,
    header::CONTENT_LENGTH,
];

/// This replica's place among its peers.
#[derive(Clone)]
pub(crate) struct Replicas {
    owners: Arc<dyn OwnerStore>,
    /// This replica's address as the others reach it.
    me: String,
    client: HttpClient,
}

impl std::fmt::Debug for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replicas")
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

impl Replicas {
    pub(crate) fn new(owners: Arc<dyn OwnerStore>, me: &Uri, client: HttpClient) -> Self {
        Replicas {
            owners,
            me: me.to_string(),
            client,
        }
    }

    /// Says that this replica holds `session`, for `ttl`. A store that
    /// fails leaves the session served here only: a warning, never a
    /// refused session.
    pub(crate) async fn claim(&self, session: &str, ttl: Duration) {
        if self.owners.claim(session, &self.me, ttl).await.is_err() {
            tracing::warn!(
                target: "mcp_connect_gateway::replicas",
                "the owner store failed: a session is served by this replica only"
            );
        }
    }

    /// Forgets `sessions` (they ended here), in a task of its own.
    pub(crate) fn release(&self, sessions: Vec<String>) {
        if sessions.is_empty() {
            return;
        }
        let owners = Arc::clone(&self.owners);
        tokio::spawn(async move {
            for session in sessions {
                let _ = owners.release(&session).await;
            }
        });
    }

    /// Claims `sessions` again (they were used since the last claim), in a
    /// task of its own.
    pub(crate) fn reclaim(&self, sessions: Vec<String>, ttl: Duration) {
        if sessions.is_empty() {
            return;
        }
        let replicas = self.clone();
        tokio::spawn(async move {
            for session in sessions {
                replicas.claim(&session, ttl).await;
            }
        });
    }

    /// The other replica that holds `session`, when one does and `headers`
    /// are not of a request already handed on.
    pub(crate) async fn owner(&self, session: &str, headers: &HeaderMap) -> Option<Uri> {
        if headers.contains_key(HANDED_ON) {
            return None;
        }
        let owner = self.owners.owner(session).await.ok()??;
        if owner == self.me {
            // Claimed here by a process before this one: gone.
            let _ = self.owners.release(session).await;
            return None;
        }
        let uri: Uri = owner.parse().ok()?;
        matches!(uri.scheme_str(), Some("http" | "https")).then_some(uri)
    }

    /// Hands the request (`parts`, `body`) for `session` to `owner`, and
    /// relays its answer. An owner that cannot be reached has lost the
    /// session: 404, and its claim is dropped, as the session's end.
    pub(crate) async fn hand_on(
        &self,
        session: &str,
        owner: Uri,
        parts: http::request::Parts,
        body: Bytes,
    ) -> Option<Reply> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = parts.method;
        *request.uri_mut() = owner;
        let headers = request.headers_mut();
        for (name, value) in &parts.headers {
            if !HOP_BY_HOP.contains(name) {
                headers.append(name, value.clone());
            }
        }
        headers.insert(HANDED_ON, http::HeaderValue::from_static("1"));
        let mut client = self.client.clone();
        match tokio::time::timeout(HEAD_BOUND, client.call(request)).await {
            Ok(Ok(response)) => Some(relayed(response)),
            _ => {
                let _ = self.owners.release(session).await;
                None
            }
        }
    }
}

/// The owner's answer as this replica's: its status, its end-to-end
/// headers, its body as it comes.
fn relayed(response: Response<mcp_connect::transport::HttpBody>) -> Reply {
    let (parts, body) = response.into_parts();
    let mut reply = Response::new(ReplyBody::relayed(body));
    *reply.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(name) {
            reply.headers_mut().append(name, value.clone());
        }
    }
    if parts.status == StatusCode::SWITCHING_PROTOCOLS {
        *reply.status_mut() = StatusCode::BAD_GATEWAY;
    }
    reply
}
