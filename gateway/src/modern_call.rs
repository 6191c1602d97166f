//! A 2026-07-28 request's answer: a routed one through a round
//! (`crate::rounds`) when the gateway makes clients of its own, so that
//! the member may ask the client (and its log messages reach a request
//! that asked for them with its `logLevel`); anything else through the
//! group.

use mcp_connect::protocol::RequestKind;
use mcp_connect::session::RequestOptions;
use serde_json::Value;

use crate::answer::{answer, Answer};
use crate::governance::{Caller, Gate};
use crate::inner::Inner;
use crate::rounds::{own_meta_only, Logs};

impl Inner {
    /// A 2026-07-28 request's answer: a routed one through a round when
    /// the gateway makes clients of its own, anything else through the
    /// group.
    pub(crate) async fn modern_answer(
        &self,
        kind: RequestKind,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        logs: Option<Logs>,
        caller: Caller<'_>,
    ) -> Answer {
        let rounds = matches!(
            kind,
            RequestKind::CallTool | RequestKind::GetPrompt | RequestKind::ReadResource
        );
        if let (true, Some(make)) = (rounds, self.session_clients.as_ref()) {
            let mut params = params;
            // A retry answers a round already let through: never counted
            // twice.
            let retry = params
                .as_ref()
                .is_some_and(|p| p.get("requestState").is_some());
            let gate = match retry || self.governance.is_off() {
                true => None,
                false => {
                    let gate = self
                        .governance
                        .gate(&self.group, caller, kind, params.as_ref());
                    match Box::pin(gate).await {
                        Ok(gate) => Some(gate),
                        Err(answer) => return answer,
                    }
                }
            };
            if let Some(answer) = crate::discovery::answered(&self.group, kind, &mut params) {
                return finished(gate, answer);
            }
            let round = self
                .rounds
                .round(&self.group, make, kind, method, params, (options, logs));
            return finished(gate, round.await);
        }
        let upstream = self.upstream(None, caller);
        let mut params = params;
        if let Some(params) = params.as_mut() {
            own_meta_only(params);
        }
        answer(upstream, method, params, options).await
    }
}

fn finished(gate: Option<Gate<'_>>, answer: Answer) -> Answer {
    match gate {
        Some(gate) => gate.finish(answer),
        None => answer,
    }
}
