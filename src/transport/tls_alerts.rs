//! A TLS refusal that comes after the handshake, kept typed.
//!
//! Under TLS 1.3 a server that requires a client certificate finishes the
//! handshake first and refuses afterwards: its `certificate_required`
//! alert arrives on the first read of the connection. rustls reports it
//! typed (`rustls::Error::AlertReceived`), but HTTP/2 keeps only an I/O
//! error's kind and text, and HTTP/1 may see only a closed connection, so
//! the request fails as "closed", which a fresh session would be retried
//! for, although no fresh session gets further.
//!
//! Often the alert never reaches rustls at all: the server closes at once,
//! with the client's request still unread, so its kernel sends a reset and
//! the client's kernel drops the alert with it.
//!
//! So the default client watches its TLS streams: [`WatchAlerts`] wraps the
//! HTTPS connector, learns during each handshake whether the server asked
//! for a client certificate (the certificate resolver, [`Noting`], is asked
//! exactly then) and notes, by the destination's authority, every rustls
//! error a stream meets, and any failure of a stream that was asked for a
//! certificate before it delivered a single byte
//! ([`ClientCertificateRefused`]); [`ExplainAlerts`] wraps the pooled client
//! and turns a request's failure that carries no TLS error into the
//! client's TLS error (`TlsError`) holding what its connection met while
//! the request was under way. Decided by types and timing, never a message.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::Full;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tower::Service;

use super::chain::{chain_find, chain_has};
use super::error::BoxError;

/// Failures noted, at most: the oldest go first.
const KEPT: usize = 64;

/// A server that asked for a client certificate during the handshake
/// ended the connection before it sent a byte: the TLS 1.3 refusal of the
/// certificate (none, or one it does not accept) whose alert was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server asked for a client certificate and closed the connection")]
pub struct ClientCertificateRefused {
    /// Whether this client presented one.
    pub presented: bool,
}

/// What a stream met.
#[derive(Debug, Clone)]
enum Met {
    Tls(rustls::Error),
    Refused(ClientCertificateRefused),
}

tokio::task_local! {
    /// During one handshake: whether the server asked for a certificate,
    /// and whether one was presented.
    static HANDSHAKE: std::cell::Cell<Option<bool>>;
}

/// The configured certificate resolver, telling the handshake it runs in
/// that the server asked (rustls asks the resolver exactly when the
/// server sends a `CertificateRequest`).
#[derive(Debug)]
pub(crate) struct Noting(pub(crate) Arc<dyn rustls::client::ResolvesClientCert>);

impl rustls::client::ResolvesClientCert for Noting {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        let resolved = self.0.resolve(root_hint_subjects, sigschemes);
        let presented = resolved.is_some();
        let _ = HANDSHAKE.try_with(|asked| asked.set(Some(presented)));
        resolved
    }

    fn only_raw_public_keys(&self) -> bool {
        self.0.only_raw_public_keys()
    }

    fn has_certs(&self) -> bool {
        self.0.has_certs()
    }
}

/// What the client's TLS streams met lately.
#[derive(Debug, Default)]
pub(crate) struct TlsAlerts {
    seen: Mutex<VecDeque<(Instant, Arc<str>, Met)>>,
}

impl TlsAlerts {
    fn note(
        &self,
        authority: &Arc<str>,
        error: &io::Error,
        refused: Option<ClientCertificateRefused>,
    ) {
        let met = match (chain_find::<rustls::Error>(error), refused) {
            (Some(tls), _) => Met::Tls(tls.clone()),
            (None, Some(refused)) => Met::Refused(refused),
            (None, None) => return,
        };
        // Held for one push, which cannot panic.
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() == KEPT {
            seen.pop_front();
        }
        seen.push_back((Instant::now(), Arc::clone(authority), met));
    }

    /// `error` as a TLS error (`as_tls` of what was met) when it carries
    /// none and a stream to `authority` met one since `since`.
    fn explain(
        &self,
        error: BoxError,
        authority: &str,
        since: Instant,
        as_tls: fn(BoxError) -> BoxError,
    ) -> BoxError {
        if chain_has::<rustls::Error>(error.as_ref())
            || chain_has::<ClientCertificateRefused>(error.as_ref())
        {
            return error;
        }
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let met = seen
            .iter()
            .rev()
            .take_while(|(at, _, _)| *at >= since)
            .find(|(_, to, _)| &**to == authority);
        match met {
            Some((_, _, Met::Tls(tls))) => as_tls(Box::new(tls.clone())),
            Some((_, _, Met::Refused(refused))) => as_tls(Box::new(*refused)),
            None => error,
        }
    }
}

