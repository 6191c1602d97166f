//! What one downstream 2025 session has of its own: its upstream clients
//! (one per member it used, made on first use, closed with it), its open
//! streams, the requests it has in flight (to cancel them), the questions
//! a member asked it that wait for its answer, and its log level.
//!
//! A 2025-11-25 request stream starts with a priming event whose id is
//! the stream's number: a client whose connection breaks comes back with
//! a GET carrying it as `Last-Event-ID`, and the rest of the request's
//! events go to that GET instead. An answer that finds nobody reading is
//! kept for that GET (at most [`PARKED`] a session, the oldest dropped),
//! until the session ends.
//!
//! A member's own requests (sampling, elicitation, roots) and its log
//! messages go to the stream of the newest request the session has in
//! flight, or when it has none to its newest GET stream: the session's
//! client is the one that caused them, and with one call at a time (what
//! clients do) the request too. Two concurrent calls of one session to
//! one member cannot be told apart here: the library's handler is given
//! the question, not the call that led to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use mcp_connect::protocol::{Incoming, NotificationKind, ProtocolVersion, RequestId, RpcError};
use mcp_connect::McpClient;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// A stream's place in the session: the order streams were opened in.
pub(crate) type StreamNo = u64;

/// How many answers a session keeps for a client that lost its stream.
pub(crate) const PARKED: usize = 16;

/// How many routed requests one session may have running at once.
pub(crate) const IN_FLIGHT: usize = 256;

/// How many of a member's questions may wait for one session's client.
pub(crate) const QUESTIONS: usize = 64;

/// What a question to the client is answered with.
pub(crate) type Answered = Result<Value, RpcError>;

#[derive(Debug, Default)]
struct State {
    clients: HashMap<Arc<str>, McpClient>,
    /// Open request streams, oldest first, each with its request's id.
    requests: Vec<(StreamNo, String, mpsc::Sender<Bytes>, CancellationToken)>,
    /// Open GET streams, oldest first.
    listening: Vec<(StreamNo, mpsc::Sender<Bytes>)>,
    /// Answers whose stream's reader went away, by stream, oldest first.
    parked: Vec<(StreamNo, Bytes)>,
    /// Questions sent to the client, by the id the gateway gave them.
    questions: HashMap<u64, oneshot::Sender<Answered>>,
    /// The lowest level of log message the client asked for.
    level: Option<u8>,
    /// The bearer token of the session's latest request (a resource
    /// server's gateway), for a member client that exchanges it.
    token: CallerToken,
    closed: bool,
}

/// A caller's bearer token, held in memory for token exchange; `Debug`
/// says whether there is one, never what.
#[derive(Default)]
struct CallerToken(Option<String>);

impl std::fmt::Debug for CallerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CallerToken({})",
            if self.0.is_some() { "set" } else { "none" }
        )
    }
}

/// One downstream session's own state (see the module's docs).
#[derive(Debug)]
pub(crate) struct Downstream {
    /// The capabilities the client declared in `initialize`.
    pub(crate) capabilities: Value,
    /// The version the session was opened under.
    pub(crate) version: ProtocolVersion,
    /// Who opened it: only the same principal may use it.
    pub(crate) principal: Option<crate::Principal>,
    state: Mutex<State>,
    next: AtomicU64,
}

