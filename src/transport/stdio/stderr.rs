//! A stdio server's stderr, drained so the child never blocks on a full
//! pipe, into a bounded ring of its last lines.
//!
//! Read in chunks, never a whole line at once: a server that writes a
//! gigabyte without a newline costs one cut line here, and bytes that are
//! not UTF-8 are kept lossily instead of ending the drain (which would leave
//! the child blocked on its next write).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;

/// How many lines are kept.
pub(super) const LINES: usize = 32;
/// How much of each line is kept.
pub(super) const LINE_BYTES: usize = 1024;

/// The last [`LINES`] lines, each cut to [`LINE_BYTES`].
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    pub(super) fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|lines| lines.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn push(&self, line: &[u8]) {
        let line = String::from_utf8_lossy(line).into_owned();
        if let Ok(mut ring) = self.0.lock() {
            if ring.len() == LINES {
                ring.pop_front();
            }
            ring.push_back(line);
        }
    }

    /// Reads `pipe` to its end (or its first error), keeping the tail.
    pub(super) async fn drain(self, mut pipe: impl tokio::io::AsyncRead + Unpin) {
        let mut chunk = [0u8; 8192];
        let mut line = Vec::with_capacity(LINE_BYTES);
        let mut cut = false;
        while let Ok(read @ 1..) = pipe.read(&mut chunk).await {
            for piece in chunk[..read].split_inclusive(|byte| *byte == b'\n') {
                let (text, ends) = match piece.split_last() {
                    Some((b'\n', text)) => (text, true),
                    _ => (piece, false),
                };
                let room = LINE_BYTES - line.len();
                line.extend_from_slice(&text[..text.len().min(room)]);
                cut |= text.len() > room;
                if ends {
                    self.push(trimmed(&line, cut));
                    line.clear();
                    cut = false;
                }
            }
        }
        if !line.is_empty() {
            self.push(trimmed(&line, cut));
        }
    }
}

/// A line without its `\r`, and without a character the cut split.
fn trimmed(line: &[u8], cut: bool) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !cut {
        return line;
    }
    // Back over the continuation bytes at the end to their lead byte.
    let mut lead = line.len();
    while lead > 0 && line.len() - lead < 3 && line[lead - 1] & 0xC0 == 0x80 {
        lead -= 1;
    }
    let Some(lead) = lead.checked_sub(1) else {
        return line;
    };
    let needs = match line[lead] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    if line.len() - lead < needs {
        &line[..lead]
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn tail_of(bytes: &[u8]) -> Vec<String> {
        let tail = StderrTail::default();
        tail.clone().drain(bytes).await;
        tail.lines()
    }

    #[tokio::test]
    async fn lines_are_cut_bounded_and_kept_lossily() {
        // Cut in the middle of an `é`: the half character is dropped.
        let long = format!("a{}\n", "é".repeat(LINE_BYTES));
        let lines = tail_of(long.as_bytes()).await;
        assert_eq!(lines, [format!("a{}", "é".repeat(LINE_BYTES / 2 - 1))]);

        let lines = tail_of(b"bad \xff byte\r\nlast without newline").await;
        assert_eq!(lines, ["bad \u{fffd} byte", "last without newline"]);

        let many: String = (0..100).map(|n| format!("{n}\n")).collect();
        let lines = tail_of(many.as_bytes()).await;
        assert_eq!(lines.len(), LINES);
        assert_eq!(lines.last().unwrap(), "99");
    }
}
