//! A member's questions to a 2026-07-28 client: `input_required` rounds
//! (SEP-2322). A 2026-07-28 request stands alone, so a member's question
//! (sampling, elicitation, roots) cannot be sent to the client as a
//! request of its own: the gateway answers the client's request with an
//! `input_required` result carrying the question and a `requestState`,
//! and the client sends the request again with its `inputResponses`.
//!
//! Meanwhile the member's call goes on: each routed 2026-07-28 request
//! runs on a member client that no other request uses meanwhile (made
//! like a 2025 session's, through
//! [`GatewayBuilder::session_clients`](crate::GatewayBuilder::session_clients),
//! and kept for later rounds: [`RoundClients`]), whose handler hands the
//! member's question to the request's [`Round`] and waits for the answer
//! the retry brings. The round is kept under
//! its `requestState` (128 random bits) for [`ROUND_IDLE`] at most, and
//! [`MAX_ROUNDS`] rounds wait at once; one that expires cancels the
//! member's call.
//!
//! The client's capabilities are its request's: the member is offered
//! sampling and elicitation whatever the client declared, and a question
//! of one the client did not declare ends the request with
//! `MissingRequiredClientCapability` (-32021) naming it; roots are offered
//! only when declared (members ask for them at start, not for a call).
//!
//! A round lives in one process: a retry that reaches another replica
//! finds no round (-32602), and the client starts the request anew.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use mcp_connect::inbound::{
    notification_channel, ClientHandler, Notifications, RequestKind as Question, ServerNotification,
};
use mcp_connect::protocol::{
    codes, methods, NotificationKind, ProtocolVersion, RawRequest, RequestKind, RpcError,
};
use mcp_connect::session::{Call, RequestOptions};
use mcp_connect::McpClient;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use mcp_connect::group::ServerGroup;

use crate::answer::{client_failure, route, Answer};
use crate::body::event;
use crate::downstream::level_rank;
use crate::relay::SessionRelay;
use crate::reply::RpcFailure;
use crate::SessionClients;

/// How long a round waits for the client's retry.
pub(crate) const ROUND_IDLE: Duration = Duration::from_secs(60);

/// How many rounds wait for a retry at once; one more request asking for
/// input is refused.
pub(crate) const MAX_ROUNDS: usize = 1024;

/// What the member's side of a round says.
enum Said {
    /// A question for the client, and where its answer goes.
    Asked(
        &'static str,
        Value,
        oneshot::Sender<Result<Value, RpcError>>,
    ),
    /// A question of a capability the client did not declare.
    Missing(&'static str),
}

/// One routed request's member call and the questions it asks.
pub(crate) struct Round {
    said: tokio::sync::Mutex<(mpsc::Receiver<Said>, Option<oneshot::Receiver<Answer>>)>,
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, RpcError>>>>,
    next: std::sync::atomic::AtomicU64,
    cancel: CancellationToken,
    until: Mutex<Instant>,
}

impl Drop for Round {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The rounds that wait for a retry, by `requestState`, and the member
/// clients kept between rounds.
#[derive(Default)]
pub(crate) struct Rounds {
    waiting: Mutex<HashMap<String, Arc<Round>>>,
    clients: Arc<RoundClients>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds").finish_non_exhaustive()
    }
}

impl Rounds {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Round>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `round` under a new state; `None` when too many wait.
    fn keep(&self, round: Arc<Round>) -> Option<String> {
        let state = crate::sessions::new_id()?;
        let now = Instant::now();
        let mut table = self.table();
        table.retain(|_, r| *r.until.lock().unwrap_or_else(PoisonError::into_inner) > now);
        if table.len() >= MAX_ROUNDS {
            return None;
        }
        table.insert(state.clone(), round);
        Some(state)
    }

