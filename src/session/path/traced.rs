//! The telemetry step: one span per request, carried to the server in
//! `_meta`, ended with the outcome, and its duration recorded (feature
//! `otel`; without it the session has no telemetry and this is nothing).

use serde_json::value::RawValue;

use super::Context;
use crate::error::Error;
use crate::protocol::Request;
use crate::session::Session;
use crate::telemetry::call::CallSpan;

pub(super) struct Traced(Option<CallSpan>);

impl Traced {
    /// Starts the request's span and carries its context in `_meta`.
    pub(super) fn start(session: &Session, cx: &Context<'_>, request: &mut Request) -> Self {
        let span = (session.telemetry.as_ref())
            .map(|telemetry| CallSpan::start(telemetry, request.body(), cx.on_wire()));
        if let Some(span) = &span {
            span.carry(request);
        }
        Traced(span)
    }

    /// Ends the span with the request's outcome.
    pub(super) fn finish(self, outcome: &Result<Box<RawValue>, Error>) {
        if let Some(span) = self.0 {
            span.finish(outcome.as_deref().map_err(Error::failure));
        }
    }
}