/// The HTTPS connector, its streams watched.
#[derive(Clone)]
pub(crate) struct WatchAlerts<C> {
    inner: C,
    alerts: Arc<TlsAlerts>,
}

impl<C> WatchAlerts<C> {
    pub(crate) fn new(inner: C, alerts: Arc<TlsAlerts>) -> Self {
        WatchAlerts { inner, alerts }
    }
}

impl<C> Service<http::Uri> for WatchAlerts<C>
where
    C: Service<http::Uri>,
    C::Future: Send + 'static,
{
    type Response = Watched<C::Response>;
    type Error = C::Error;
    type Future = BoxFuture<'static, Result<Self::Response, C::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let authority: Arc<str> = uri.authority().map_or("", |a| a.as_str()).into();
        let alerts = Arc::clone(&self.alerts);
        let connecting = self.inner.call(uri);
        // Once per connection, not per request.
        Box::pin(HANDSHAKE.scope(std::cell::Cell::new(None), async move {
            let inner = connecting.await?;
            Ok(Watched {
                inner,
                authority,
                alerts,
                asked: HANDSHAKE.with(std::cell::Cell::get),
                delivered: false,
            })
        }))
    }
}

/// A stream whose rustls errors are noted.
#[derive(Debug)]
pub(crate) struct Watched<S> {
    inner: S,
    authority: Arc<str>,
    alerts: Arc<TlsAlerts>,
    /// Whether the server asked for a certificate (and one was presented).
    asked: Option<bool>,
    /// Whether the server sent a byte yet.
    delivered: bool,
}

impl<S> Watched<S> {
    fn noted<T>(&self, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(error)) = &poll {
            let refused = match (self.asked, self.delivered) {
                (Some(presented), false) => Some(ClientCertificateRefused { presented }),
                _ => None,
            };
            self.alerts.note(&self.authority, error, refused);
        }
        poll
    }
}

impl<S: Read + Unpin> Read for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        // A read that succeeded delivered bytes (or ended cleanly: a clean
        // end is left as it is, not taken for a refusal).
        if let Poll::Ready(Ok(())) = poll {
            self.delivered = true;
        }
        self.noted(poll)
    }
}

impl<S: Write + Unpin> Write for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.noted(poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.noted(poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.noted(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.noted(poll)
    }
}

impl<S: Connection> Connection for Watched<S> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}

/// The pooled client, its failures explained by what its streams met.
#[derive(Clone)]
pub(crate) struct ExplainAlerts<S> {
    inner: S,
    alerts: Arc<TlsAlerts>,
    /// The client's TLS error around what was met.
    as_tls: fn(BoxError) -> BoxError,
}

impl<S> ExplainAlerts<S> {
    pub(crate) fn new(inner: S, alerts: Arc<TlsAlerts>, as_tls: fn(BoxError) -> BoxError) -> Self {
        ExplainAlerts {
            inner,
            alerts,
            as_tls,
        }
    }
}

impl<S> Service<http::Request<Full<Bytes>>> for ExplainAlerts<S>
where
    S: Service<http::Request<Full<Bytes>>>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Explained<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<Full<Bytes>>) -> Self::Future {
        let authority = request
            .uri()
            .authority()
            .map_or_else(String::new, |a| a.as_str().to_owned());
        Explained {
            inner: self.inner.call(request),
            alerts: Arc::clone(&self.alerts),
            authority,
            since: Instant::now(),
            as_tls: self.as_tls,
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's future whose failure [`TlsAlerts::explain`] looks at.
    pub(crate) struct Explained<F> {
        #[pin]
        inner: F,
        alerts: Arc<TlsAlerts>,
        authority: String,
        since: Instant,
        as_tls: fn(BoxError) -> BoxError,
    }
}

impl<F, T, E> Future for Explained<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.inner.poll(cx) {
            Poll::Ready(Err(error)) => Poll::Ready(Err(this.alerts.explain(
                error.into(),
                this.authority,
                *this.since,
                *this.as_tls,
            ))),
            Poll::Ready(Ok(response)) => Poll::Ready(Ok(response)),
            Poll::Pending => Poll::Pending,
        }
    }
}