/// The syslog levels of MCP logging, least severe first.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A level's rank (`None` for a name MCP does not have).
pub(crate) fn level_rank(level: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

impl Downstream {
    pub(crate) fn new(capabilities: Value, version: ProtocolVersion) -> Self {
        Downstream {
            capabilities,
            version,
            principal: None,
            state: Mutex::new(State::default()),
            next: AtomicU64::new(1),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing under the lock panics half-way: a poisoned one is taken.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the client declared `capability` (`sampling`, ...).
    pub(crate) fn declared(&self, capability: &str) -> bool {
        self.capabilities.get(capability).is_some()
    }

    /// The session's client of `member`, made by `make` on first use;
    /// `None` once the session is closed or when `make` has none.
    pub(crate) fn client(
        &self,
        member: &Arc<str>,
        make: impl FnOnce() -> Option<McpClient>,
    ) -> Option<McpClient> {
        if let Some(client) = self.state().clients.get(member) {
            return Some(client.clone());
        }
        // Made outside the lock (building a client spawns nothing, but the
        // application's function is its own); a race keeps the first.
        let made = make()?;
        let mut state = self.state();
        if state.closed {
            return None;
        }
        Some(
            state
                .clients
                .entry(Arc::clone(member))
                .or_insert(made)
                .clone(),
        )
    }

    /// How many upstream clients the session holds.
    pub(crate) fn clients(&self) -> usize {
        self.state().clients.len()
    }

    /// A request's stream opens: it is where what the request causes goes
    /// until it closes. Its cancellation is `token`.
    /// `None` when [`IN_FLIGHT`] requests of the session run already.
    pub(crate) fn open_request(
        &self,
        id: String,
        sender: mpsc::Sender<Bytes>,
        token: CancellationToken,
    ) -> Option<StreamNo> {
        let no = self.next.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state();
        if state.requests.len() >= IN_FLIGHT {
            return None;
        }
        state.requests.push((no, id, sender, token));
        Some(no)
    }

    /// A GET stream opens (those whose reader went away are let go).
    pub(crate) fn open_listening(&self, sender: mpsc::Sender<Bytes>) -> StreamNo {
        let no = self.next.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state();
        state.listening.retain(|(_, s)| !s.is_closed());
        state.listening.push((no, sender));
        no
    }

    /// Sends `event` (a notification unrelated to any request) on the
    /// newest GET stream whose reader is still there; whether one took it.
    pub(crate) fn notify(&self, event: Bytes) -> bool {
        let state = self.state();
        let open = state.listening.iter().rev().map(|(_, s)| s);
        for sender in open {
            if !sender.is_closed() {
                return sender.try_send(event).is_ok();
            }
        }
        false
    }

    /// A GET with `Last-Event-ID`: the stream `no` continues on `sender`.
    /// Whether there was such a stream (still running, or with its answer
    /// kept, which is sent at once).
    pub(crate) fn resume(&self, no: StreamNo, sender: mpsc::Sender<Bytes>) -> bool {
        let mut state = self.state();
        if let Some(at) = state.parked.iter().position(|(n, _)| *n == no) {
            let (_, answer) = state.parked.remove(at);
            // A fresh channel has room: this cannot fail but for a reader
            // already gone.
            let _ = sender.try_send(answer);
            return true;
        }
        match state.requests.iter_mut().find(|(n, ..)| *n == no) {
            Some(request) => {
                request.2 = sender;
                true
            }
            None => false,
        }
    }

    /// Sends a request's answer on its stream as it is now (the POST's,
    /// or the GET that resumed it), or keeps it when nobody reads; the
    /// stream is then done.
    pub(crate) async fn finish(&self, no: StreamNo, answer: Bytes) {
        let sender = (self.state().requests.iter())
            .find(|(n, ..)| *n == no)
            .map(|(_, _, sender, _)| sender.clone());
        let undelivered = match sender {
            Some(sender) => sender.send(answer).await.err().map(|e| e.0),
            None => Some(answer),
        };
        let mut state = self.state();
        state.requests.retain(|(n, ..)| *n != no);
        if let Some(answer) = undelivered {
            if !state.closed {
                if state.parked.len() >= PARKED {
                    state.parked.remove(0);
                }
                state.parked.push((no, answer));
            }
        }
    }

    /// A message from the client that is not a request, over either
    /// transport: a `notifications/cancelled` cancels the request it
    /// names, an answer goes to the member that asked; anything else is
    /// let go.
    pub(crate) fn take(&self, message: Incoming) {
        let number = |id: &RequestId| serde_json::to_value(id).ok().and_then(|v| v.as_u64());
        match message {
            Incoming::Notification { method, params }
                if NotificationKind::of(&method) == NotificationKind::Cancelled =>
            {
                if let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) {
                    self.cancel(&id.to_string());
                }
            }
            Incoming::Response { id, result } => {
                let result = serde_json::from_str(result.get()).unwrap_or(Value::Null);
                number(&id).map(|id| self.answered(id, Ok(result)));
            }
            Incoming::Error {
                id: Some(id),
                error,
            } => {
                number(&id).map(|id| self.answered(id, Err(error)));
            }
            _ => {}
        }
    }

    /// Cancels the request the client gave `id` (a `notifications/cancelled`).
    pub(crate) fn cancel(&self, id: &str) {
        let state = self.state();
        for (_, request, _, token) in &state.requests {
            if request == id {
                token.cancel();
            }
        }
    }

    /// Sends `event` on the newest request stream whose reader is still
    /// there, else the newest GET stream; whether one took it.
    pub(crate) fn send(&self, event: Bytes) -> bool {
        let state = self.state();
        let open = (state.requests.iter().rev().map(|(_, _, s, _)| s))
            .chain(state.listening.iter().rev().map(|(_, s)| s));
        for sender in open {
            if !sender.is_closed() {
                return sender.try_send(event).is_ok();
            }
        }
        false
    }

    /// A new question's id, and where its answer arrives; `None` when
    /// [`QUESTIONS`] wait already (those whose asker gave up let go first).
    pub(crate) fn ask(&self) -> Option<(u64, oneshot::Receiver<Answered>)> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        let mut state = self.state();
        state.questions.retain(|_, waiting| !waiting.is_closed());
        if state.questions.len() >= QUESTIONS {
            return None;
        }
        state.questions.insert(id, answer);
        Some((id, answered))
    }

    /// The client answered question `id`; whether it was one.
    pub(crate) fn answered(&self, id: u64, answer: Answered) -> bool {
        match self.state().questions.remove(&id) {
            Some(waiting) => {
                let _ = waiting.send(answer);
                true
            }
            None => false,
        }
    }

    /// Question `id` will not be answered (its asker gave up).
    pub(crate) fn forget(&self, id: u64) {
        self.state().questions.remove(&id);
    }

    /// The bearer token of the session's latest request.
    pub(crate) fn set_caller_token(&self, token: Option<&str>) {
        let mut state = self.state();
        if state.token.0.as_deref() != token {
            state.token = CallerToken(token.map(str::to_owned));
        }
    }

    /// The bearer token of the session's latest request, if any.
    pub(crate) fn caller_token(&self) -> Option<String> {
        self.state().token.0.clone()
    }

    /// The client's `logging/setLevel`.
    pub(crate) fn set_level(&self, rank: u8) {
        self.state().level = Some(rank);
    }

    /// Whether a log message at `level` goes to the client.
    pub(crate) fn wants_log(&self, level: &str) -> bool {
        let floor = self.state().level.unwrap_or(0);
        level_rank(level).is_some_and(|rank| rank >= floor)
    }

    /// Ends the session: its questions unanswered, its streams' requests
    /// cancelled, its clients closed (each member sees its session end).
    pub(crate) async fn close(&self) {
        let clients: Vec<McpClient> = {
            let mut state = self.state();
            state.closed = true;
            state.questions.clear();
            state.parked.clear();
            for (.., token) in &state.requests {
                token.cancel();
            }
            state.requests.clear();
            state.listening.clear();
            state.clients.drain().map(|(_, client)| client).collect()
        };
        let closing = clients.iter().map(|client| client.close());
        futures_util::future::join_all(closing).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_a_member_says_goes_to_the_newest_open_request_else_a_get_stream() {
        let down = Downstream::new(
            serde_json::json!({ "sampling": {} }),
            ProtocolVersion::LATEST_LEGACY,
        );
        assert!(down.declared("sampling") && !down.declared("roots"));
        assert!(!down.send(Bytes::from_static(b"x")), "no stream");
        let (get, mut got) = mpsc::channel(4);
        down.open_listening(get);
        let (first, mut first_rx) = mpsc::channel(4);
        let a = down
            .open_request("1".into(), first, CancellationToken::new())
            .unwrap();
        let (second, second_rx) = mpsc::channel(4);
        let token = CancellationToken::new();
        let b = down
            .open_request("2".into(), second, token.clone())
            .unwrap();
        drop(second_rx); // its reader went away
        assert!(down.send(Bytes::from_static(b"one")));
        assert_eq!(&first_rx.recv().await.unwrap()[..], b"one");
        down.cancel("2");
        assert!(token.is_cancelled());
        down.finish(a, Bytes::from_static(b"done")).await;
        down.finish(b, Bytes::from_static(b"kept")).await;
        assert!(down.send(Bytes::from_static(b"two")));
        assert_eq!(&got.recv().await.unwrap()[..], b"two");
        drop(got);
        assert!(!down.send(Bytes::from_static(b"three")));
    }

    #[tokio::test]
    async fn a_stream_resumed_by_its_number_gets_the_answer_even_after_it_came() {
        let down = Downstream::new(Value::Null, ProtocolVersion::LATEST_LEGACY);
        let (post, post_rx) = mpsc::channel(4);
        let no = down
            .open_request("1".into(), post, CancellationToken::new())
            .unwrap();
        drop(post_rx); // the connection broke
        let (get, mut got) = mpsc::channel(4);
        assert!(down.resume(no, get));
        down.finish(no, Bytes::from_static(b"answer")).await;
        assert_eq!(&got.recv().await.unwrap()[..], b"answer");
        // The answer came while nobody read: kept for the GET.
        let (post, post_rx) = mpsc::channel(4);
        let no = down
            .open_request("2".into(), post, CancellationToken::new())
            .unwrap();
        drop(post_rx);
        down.finish(no, Bytes::from_static(b"kept")).await;
        let (get, mut got) = mpsc::channel(4);
        assert!(down.resume(no, get));
        assert_eq!(&got.recv().await.unwrap()[..], b"kept");
        let (get, _) = mpsc::channel(4);
        assert!(!down.resume(no, get), "given once");
        assert!(!down.resume(999, mpsc::channel(1).0));
    }

    #[test]
    fn a_session_runs_a_bounded_number_of_requests_at_once() {
        let down = Downstream::new(Value::Null, ProtocolVersion::LATEST_LEGACY);
        let (sender, _events) = mpsc::channel(1);
        for i in 0..IN_FLIGHT {
            let opened = down.open_request(i.to_string(), sender.clone(), CancellationToken::new());
            assert!(opened.is_some());
        }
        assert!(down
            .open_request("one more".into(), sender, CancellationToken::new())
            .is_none());
    }

    #[tokio::test]
    async fn a_question_is_answered_once_and_a_closed_session_answers_none() {
        let down = Downstream::new(Value::Null, ProtocolVersion::LATEST_LEGACY);
        let (id, answer) = down.ask().unwrap();
        assert!(down.answered(id, Ok(Value::Bool(true))));
        assert!(!down.answered(id, Ok(Value::Null)), "answered once");
        assert_eq!(answer.await.unwrap().unwrap(), Value::Bool(true));
        // Questions past the bound are refused; one whose asker gave up
        // makes room.
        let waiting: Vec<_> = (0..QUESTIONS).map(|_| down.ask().unwrap()).collect();
        assert!(down.ask().is_none());
        drop(waiting);
        let (_, waiting) = down.ask().unwrap();
        down.close().await;
        assert!(waiting.await.is_err(), "the asker learns no answer comes");
    }

    #[test]
    fn log_messages_below_the_level_are_not_sent() {
        let down = Downstream::new(Value::Null, ProtocolVersion::LATEST_LEGACY);
        assert!(down.wants_log("debug"));
        down.set_level(level_rank("warning").unwrap());
        assert!(!down.wants_log("info") && down.wants_log("error"));
        assert!(!down.wants_log("loud"));
    }
}
