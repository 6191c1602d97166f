//! A bounded `text/event-stream` parser following the WHATWG rules.
//!
//! Why not a crate: the parser must bound both a line and an event's data so
//! a hostile or broken server cannot grow memory without limit, and it must
//! expose `id:` and `retry:` even from events without data (MCP's priming
//! events). It is small enough to own.

use bytes::{Buf, BytesMut};

/// What a line may hold beyond the event bound: the field name, the colon
/// and a space (`data: ` and its kin are far shorter).
const LINE_OVERHEAD: usize = 64;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` type; empty means the default, `message`.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: Vec<u8>,
    /// The `id:` this event carried itself, if any (used to recognise an
    /// event a resumed stream sends again).
    pub(crate) id: Option<String>,
}

impl SseEvent {
    /// Whether this is a default (`message`) event.
    pub(crate) fn is_message(&self) -> bool {
        self.event.is_empty() || self.event == "message"
    }
}

/// The stream broke a size bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event exceeds {limit} bytes")]
pub struct SseTooLarge {
    /// The configured bound.
    pub limit: usize,
}

/// Incremental parser: [`push`](Self::push) bytes, then take events with
/// [`next_event`](Self::next_event) until it returns `None`.
#[derive(Debug)]
pub(crate) struct SseParser {
    buf: BytesMut,
    /// How much of `buf` is known to hold no line end: each byte is
    /// scanned once, however many pieces a long line comes in.
    scanned: usize,
    /// Bytes examined for line ends, in all (tests check it is linear).
    #[cfg(test)]
    examined: usize,
    limit: usize,
    data: Vec<u8>,
    has_data: bool,
    event: String,
    /// The last event ID buffer (WHATWG): the latest `id:` field.
    id_buffer: Option<String>,
    /// Whether the event being read has an `id:` field of its own.
    has_id: bool,
    /// The last event ID as of the last dispatched event, which is what a
    /// reconnection sends.
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
    skip_lf: bool,
    at_start: bool,
}

impl SseParser {
    pub(crate) fn new(limit: usize) -> Self {
        SseParser {
            buf: BytesMut::new(),
            scanned: 0,
            #[cfg(test)]
            examined: 0,
            limit,
            data: Vec::new(),
            has_data: false,
            event: String::new(),
            id_buffer: None,
            has_id: false,
            last_event_id: None,
            retry_ms: None,
            skip_lf: false,
            at_start: true,
        }
    }

    /// Appends received bytes.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The last event ID as of the last complete event (an `id:` of an
    /// event cut off before its blank line does not count), for
    /// `Last-Event-ID` on reconnection.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The last `retry:` seen, in milliseconds.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// The next complete event, if the buffered bytes hold one.
    pub(crate) fn next_event(&mut self) -> Result<Option<SseEvent>, SseTooLarge> {
        loop {
            if self.at_start {
                if self.buf.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.buf) {
                    return Ok(None);
                }
                if self.buf.starts_with(b"\xEF\xBB\xBF") {
                    self.buf.advance(3);
                }
                self.at_start = false;
            }
            if self.skip_lf && !self.buf.is_empty() {
                if self.buf[0] == b'\n' {
                    self.buf.advance(1);
                }
                self.skip_lf = false;
            }
            // One bound on a line, however the bytes arrived: a partial
            // line already over it, or a whole one.
            let line_limit = self.limit.saturating_add(LINE_OVERHEAD);
            let fresh = &self.buf[self.scanned..];
            let found = fresh.iter().position(|&b| b == b'\n' || b == b'\r');
            #[cfg(test)]
            {
                self.examined += found.map_or(fresh.len(), |at| at + 1);
            }
            let Some(end) = found.map(|at| self.scanned + at) else {
                self.scanned = self.buf.len();
                if self.buf.len() > line_limit {
                    return Err(SseTooLarge { limit: self.limit });
                }
                return Ok(None);
            };
            if end > line_limit {
                return Err(SseTooLarge { limit: self.limit });
            }
            self.scanned = 0;
            let line = self.buf.split_to(end);
            self.skip_lf = self.buf[0] == b'\r';
            self.buf.advance(1);
            if let Some(event) = self.line(&line)? {
                return Ok(Some(event));
            }
        }
    }

    fn line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, SseTooLarge> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(SseTooLarge { limit: self.limit });
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.id_buffer = Some(String::from_utf8_lossy(value).into_owned());
                self.has_id = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let own_id = std::mem::take(&mut self.has_id);
        self.last_event_id.clone_from(&self.id_buffer);
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: own_id.then(|| self.id_buffer.clone()).flatten(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(input: &[&[u8]], limit: usize) -> Result<Vec<SseEvent>, SseTooLarge> {
        let mut parser = SseParser::new(limit);
        let mut out = Vec::new();
        for chunk in input {
            parser.push(chunk);
            while let Some(e) = parser.next_event()? {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Found by fuzzing: a long line the parser ignores (a comment) was
    /// refused when it arrived in pieces and accepted when it arrived
    /// whole. One bound on a line now holds either way.
    #[test]
    fn a_long_line_is_refused_however_it_arrives() {
        let mut line = b": ".to_vec();
        line.extend(std::iter::repeat_n(b'x', 200));
        line.extend_from_slice(b"\n\ndata: after\n\n");
        let whole = events(&[&line], 100);
        let pieces: Vec<&[u8]> = line.chunks(7).collect();
        assert_eq!(whole, Err(SseTooLarge { limit: 100 }));
        assert_eq!(events(&pieces, 100), whole);
        // Up to the bound plus a field name's worth, it passes both ways.
        let mut fits = b"data: ".to_vec();
        fits.extend(std::iter::repeat_n(b'y', 99));
        fits.extend_from_slice(b"\n\n");
        assert_eq!(events(&[&fits], 100).unwrap().len(), 1);
        let pieces: Vec<&[u8]> = fits.chunks(5).collect();
        assert_eq!(events(&pieces, 100).unwrap().len(), 1);
    }

    /// Issue 24, item 3.1: a long line that arrives in many pieces is
    /// scanned once, not once per piece (a 15 MiB event cost 4 s of CPU).
    #[test]
    fn a_long_line_in_many_pieces_is_scanned_once() {
        let size = 4 << 20;
        let mut input = b"data: ".to_vec();
        input.extend(std::iter::repeat_n(b'x', size));
        input.extend_from_slice(b"\n\n");
        let mut parser = SseParser::new(size + 16);
        let mut got = Vec::new();
        for chunk in input.chunks(1024) {
            parser.push(chunk);
            while let Some(event) = parser.next_event().unwrap() {
                got.push(event);
            }
        }
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data.len(), size);
        assert!(
            parser.examined <= input.len() + 2,
            "{} bytes examined for {} received",
            parser.examined,
            input.len()
        );
    }

    #[test]
    fn joins_multi_line_data_and_keeps_event_type() {
        let got = events(&[b"event: endpoint\ndata: a\ndata:b\n\n"], 1024).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event, "endpoint");
        assert_eq!(got[0].data, b"a\nb");
    }

    #[test]
    fn handles_crlf_cr_and_lf_split_across_chunks() {
        let got = events(
            &[
                b"data: one\r",
                b"\n\r",
                b"\ndata: two\r\r",
                b"data: three\n",
                b"\n",
            ],
            1024,
        )
        .unwrap();
        let data: Vec<_> = got.iter().map(|e| e.data.clone()).collect();
        assert_eq!(
            data,
            vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
    }

    #[test]
    fn priming_event_without_data_sets_id_and_retry_but_dispatches_nothing() {
        let mut parser = SseParser::new(1024);
        parser.push(b"\xEF\xBB\xBFid: 42\nretry: 500\ndata:\n\n: comment\n\n");
        // An empty `data:` line still counts as data per WHATWG; MCP callers skip empty payloads.
        let e = parser.next_event().unwrap().unwrap();
        assert!(e.data.is_empty());
        assert_eq!(parser.next_event().unwrap(), None);
        assert_eq!(parser.last_event_id(), Some("42"));
        assert_eq!(parser.retry_ms(), Some(500));
    }

    #[test]
    fn the_last_event_id_is_the_last_complete_events() {
        let mut parser = SseParser::new(1024);
        parser.push(b"id: a\ndata: 1\n\ndata: 2\n\nid: b\ndata: 3");
        let first = parser.next_event().unwrap().unwrap();
        assert_eq!(first.id.as_deref(), Some("a"));
        let second = parser.next_event().unwrap().unwrap();
        assert_eq!(second.id, None, "no id of its own");
        assert_eq!(parser.next_event().unwrap(), None);
        assert_eq!(parser.last_event_id(), Some("a"), "event 3 was cut off");
    }

    #[test]
    fn oversized_line_or_event_is_refused() {
        assert_eq!(events(&[&[b'x'; 200]], 64), Err(SseTooLarge { limit: 64 }));
        assert_eq!(
            events(&[b"data: 0123456789\ndata: 0123456789\n"], 16),
            Err(SseTooLarge { limit: 16 })
        );
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Every event of `input` fed in `chunks` pieces, or the bound error.
    fn parse(input: &[u8], cuts: &[usize], limit: usize) -> Result<Vec<SseEvent>, SseTooLarge> {
        let mut parser = SseParser::new(limit);
        let mut events = Vec::new();
        let mut at = 0;
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        points.sort_unstable();
        points.push(input.len());
        for point in points {
            parser.push(&input[at..point.max(at)]);
            at = point.max(at);
            while let Some(event) = parser.next_event()? {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// Bytes that look like SSE: field lines, blank lines, CR/LF mixes.
    fn sse_like() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "data: [ -~]{0,40}".prop_map(String::into_bytes),
            "id: [a-z0-9]{0,8}".prop_map(String::into_bytes),
            "retry: [0-9]{0,6}".prop_map(String::into_bytes),
            "event: [a-z]{0,8}".prop_map(String::into_bytes),
            ": [ -~]{0,10}".prop_map(String::into_bytes),
            Just(Vec::new()),
            proptest::collection::vec(any::<u8>(), 0..20),
        ];
        let ending = prop_oneof![Just(&b"\n"[..]), Just(&b"\r\n"[..]), Just(&b"\r"[..])];
        proptest::collection::vec((line, ending), 0..30).prop_map(|lines| {
            lines
                .into_iter()
                .flat_map(|(mut l, e)| {
                    l.extend_from_slice(e);
                    l
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any bytes end in events or the bound error, never a panic, and
        /// no event is larger than the bound.
        #[test]
        fn any_bytes_are_events_or_a_bound_error(
            input in proptest::collection::vec(any::<u8>(), 0..512),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            if let Ok(events) = parse(&input, &cuts, 64) {
                for event in events {
                    prop_assert!(event.data.len() <= 64);
                }
            }
        }

        /// How the bytes are split into chunks changes nothing.
        #[test]
        fn chunking_does_not_change_the_events(
            input in sse_like(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let whole = parse(&input, &[], 4096);
            let split = parse(&input, &cuts, 4096);
            prop_assert_eq!(whole, split);
        }
    }
}
