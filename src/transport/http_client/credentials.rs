//! The seam an authorized client's credential sits at: what it adds to each
//! request and reads from each answer ([`Credentials`], the bearer token of
//! [`auth`](crate::auth)), and the one flow around a send that both the
//! default client (inline in [`HttpClient::send`](super::HttpClient), no
//! box of its own) and [`BearerLayer`](crate::auth::BearerLayer) on any
//! tower HTTP client run.

use std::future::Future;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::Full;

use crate::transport::error::BoxError;

/// What [`Credentials::present`] put on a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presented {
    /// Nothing: the request goes to another origin, or there is no token.
    Nothing,
    /// The token.
    Token,
    /// The token and a proof of possession (DPoP), which the server may
    /// refuse once to ask for its nonce.
    Proof,
}

/// A credential on an HTTP client.
pub(crate) trait Credentials: Send + Sync {
    /// Adds the credential to `request` when it goes to the credential's
    /// own origin (and to no other).
    fn present(&self, request: &mut Request<Full<Bytes>>) -> Result<Presented, BoxError>;

    /// Reads an answer to a request that carried what `presented` says (a
    /// nonce to keep); true when the server asks for the request once more
    /// with a fresh proof (a DPoP nonce it wants).
    fn answered(&self, status: StatusCode, headers: &HeaderMap, presented: Presented) -> bool;

    /// Reads the final answer (a 401 or 403's challenge, kept for the
    /// authorization stage).
    fn settled(&self, status: StatusCode, headers: &HeaderMap);
}

/// Sends `request` through `send` with `credentials`: presented, sent, and
/// sent once more with a fresh proof when the server asks for its nonce
/// (RFC 9449 §9), never in a loop.
pub(crate) async fn send_with<F, Fut, B>(
    credentials: &dyn Credentials,
    mut request: Request<Full<Bytes>>,
    mut send: F,
) -> Result<Response<B>, BoxError>
where
    F: FnMut(Request<Full<Bytes>>) -> Fut,
    Fut: Future<Output = Result<Response<B>, BoxError>>,
{
    let presented = credentials.present(&mut request)?;
    let again = (presented == Presented::Proof).then(|| copy(&request));
    let first = send(request).await?;
    let asks = credentials.answered(first.status(), first.headers(), presented);
    let response = match again {
        Some(mut again) if asks => {
            drop(first);
            let presented = credentials.present(&mut again)?;
            let second = send(again).await?;
            credentials.answered(second.status(), second.headers(), presented);
            second
        }
        _ => first,
    };
    credentials.settled(response.status(), response.headers());
    Ok(response)
}

/// A copy of `request` to send again (its body is in memory).
fn copy(request: &Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut copy = Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    copy
}
