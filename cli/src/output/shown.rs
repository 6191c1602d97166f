//! What server-chosen text may look like on a terminal.

use std::borrow::Cow;

/// Server-chosen text as it may reach a terminal: every control character
/// (C0, DEL, C1) and every format or separator character (bidi marks and
/// overrides, zero-width characters, line separators) written as an escape,
/// so a server cannot move the cursor, ring, recolour or forge a line.
/// JSON output needs none of this: serde_json escapes control characters.
pub(crate) fn shown(text: &str) -> Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control() || is_format_or_separator(c)
    }
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A tool's text as it may reach a terminal: each line [`shown`], the
/// lines kept (indented under the call's line), never a literal `\n`.
pub(crate) fn shown_lines(text: &str) -> String {
    let lines: Vec<_> = text
        .split('\n')
        .map(|line| shown(line.trim_end_matches('\r')))
        .collect();
    lines.join("\n  ")
}

/// Whether `c` is of Unicode category Cf (format: bidi marks and
/// overrides, zero-width characters, the BOM, tags), Zl or Zp (line and
/// paragraph separators), as of Unicode 15.1: characters that move or hide
/// text on a terminal without being seen themselves.
fn is_format_or_separator(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

#[cfg(test)]
mod tests {
    use super::shown;

    /// Issue 24, item 3.3: nothing a server chooses can drive the terminal.
    #[test]
    fn control_characters_and_bidi_overrides_are_escaped() {
        assert_eq!(shown("plain ünïcode"), "plain ünïcode");
        assert_eq!(
            shown("a\x1b[2Kb\x07c\rd\ne\u{9b}f\u{202e}g\x7f"),
            "a\\x1b[2Kb\\x07c\\rd\\ne\\x9bf\\u{202e}g\\x7f"
        );
        assert!(!shown("x\nestablished: FAKE LINE").contains('\n'));
    }

    /// Issue 40, item 16: every character of categories Cf, Zl and Zp is
    /// escaped too (marks, zero-width characters, separators), and no
    /// visible character is.
    #[test]
    fn format_characters_and_separators_are_escaped() {
        for c in [
            '\u{200e}',
            '\u{200f}',
            '\u{061c}',
            '\u{2028}',
            '\u{2029}',
            '\u{200b}',
            '\u{feff}',
            '\u{2066}',
            '\u{00ad}',
            '\u{e0041}',
        ] {
            let text = format!("tool{c}name");
            let printed = shown(&text);
            assert!(!printed.contains(c), "{c:?} reached the terminal");
            let escaped = if (c as u32) < 0x100 {
                format!("\\x{:02x}", c as u32)
            } else {
                format!("\\u{{{:x}}}", c as u32)
            };
            assert!(printed.contains(&escaped), "{printed}");
        }
        for visible in ["caf\u{e9}", "\u{65e5}\u{672c}", "\u{1f600}", "a\u{2010}b"] {
            assert_eq!(shown(visible), visible);
        }
    }
}