    fn take(&self, state: &str) -> Option<Arc<Round>> {
        let round = self.table().remove(state)?;
        let live = *round.until.lock().unwrap_or_else(PoisonError::into_inner) > Instant::now();
        live.then_some(round)
    }
}

/// What a kept client's handler goes through while a round uses it.
struct Link {
    /// The round's channel.
    said: mpsc::Sender<Said>,
    /// The client's declared capabilities.
    capabilities: Value,
}

/// A stream a request's log messages go out on, and the least level.
pub(crate) type Logs = (mpsc::Sender<Bytes>, u8);

type Slot = Arc<Mutex<Option<Link>>>;

/// Sends `notification` on the request's stream when it is a log message
/// at or above the request's level.
fn forward_log(logs: Option<&Logs>, notification: ServerNotification) {
    let Some((stream, floor)) = logs else { return };
    if notification.kind() != NotificationKind::Message {
        return;
    }
    let level = (notification.params.as_ref())
        .and_then(|p| p.get("level"))
        .and_then(Value::as_str)
        .and_then(level_rank);
    if level.is_some_and(|level| level >= *floor) {
        let message = json!({ "jsonrpc": "2.0", "method": notification.method,
            "params": notification.params });
        let _ = stream.try_send(event(&message.to_string()));
    }
}

/// The handler of a round's member client: sampling and elicitation
/// always offered, roots when `roots`; each question goes to the round
/// that holds the client now (`slot`), or is refused between rounds.
fn handler(roots: bool, url: bool, slot: Slot) -> ClientHandler {
    let mut handler = ClientHandler::new();
    let kinds = [
        (
            Question::Sampling,
            "sampling",
            methods::SAMPLING_CREATE_MESSAGE,
        ),
        (
            Question::Elicitation,
            "elicitation",
            methods::ELICITATION_CREATE,
        ),
        (Question::Roots, "roots", methods::ROOTS_LIST),
    ];
    for (kind, capability, method) in kinds {
        if kind == Question::Roots && !roots {
            continue;
        }
        let slot = Arc::clone(&slot);
        handler = handler.on_raw(kind, move |params| {
            let link = (slot.lock().unwrap_or_else(PoisonError::into_inner))
                .as_ref()
                .map(|link| (link.said.clone(), link.capabilities.clone()));
            async move {
                let gone = || RpcError::new(codes::INTERNAL_ERROR, "the client is gone", None);
                let (said, capabilities) = link.ok_or_else(gone)?;
                if capabilities.get(capability).is_none() {
                    let _ = said.send(Said::Missing(capability)).await;
                    let data = json!({ "requiredCapabilities": { capability: {} } });
                    let message = "the client did not declare this capability";
                    return Err(RpcError::new(
                        codes::MISSING_REQUIRED_CAPABILITY,
                        message,
                        Some(data),
                    ));
                }
                let (reply, answer) = oneshot::channel();
                said.send(Said::Asked(method, params, reply))
                    .await
                    .map_err(|_| gone())?;
                answer.await.unwrap_or_else(|_| Err(gone()))
            }
        });
    }
    if url {
        handler = handler.with_url_elicitation();
    }
    handler
}

/// A round's request: its kind, method, params (without the round's
/// fields), options and where its log messages go.
type RoundCall<'a> = (
    RequestKind,
    &'a str,
    Map<String, Value>,
    RequestOptions,
    Option<Logs>,
);

/// How many of a member's notifications wait for its round to read them.
const QUEUE: usize = 64;

/// How many idle member clients are kept per member and kind.
const POOLED: usize = 8;

/// How long an idle member client is kept.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// Which kept clients fit a round: the member, and whether roots and URL
/// elicitation are offered.
type PoolKey = (Arc<str>, bool, bool);

/// Member clients between rounds, so that a round does not open a
/// member session (or start a process) of its own: a 2025 member's
/// session, a stdio member's process, serve round after round.
#[derive(Default)]
pub(crate) struct RoundClients(Mutex<Pool>);

/// Kept clients by key: each with its slot and since when it is idle.
type Pool = HashMap<PoolKey, Vec<(Kept, Instant)>>;

/// A member client between rounds: the client, its handler's slot and the
/// notifications it hears (a round reads them while it runs).
type Kept = (McpClient, Slot, Notifications);

