//! The body of the gateway's responses: a JSON message (or nothing) sent
//! at once, or a stream of server-sent events that carries what a request
//! causes before its answer (progress, log messages, the member's own
//! requests to the client) and ends with the answer.
//!
//! An open stream that has nothing to say sends a comment line every
//! keepalive period: proxies and load balancers that cut a connection
//! idle for 30 or 60 seconds then leave a long tool call alone.

use std::convert::Infallible;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};

/// What a keepalive sends: an SSE comment, which clients ignore.
const KEEPALIVE: &[u8] = b": keepalive\n\n";

/// The body of a response of the gateway.
pub struct ReplyBody {
    kind: Kind,
}

enum Kind {
    Whole(Option<Bytes>),
    Events {
        events: mpsc::Receiver<Bytes>,
        keepalive: Interval,
    },
    /// Another replica's answer, relayed as it comes; a body that breaks
    /// ends here.
    Relayed(mcp_connect::transport::HttpBody),
}

impl ReplyBody {
    /// `bytes`, sent at once (nothing when empty).
    pub(crate) fn whole(bytes: Bytes) -> Self {
        let bytes = (!bytes.is_empty()).then_some(bytes);
        ReplyBody {
            kind: Kind::Whole(bytes),
        }
    }

    /// The events `events` receives, each already framed (`data: ...`),
    /// until every sender is gone; a comment every `keepalive` between
    /// them.
    pub(crate) fn events(events: mpsc::Receiver<Bytes>, keepalive: Duration) -> Self {
        let period = keepalive.max(Duration::from_millis(10));
        let mut keepalive = tokio::time::interval_at(Instant::now() + period, period);
        keepalive.set_missed_tick_behavior(MissedTickBehavior::Delay);
        ReplyBody {
            kind: Kind::Events { events, keepalive },
        }
    }
}

impl ReplyBody {
    /// `body` (another replica's answer), as it comes.
    pub(crate) fn relayed(body: mcp_connect::transport::HttpBody) -> Self {
        ReplyBody {
            kind: Kind::Relayed(body),
        }
    }
}

/// One JSON-RPC message as a server-sent event.
pub(crate) fn event(message: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

impl Default for ReplyBody {
    /// An empty body.
    fn default() -> Self {
        ReplyBody::whole(Bytes::new())
    }
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Events { events, keepalive } => match events.poll_recv(cx) {
                Poll::Ready(Some(event)) => {
                    keepalive.reset();
                    Poll::Ready(Some(Ok(Frame::data(event))))
                }
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => match keepalive.poll_tick(cx) {
                    Poll::Ready(_) => {
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEPALIVE)))))
                    }
                    Poll::Pending => Poll::Pending,
                },
            },
            Kind::Relayed(body) => match Pin::new(body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
                Poll::Ready(Some(Err(_)) | None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Whole(bytes) => bytes.is_none(),
            Kind::Relayed(body) => body.is_end_stream(),
            Kind::Events { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Kind::Events { .. } => SizeHint::default(),
            Kind::Relayed(body) => body.size_hint(),
        }
    }
}

impl fmt::Debug for ReplyBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Whole(_) => "whole",
            Kind::Events { .. } => "events",
            Kind::Relayed(_) => "relayed",
        };
        f.debug_struct("ReplyBody").field("kind", &kind).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_says_keepalive_and_ends_with_its_senders() {
        let (sender, receiver) = mpsc::channel(4);
        let mut body = ReplyBody::events(receiver, Duration::from_secs(15));
        sender.send(event("{}")).await.unwrap();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"event: message\ndata: {}\n\n");
        // Nothing for 15 s: a comment.
        let started = Instant::now();
        let quiet = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&quiet[..], KEEPALIVE);
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        drop(sender);
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn a_whole_body_is_sent_once() {
        let body = ReplyBody::whole(Bytes::from_static(b"{}"));
        assert_eq!(body.size_hint().exact(), Some(2));
        assert_eq!(&body.collect().await.unwrap().to_bytes()[..], b"{}");
        assert!(ReplyBody::whole(Bytes::new()).is_end_stream());
    }
}
