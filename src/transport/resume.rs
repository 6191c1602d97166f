//! Resuming a cut SSE stream on Streamable HTTP (2025-11-25, SEP-1699).
//!
//! A server may end a reply stream after a priming event (an `id:` with no
//! message, often with `retry:`), and proxies cut long streams. The request
//! is not lost: the client waits the server's `retry:` delay and continues
//! the *same* stream with `GET` and `Last-Event-ID`, never re-POSTing the
//! request. This module holds what one stream's resumption needs to know:
//! the id to resume from, the delay, how many attempts in a row have failed,
//! and which events were already delivered (a server that replays one is
//! not believed twice).
//!
//! Bounds: at most [`MAX_ATTEMPTS`] resumptions in a row without a new event
//! (an event resets the count, so a long stream may be cut many times); a
//! `retry:` is honoured up to [`MAX_DELAY`]; without one the delay is
//! [`DEFAULT_DELAY`], jittered down by up to half so that many clients cut
//! together do not come back together. The caller's own timeout bounds it
//! all.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use super::SseParser;

/// Resumptions in a row without a new event before giving up.
pub const MAX_ATTEMPTS: u32 = 3;
/// The delay before a resumption when the server gave no `retry:`.
pub const DEFAULT_DELAY: Duration = Duration::from_secs(1);
/// The longest `retry:` honoured.
pub const MAX_DELAY: Duration = Duration::from_secs(30);
/// Event ids remembered per stream to recognise replays.
const REMEMBERED_IDS: usize = 1024;

/// One stream's resumption state, carried across its reconnections.
#[derive(Debug, Default)]
pub(crate) struct Resumption {
    last_event_id: Option<String>,
    retry: Option<Duration>,
    failures: u32,
    seen: VecDeque<String>,
    seen_set: HashSet<String>,
}

impl Resumption {
    /// Takes what the parser of the stream that just ended learnt.
    pub(crate) fn absorb(&mut self, parser: &SseParser) {
        if let Some(id) = parser.last_event_id() {
            self.last_event_id = Some(id.to_owned());
        }
        if let Some(ms) = parser.retry_ms() {
            self.retry = Some(Duration::from_millis(ms).min(MAX_DELAY));
        }
    }

    /// The delay [`delay`](Self::delay) would give, counting a `retry:` the
    /// parser of the current stream has seen.
    pub(crate) fn absorb_retry(&self, parser: &SseParser) -> Duration {
        match parser.retry_ms() {
            Some(ms) => Duration::from_millis(ms).min(MAX_DELAY),
            None => self.delay(),
        }
    }

    /// The id to resume from, if the server gave one.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Records a delivered event (its own id, if it had one); `false` when
    /// that id was already delivered, so the event must be skipped. Any
    /// event is progress: the count of failed attempts starts again.
    pub(crate) fn deliver(&mut self, id: Option<&str>) -> bool {
        self.failures = 0;
        let Some(id) = id else { return true };
        if self.seen_set.contains(id) {
            return false;
        }
        if self.seen.len() == REMEMBERED_IDS {
            if let Some(oldest) = self.seen.pop_front() {
                self.seen_set.remove(&oldest);
            }
        }
        self.seen.push_back(id.to_owned());
        self.seen_set.insert(id.to_owned());
        true
    }

    /// Counts one more attempt; the attempt number, or `None` past the
    /// bound.
    pub(crate) fn next_attempt(&mut self) -> Option<u32> {
        self.failures += 1;
        (self.failures <= MAX_ATTEMPTS).then_some(self.failures)
    }

    /// Attempts made in a row so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.failures
    }

    /// How long to wait before the next attempt: the server's `retry:`
    /// exactly, else the default, jittered.
    pub(crate) fn delay(&self) -> Duration {
        match self.retry {
            Some(retry) => retry,
            None => DEFAULT_DELAY.mul_f64(1.0 - 0.5 * jitter()),
        }
    }
}

/// A number in `[0, 1)` that differs between calls and processes, from a
/// fresh [`jitter`](mcp_connect_layers::jitter::jitter) source (seeded in
/// a simulation).
fn jitter() -> f64 {
    use tower::util::rng::Rng;
    mcp_connect_layers::jitter::jitter().next_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_event_is_recognised_and_progress_resets_the_count() {
        let mut state = Resumption::default();
        assert_eq!(state.next_attempt(), Some(1));
        assert!(state.deliver(Some("a")));
        assert_eq!(state.next_attempt(), Some(1), "progress reset the count");
        assert!(!state.deliver(Some("a")), "seen already");
        assert!(state.deliver(None), "no id: cannot be recognised");
        assert_eq!(state.next_attempt(), Some(1));
        assert_eq!(state.next_attempt(), Some(2));
        assert_eq!(state.next_attempt(), Some(3));
        assert_eq!(state.next_attempt(), None);
    }

    #[test]
    fn the_server_retry_is_honoured_up_to_a_bound_and_the_default_is_jittered() {
        let mut parser = SseParser::new(1024);
        parser.push(b"id: 7\nretry: 250\ndata:\n\n");
        while parser.next_event().unwrap().is_some() {}
        let mut state = Resumption::default();
        state.absorb(&parser);
        assert_eq!(state.last_event_id(), Some("7"));
        assert_eq!(state.delay(), Duration::from_millis(250));

        let mut parser = SseParser::new(1024);
        parser.push(b"retry: 99999999\n\n");
        while parser.next_event().unwrap().is_some() {}
        state.absorb(&parser);
        assert_eq!(state.delay(), MAX_DELAY);

        let delays: HashSet<_> = (0..8)
            .map(|_| Resumption::default().delay())
            .inspect(|d| assert!(*d <= DEFAULT_DELAY && *d >= DEFAULT_DELAY / 2))
            .collect();
        assert!(delays.len() > 1, "jittered");
    }

    #[test]
    fn remembered_ids_are_bounded() {
        let mut state = Resumption::default();
        for i in 0..(REMEMBERED_IDS + 10) {
            assert!(state.deliver(Some(&i.to_string())));
        }
        assert_eq!(state.seen.len(), REMEMBERED_IDS);
        assert_eq!(state.seen_set.len(), REMEMBERED_IDS);
    }
}
