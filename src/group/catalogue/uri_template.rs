//! Whether a URI is one a resource template (RFC 6570) could have made, so
//! that a `resources/read` of a templated URI reaches the server whose
//! template it is, as a read of a listed URI reaches the server that listed
//! it.
//!
//! Only the shape is compared: the literal parts must match exactly, and
//! each expression (`{id}`, `{+path}`, `{?q,page}`, ...) takes a stretch of
//! the URI. A simple expression takes no `/` (nor `?` or `#`), a reserved
//! one (`{+x}`, `{#x}`) takes anything, a query one (`{?x}`, `{&x}`) takes
//! the rest of a query. It decides where a request goes, never what it
//! means: the server still reads the URI itself.

/// One piece of a template: text to match as it is, or an expression
/// taking a stretch of the URI that holds none of `stops`.
enum Piece<'a> {
    Literal(&'a str),
    Expression { stops: &'static [u8] },
}

fn pieces(template: &str) -> Option<Vec<Piece<'_>>> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            pieces.push(Piece::Literal(&rest[..open]));
        }
        let close = open + rest[open..].find('}')?;
        let stops: &'static [u8] = match rest[open + 1..close].bytes().next() {
            Some(b'+' | b'#' | b'?' | b'&') => b"",
            Some(b'/') => b"?#",
            _ => b"/?#",
        };
        pieces.push(Piece::Expression { stops });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Literal(rest));
    }
    Some(pieces)
}

/// Whether `uri` matches `template`: the positions of the URI each piece
/// can end at, piece after piece, in time linear in the URI's length per
/// piece (a server's template is data: no shape of it can make this slow).
pub(crate) fn matches(template: &str, uri: &str) -> bool {
    let Some(pieces) = pieces(template) else {
        return false;
    };
    let bytes = uri.as_bytes();
    let mut reachable = vec![false; bytes.len() + 1];
    reachable[0] = true;
    for piece in pieces {
        let mut next = vec![false; bytes.len() + 1];
        match piece {
            Piece::Literal(text) => {
                for at in (0..=bytes.len()).filter(|&at| reachable[at]) {
                    if bytes[at..].starts_with(text.as_bytes()) {
                        next[at + text.len()] = true;
                    }
                }
            }
            Piece::Expression { stops } => {
                // From a reachable position the stretch runs until a stop:
                // every position up to it is reachable.
                let mut open = false;
                for at in 0..=bytes.len() {
                    open |= reachable[at];
                    next[at] = open;
                    if at < bytes.len() && stops.contains(&bytes[at]) {
                        open = false;
                    }
                }
            }
        }
        reachable = next;
    }
    reachable[bytes.len()]
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_uri_matches_the_template_that_could_have_made_it() {
        assert!(matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://template/1/2/data"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://other/123/data"
        ));
        assert!(matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(matches("db://{table}{?limit}", "db://users?limit=5"));
        assert!(matches("plain://fixed", "plain://fixed"));
        assert!(!matches("plain://fixed", "plain://fixed/more"));
        assert!(matches("x://{a}-{b}", "x://one-two"));
        assert!(!matches("x://{a}", "x://é/"));
        assert!(!matches("x://{a", "x://a"));
        // Many expressions and a long URI: linear, not a search.
        let template = "x://".to_owned() + &"{a}".repeat(200) + "/end";
        assert!(!matches(
            &template,
            &("x://".to_owned() + &"b".repeat(5000) + "/nope")
        ));
    }
}