impl RoundClients {
    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A kept client for `key` (those idle too long closed on the way).
    fn take(&self, key: &PoolKey) -> Option<Kept> {
        let now = Instant::now();
        let mut pool = self.pool();
        let mut stale = Vec::new();
        for kept in pool.values_mut() {
            kept.retain(|((client, ..), since)| {
                let fresh = now.duration_since(*since) < POOL_IDLE;
                if !fresh {
                    stale.push(client.clone());
                }
                fresh
            });
        }
        pool.retain(|_, kept| !kept.is_empty());
        let taken = pool.get_mut(key).and_then(Vec::pop);
        drop(pool);
        for client in stale {
            tokio::spawn(async move { client.close().await });
        }
        taken.map(|(kept, _)| kept)
    }

    /// Keeps `client` for the next round, or closes it when enough are kept.
    fn give_back(&self, key: PoolKey, client: Kept) {
        let mut pool = self.pool();
        let kept = pool.entry(key).or_default();
        if kept.len() < POOLED {
            kept.push((client, Instant::now()));
        } else {
            drop(pool);
            tokio::spawn(async move { client.0.close().await });
        }
    }
}

impl Rounds {
    /// A routed 2026-07-28 request (`kind`, `method`, `params`) through a
    /// round: a first request starts the member's call on a client of its
    /// own; a retry (its `requestState`) brings the answers to the
    /// round's questions. Either way, the member's final answer, its next
    /// question as an `input_required` result, or -32021.
    pub(crate) async fn round(
        &self,
        group: &ServerGroup,
        make: &SessionClients,
        kind: RequestKind,
        method: &str,
        params: Option<Value>,
        (options, logs): (RequestOptions, Option<Logs>),
    ) -> Answer {
        let mut params = match params {
            Some(Value::Object(params)) => params,
            _ => Map::new(),
        };
        let state = params.remove("requestState");
        let responses = params.remove("inputResponses");
        let round = match state {
            Some(state) => {
                let round = (state.as_str()).and_then(|state| self.take(state));
                let Some(round) = round else {
                    let message = "requestState names no round waiting here";
                    return Err(RpcFailure::new(codes::INVALID_PARAMS, message));
                };
                round.answered(responses);
                round
            }
            None => {
                let clients = Arc::clone(&self.clients);
                let call = (kind, method, params, options, logs);
                Round::start(group, make, clients, call)?
            }
        };
        round.step(self).await
    }
}

impl Round {
    /// Starts the member's call on a client of its own.
    fn start(
        group: &ServerGroup,
        make: &SessionClients,
        clients: Arc<RoundClients>,
        (kind, method, params, options, logs): RoundCall<'_>,
    ) -> Result<Arc<Round>, RpcFailure> {
        let unusable = || RpcFailure::new(codes::INTERNAL_ERROR, "the server is not usable now");
        let capabilities = (params.get("_meta"))
            .and_then(|m| m.get(mcp_connect::protocol::meta_keys::CLIENT_CAPABILITIES))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut params = Value::Object(params);
        own_meta_only(&mut params);
        let server = route(&group.catalogue(), kind, &mut params)?;
        if !(group.health(&server)).is_some_and(|h| h.state.is_usable()) {
            return Err(unusable());
        }
        let (said, heard) = mpsc::channel(4);
        let roots = capabilities.get("roots").is_some();
        let url = capabilities.pointer("/elicitation/url").is_some();
        let key = (Arc::clone(&server), roots, url);
        let (client, slot, mut notes) = match clients.take(&key) {
            Some(kept) => kept,
            None => {
                let slot = Slot::default();
                let (notifications, notes) = notification_channel(QUEUE);
                let handler = handler(roots, url, Arc::clone(&slot));
                let relay =
                    SessionRelay::new(handler, notifications, ProtocolVersion::LATEST_MODERN);
                (make(&server, relay).ok_or_else(unusable)?, slot, notes)
            }
        };
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(Link { said, capabilities });
        let cancel = CancellationToken::new();
        let (done, outcome) = oneshot::channel();
        let options = options.with_cancellation(cancel.clone());
        let request = RawRequest::new(method.to_owned(), Some(params));
        tokio::spawn(async move {
            // The member's log messages go out as they come, those said
            // before its answer all before it.
            let answer = {
                let mut call =
                    std::pin::pin!(client.send(Call::new(request).with_options(options)));
                loop {
                    tokio::select! {
                        biased;
                        answer = &mut call => break answer,
                        Some(notification) = notes.recv() => forward_log(logs.as_ref(), notification),
                    }
                }
            };
            while let Some(notification) = notes.try_recv() {
                forward_log(logs.as_ref(), notification);
            }
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
            drop(logs);
            let _ = done.send(answer.map_err(|error| client_failure(&error)));
            clients.give_back(key, (client, slot, notes));
        });
        Ok(Arc::new(Round {
            said: tokio::sync::Mutex::new((heard, Some(outcome))),
            pending: Mutex::default(),
            next: std::sync::atomic::AtomicU64::new(1),
            cancel,
            until: Mutex::new(Instant::now() + ROUND_IDLE),
        }))
    }

