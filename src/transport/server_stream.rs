//! A server-to-client SSE stream: the Streamable HTTP GET stream (and, later,
//! the legacy SSE stream), read on demand by the application.

use std::fmt;

use http_body_util::BodyExt;

use super::{HttpBody, SseParser};
use crate::error::TransportError;
use crate::protocol::Incoming;

/// Messages the server sends outside any reply: notifications, and requests
/// the application answers with [`Session::respond`](crate::Session::respond).
///
/// Pull-based: nothing is read (and no task runs) unless the application
/// calls [`next`](Self::next). Dropping it closes the stream.
pub struct ServerStream {
    body: HttpBody,
    parser: SseParser,
}

impl ServerStream {
    pub(crate) fn new(body: HttpBody, max_message: usize) -> Self {
        ServerStream {
            body,
            parser: SseParser::new(max_message),
        }
    }

    /// The next server message; `None` when the server ended the stream.
    pub async fn next(&mut self) -> Option<Result<Incoming, TransportError>> {
        loop {
            match self.parser.next_event() {
                Err(e) => return Some(Err(e.into())),
                Ok(Some(event)) => {
                    if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some(Incoming::parse(&event.data).map_err(TransportError::Malformed));
                }
                Ok(None) => {}
            }
            match self.body.frame().await {
                None => return None,
                Some(Err(e)) => return Some(Err(TransportError::Interrupted(e))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.parser.push(&data);
                    }
                }
            }
        }
    }
}

impl fmt::Debug for ServerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerStream").finish_non_exhaustive()
    }
}
