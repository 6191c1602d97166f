//! Reading what a POST got back: a JSON body, or an SSE stream of the
//! server's requests, notifications and, at last, the reply; and answering
//! the server's requests on it.

use super::*;

impl StreamableHttp {
    /// Reads a JSON reply body (one message or a batch) for `id`.
    pub(super) async fn reply_from_json(
        &self,
        headers: &HeaderMap,
        body: HttpBody,
        id: &RequestId,
        version: Option<&ProtocolVersion>,
    ) -> Result<Reply, TransportError> {
        let bytes = collect(body, self.max_message).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(TransportError::NoReply);
        }
        let messages = Incoming::parse_many(&bytes).map_err(|e| {
            if is_json(headers) {
                TransportError::Malformed(e)
            } else {
                TransportError::ContentType
            }
        })?;
        let mut reply = None;
        for message in messages {
            if let Some(found) = self.handle(message, id, version).await? {
                reply.get_or_insert(found);
            }
        }
        reply.ok_or(TransportError::NoReply)
    }

    /// POSTs `subscriptions/listen` and hands back its reply stream, which
    /// the caller reads for as long as the subscription lives.
    pub(super) async fn post_listen(
        &self,
        request: &Request,
        version: Option<&ProtocolVersion>,
    ) -> Result<Listen, TransportError> {
        let (response, sent_session) = self
            .post(request.to_bytes(), Rpc::listen(request), version, &[])
            .await?;
        let (parts, body) = response.into_parts();
        if !parts.status.is_success() {
            return self
                .failed_status(parts.status, &parts.headers, body, sent_session)
                .await
                .map(Listen::Reply);
        }
        if is_event_stream(&parts.headers) {
            return Ok(Listen::Stream(Box::new(ServerStream::new(
                body,
                self.max_message,
            ))));
        }
        self.reply_from_json(&parts.headers, body, &request.id, version)
            .await
            .map(Listen::Reply)
    }

    /// Reads an SSE reply stream until the event that answers `id`,
    /// resuming it (see [`resume`](super::resume)) when it is cut first.
    pub(super) async fn reply_from_stream(
        &self,
        mut body: HttpBody,
        id: &RequestId,
        version: Option<&ProtocolVersion>,
    ) -> Result<Reply, TransportError> {
        let mut parser = SseParser::new(self.max_message);
        let mut resumption = Resumption::default();
        loop {
            while let Some(event) = parser.next_event()? {
                if !resumption.deliver(event.id.as_deref()) {
                    continue;
                }
                // Priming events carry an id and no data; other event types are not MCP.
                if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let Ok(messages) = Incoming::parse_many(&event.data) else {
                    self.skipped.skip("an event that is not a JSON-RPC message");
                    continue;
                };
                let mut reply = None;
                for message in messages {
                    if let Some(found) = self.handle(message, id, version).await? {
                        reply.get_or_insert(found);
                    }
                }
                if let Some(reply) = reply {
                    finish_if_ended(&mut body);
                    return Ok(reply);
                }
            }
            let cut = match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        parser.push(&data);
                    }
                    continue;
                }
                None => Cut::ended(),
                Some(Err(e)) => Cut::broken(e),
            };
            resumption.absorb(&parser);
            body = self.resume(&mut resumption, cut).await?;
            parser = SseParser::new(self.max_message);
        }
    }

    /// Handles one message from a reply; `Some` when it is the reply to `id`.
    pub(super) async fn handle(
        &self,
        message: Incoming,
        id: &RequestId,
        version: Option<&ProtocolVersion>,
    ) -> Result<Option<Reply>, TransportError> {
        match message {
            Incoming::Response { id: got, result } if got == *id => Ok(Some(Ok(result))),
            Incoming::Error { id: got, error } if got.as_ref().is_none_or(|got| got == id) => {
                Ok(Some(Err(error)))
            }
            Incoming::Response { .. } | Incoming::Error { .. } => {
                self.skipped
                    .skip("a reply to an id no request is waiting for");
                Ok(None)
            }
            // Answered in line: this stream carries only this request's
            // traffic, and its reply may well wait for the answer.
            Incoming::Request { id, method, params } => {
                let response = self.inbound.answer(&id, &method, params).await;
                self.respond(response, version).await?;
                Ok(None)
            }
            Incoming::Notification { method, params } => {
                self.inbound.notify(method, params);
                Ok(None)
            }
        }
    }

    /// POSTs a response to a server-initiated request.
    pub(super) async fn post_response(
        &self,
        body: Vec<u8>,
        version: Option<&ProtocolVersion>,
    ) -> Result<(), TransportError> {
        let session = self.session_id.get();
        let request = self.build(Method::POST, Bytes::from(body), None, version, session);
        let response = self.send(request).await?;
        if !response.status().is_success() {
            tracing::debug!(
                status = response.status().as_u16(),
                "answer to a server request refused"
            );
        }
        Ok(())
    }
}