    /// What comes next of `round`: its final answer, or its next question
    /// (the round kept for the retry), or -32021.
    async fn step(self: Arc<Self>, rounds: &Rounds) -> Answer {
        let round = self;
        let said = {
            let mut guard = round.said.lock().await;
            let (heard, outcome) = &mut *guard;
            let Some(final_answer) = outcome.as_mut() else {
                return Err(RpcFailure::new(codes::INTERNAL_ERROR, "the round ended"));
            };
            tokio::select! {
                // A question said before the call ended is the answer's
                // cause (the -32021 of an undeclared capability).
                // (Once the member's client is gone nobody says more.)
                biased;
                Some(said) = heard.recv() => said,
                answer = final_answer => {
                    *outcome = None;
                    return answer.unwrap_or_else(|_| {
                        Err(RpcFailure::new(codes::INTERNAL_ERROR, "the server's call ended"))
                    });
                }
            }
        };
        match said {
            Said::Asked(method, params, reply) => {
                let key = format!(
                    "q{}",
                    round
                        .next
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                );
                (round.pending.lock().unwrap_or_else(PoisonError::into_inner))
                    .insert(key.clone(), reply);
                *round.until.lock().unwrap_or_else(PoisonError::into_inner) =
                    Instant::now() + ROUND_IDLE;
                let Some(state) = rounds.keep(Arc::clone(&round)) else {
                    let message = "too many requests wait for input";
                    return Err(RpcFailure::new(codes::INTERNAL_ERROR, message));
                };
                let result = json!({
                    "resultType": "input_required",
                    "inputRequests": { key: { "method": method, "params": params } },
                    "requestState": state,
                });
                serde_json::value::to_raw_value(&result)
                    .map_err(|_| RpcFailure::new(codes::INTERNAL_ERROR, "unwritable"))
            }
            Said::Missing(capability) => {
                round.cancel.cancel();
                let data = json!({ "requiredCapabilities": { capability: {} } });
                Err(RpcFailure::new(
                    codes::MISSING_REQUIRED_CAPABILITY,
                    "the server needs a capability the client did not declare",
                )
                .with_data(data))
            }
        }
    }
}

/// Takes the client's protocol fields (`io.modelcontextprotocol/...`: its
/// version, capabilities, identity, log level) out of `params._meta`: the
/// member's client is the gateway's, which says its own.
pub(crate) fn own_meta_only(params: &mut Value) {
    if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.retain(|key, _| !key.starts_with("io.modelcontextprotocol/"));
    }
}

impl Round {
    /// Hands each answer of a retry's `inputResponses` to the question it
    /// answers.
    fn answered(&self, responses: Option<Value>) {
        let Some(Value::Object(responses)) = responses else {
            return;
        };
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        for (key, response) in responses {
            if let Some(reply) = pending.remove(&key) {
                let _ = reply.send(Ok(response));
            }
        }
    }
}
