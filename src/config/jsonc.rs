//! The JSON that editors write: VS Code reads `.vscode/mcp.json` as JSONC
//! (`//` and `/* */` comments, trailing commas), and Notepad starts a
//! UTF-8 file with a byte-order mark. [`to_json`] turns such text into
//! plain JSON for `serde_json`, keeping every character's line and column
//! (what it drops becomes spaces), so an error still points into the
//! person's file. Comment markers inside strings are text.

/// `text` without a leading BOM, its comments and trailing commas blanked.
pub(super) fn to_json(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    // Where the last comma outside a string is, while only whitespace and
    // comments followed it.
    let mut comma: Option<usize> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                comma = None;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    blank(&mut out, i);
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |at| i + 2 + at + 2);
                for at in i..end {
                    blank(&mut out, at);
                }
                i = end;
            }
            b',' => {
                comma = Some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(at) = comma.take() {
                    out[at] = b' ';
                }
                i += 1;
            }
            byte if byte.is_ascii_whitespace() => i += 1,
            _ => {
                comma = None;
                i += 1;
            }
        }
    }
    // Only ASCII bytes outside strings were replaced by spaces, and a
    // blanked comment's multi-byte characters byte by byte: still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Blanks one byte of a comment, keeping line breaks (so lines still
/// count) and making every byte of a multi-byte character a space.
fn blank(out: &mut [u8], at: usize) {
    if out[at] != b'\n' && out[at] != b'\r' {
        out[at] = b' ';
    }
}

#[cfg(test)]
mod tests {
    use super::to_json;

    #[test]
    fn comments_trailing_commas_and_a_bom_are_read() {
        let text = "\u{feff}{\n  // the servers\n  \"servers\": { /* none */\n    \"a\": { \"url\": \"http://x/a//b\", \"args\": [\"/*\", 1,], },\n  },\n}\n";
        let json: serde_json::Value = serde_json::from_str(&to_json(text)).expect("JSON");
        assert_eq!(json["servers"]["a"]["url"], "http://x/a//b");
        assert_eq!(json["servers"]["a"]["args"][0], "/*");
        // Positions are kept: an error still points at the right line.
        let broken = "{\n// c\n  \"a\": nope\n}";
        let error = serde_json::from_str::<serde_json::Value>(&to_json(broken)).unwrap_err();
        assert_eq!(error.line(), 3);
        // A comma between values stays; a string with an escaped quote too.
        let text = "{\"a\": \"x\\\"//y\", \"b\": [1, 2]}";
        let json: serde_json::Value = serde_json::from_str(&to_json(text)).expect("JSON");
        assert_eq!(json["a"], "x\"//y");
        assert_eq!(json["b"][1], 2);
        // A comment holding multi-byte characters stays valid text.
        let text = "{\"a\": 1 // caf\u{e9} \u{1f600}\n}";
        assert!(serde_json::from_str::<serde_json::Value>(&to_json(text)).is_ok());
    }
}
