//! A server-to-client SSE stream: the Streamable HTTP GET stream (and, later,
//! the legacy SSE stream), read on demand by the application.

use std::fmt;
use std::time::Duration;

use http_body_util::BodyExt;

use super::error::TransportError;
use super::resume::Resumption;
use super::{HttpBody, SseParser};
use crate::protocol::Incoming;

/// Messages the server sends outside any reply: notifications, and requests
/// the application answers with [`Session::respond`](crate::Session::respond).
///
/// Pull-based: nothing is read (and no task runs) unless the application
/// calls [`next`](Self::next). Dropping it closes the stream. A stream the
/// server cut can be continued from [`last_event_id`](Self::last_event_id)
/// with [`Session::resume_server_stream`](crate::Session::resume_server_stream);
/// events the server sends again are not delivered twice.
pub struct ServerStream {
    body: HttpBody,
    parser: SseParser,
    max_message: usize,
    resumption: Resumption,
}

impl ServerStream {
    pub(crate) fn new(body: HttpBody, max_message: usize) -> Self {
        ServerStream {
            body,
            parser: SseParser::new(max_message),
            max_message,
            resumption: Resumption::default(),
        }
    }

    /// The next server message; `None` when the server ended the stream.
    pub async fn next(&mut self) -> Option<Result<Incoming, TransportError>> {
        loop {
            match self.parser.next_event() {
                Err(e) => return Some(Err(e.into())),
                Ok(Some(event)) => {
                    if !self.resumption.deliver(event.id.as_deref())
                        || !event.is_message()
                        || event.data.iter().all(u8::is_ascii_whitespace)
                    {
                        continue;
                    }
                    return Some(Incoming::parse(&event.data).map_err(TransportError::Malformed));
                }
                Ok(None) => {}
            }
            match self.body.frame().await {
                None => {
                    self.resumption.absorb(&self.parser);
                    return None;
                }
                Some(Err(e)) => {
                    self.resumption.absorb(&self.parser);
                    return Some(Err(TransportError::Interrupted(e)));
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.parser.push(&data);
                    }
                }
            }
        }
    }

    /// The id of the last event the server sent with one, to resume from.
    pub fn last_event_id(&self) -> Option<&str> {
        self.parser
            .last_event_id()
            .or(self.resumption.last_event_id())
    }

    /// How long the server asked a client to wait before reconnecting
    /// (`retry:`, capped), or the jittered default.
    pub fn retry_delay(&self) -> Duration {
        self.resumption.absorb_retry(&self.parser)
    }

    pub(crate) fn resumption(&mut self) -> &mut Resumption {
        &mut self.resumption
    }

    /// Continues on `body`, the same stream reopened: what this one learnt
    /// (its last event id, its delay, the events already delivered) goes on.
    pub(crate) fn continue_on(&mut self, body: HttpBody) {
        self.body = body;
        self.parser = SseParser::new(self.max_message);
    }
}

impl fmt::Debug for ServerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerStream").finish_non_exhaustive()
    }
}
