//! Continuing a cut stream (2025-11-25, SEP-1699): a reply stream that ended
//! or broke after the server gave an event id is picked up with `GET` and
//! `Last-Event-ID`, never by sending the request again; and the standalone
//! GET stream of the 2025 era.

use super::*;

/// What a resumption `GET` got.
pub(super) enum Resumed {
    /// The stream, again.
    Stream(HttpBody),
    /// A status that says the server will not resume it.
    Refused(u16),
}

/// How a stream ended before its reply.
pub(super) struct Cut {
    /// `Eof` when the stream ended, `Reset` when it broke.
    pub(super) closure: Closure,
    /// The break, when it broke and the error is at hand.
    pub(super) source: Option<BoxError>,
}

impl Cut {
    pub(super) fn ended() -> Self {
        Cut {
            closure: Closure::Eof,
            source: None,
        }
    }

    pub(super) fn broken(source: BoxError) -> Self {
        Cut {
            closure: Closure::Reset,
            source: Some(source),
        }
    }
}

pub(super) const LAST_EVENT_ID: http::header::HeaderName =
    http::header::HeaderName::from_static("last-event-id");

impl StreamableHttp {
    /// Reopens a cut stream from its last event id, waiting the server's
    /// `retry:` delay before each attempt, within the bounds of
    /// [`resume`](super::resume).
    pub(super) async fn resume(
        &self,
        resumption: &mut Resumption,
        cut: Cut,
    ) -> Result<HttpBody, TransportError> {
        let closure = cut.closure;
        // An id that cannot be a header value is no id to resume from.
        let Some(mut last_event_id) = resumption
            .last_event_id()
            .and_then(|id| HeaderValue::from_bytes(id.as_bytes()).ok())
        else {
            return Err(TransportError::NotResumed {
                cut: closure,
                reason: ResumeError::NoEventId(cut.source),
            });
        };
        last_event_id.set_sensitive(true);
        let mut last_failure = None;
        loop {
            let Some(attempt) = resumption.next_attempt() else {
                return Err(TransportError::NotResumed {
                    cut: closure,
                    reason: ResumeError::Exhausted {
                        attempts: resumption.attempts() - 1,
                        last: last_failure.map(Box::new),
                    },
                });
            };
            let delay = resumption.delay();
            tokio::time::sleep(delay).await;
            match self.get_from(&last_event_id).await {
                Ok(Resumed::Stream(body)) => {
                    tracing::debug!(
                        target: "mcp_connect::resume",
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        status = 200u16,
                        "stream resumed"
                    );
                    return Ok(body);
                }
                Ok(Resumed::Refused(status)) => {
                    tracing::debug!(
                        target: "mcp_connect::resume",
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        status,
                        "stream resumption refused"
                    );
                    return Err(TransportError::NotResumed {
                        cut: closure,
                        reason: ResumeError::Refused { status },
                    });
                }
                Err(
                    error @ (TransportError::SessionExpired { .. } | TransportError::Closed(_)),
                ) => return Err(error),
                Err(error) => {
                    tracing::debug!(
                        target: "mcp_connect::resume",
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        status = error.failure(mcp_connect_layers::Stage::REQUEST).http_status,
                        "stream resumption failed"
                    );
                    last_failure = Some(error);
                }
            }
        }
    }

    /// `GET` with `Last-Event-ID`: the stream again from after that event.
    pub(super) async fn get_from(
        &self,
        last_event_id: &HeaderValue,
    ) -> Result<Resumed, TransportError> {
        self.check_open()?;
        let mut request = self.build(
            Method::GET,
            Bytes::new(),
            None,
            self.last_version.get(),
            self.session_id.get(),
        );
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.remove(CONTENT_TYPE);
        headers.insert(LAST_EVENT_ID, last_event_id.clone());
        let response = self.send(request).await?;
        let (parts, body) = response.into_parts();
        match parts.status {
            status if status.is_success() && is_event_stream(&parts.headers) => {
                Ok(Resumed::Stream(body))
            }
            status if status.is_success() => Err(TransportError::ContentType),
            StatusCode::NOT_FOUND if self.session_id.get().is_some() => {
                // The session is gone: terminal, as on any request.
                // The request was delivered before its stream was cut:
                // this 404 refuses the resumption, not the request.
                let jsonrpc_code = match self
                    .failed_status(StatusCode::NOT_FOUND, &parts.headers, body, true)
                    .await
                {
                    Err(TransportError::SessionExpired { jsonrpc_code, .. }) => jsonrpc_code,
                    _ => None,
                };
                Err(TransportError::SessionExpired {
                    jsonrpc_code,
                    request_refused: false,
                })
            }
            status @ (StatusCode::METHOD_NOT_ALLOWED
            | StatusCode::BAD_REQUEST
            | StatusCode::NOT_FOUND) => Ok(Resumed::Refused(status.as_u16())),
            status => Err(TransportError::Status {
                status: status.as_u16(),
                retry_after: retry_after(&parts.headers),
            }),
        }
    }

    /// GETs the standalone server stream. 405 (and 400, which some servers
    /// send instead) mean the server offers none; the modern era has none, so
    /// nothing is sent there.
    pub(super) async fn get_stream(&self) -> Result<Option<ServerStream>, TransportError> {
        self.check_open()?;
        let version = self.last_version.get();
        if version.is_some_and(|v| v.era() == Era::Modern) {
            return Ok(None);
        }
        let mut request = self.build(
            Method::GET,
            Bytes::new(),
            None,
            version,
            self.session_id.get(),
        );
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        request.headers_mut().remove(CONTENT_TYPE);
        let response = self.send(request).await?;
        let (parts, body) = response.into_parts();
        match parts.status {
            StatusCode::METHOD_NOT_ALLOWED | StatusCode::BAD_REQUEST => Ok(None),
            status if status.is_success() && is_event_stream(&parts.headers) => {
                Ok(Some(ServerStream::new(body, self.max_message)))
            }
            status if status.is_success() => Err(TransportError::ContentType),
            status => match self
                .failed_status(
                    status,
                    &parts.headers,
                    body,
                    self.session_id.get().is_some(),
                )
                .await
            {
                Err(e) => Err(e),
                Ok(_) => Err(TransportError::Status {
                    status: status.as_u16(),
                    retry_after: None,
                }),
            },
        }
    }
}
