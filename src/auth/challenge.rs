//! `WWW-Authenticate: Bearer ...` and `DPoP ...` challenges (RFC 6750 §3,
//! RFC 9728 §5.1, RFC 9449 §7.1).
//!
//! Only the parameters authorization needs are kept: `resource_metadata`
//! (where the Protected Resource Metadata is), `scope` (what to ask for)
//! and `error` (`invalid_token`, `insufficient_scope`). The parser is
//! bounded by the header's length and never fails: what it cannot read is
//! simply absent.

/// What a `Bearer` (or `DPoP`) challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// The first `Bearer` or `DPoP` challenge among a header's challenges,
    /// if any: both carry the same parameters.
    pub(crate) fn parse(header: &str) -> Option<Challenge> {
        Self::parse_where(header, |scheme| {
            scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop")
        })
    }

    /// Whether the header holds a `DPoP` challenge asking for a nonce
    /// (`error="use_dpop_nonce"`, RFC 9449 §9).
    pub(crate) fn asks_for_dpop_nonce(header: &str) -> bool {
        Self::parse_where(header, |scheme| scheme.eq_ignore_ascii_case("dpop"))
            .is_some_and(|c| c.error.as_deref() == Some("use_dpop_nonce"))
    }

    fn parse_where(header: &str, wanted: impl Fn(&str) -> bool) -> Option<Challenge> {
        let mut rest = header.trim_start();
        let mut found = None;
        while !rest.is_empty() {
            let before = rest.len();
            // A scheme token, then its parameters up to the next scheme.
            let end = rest
                .find(|c: char| c.is_ascii_whitespace() || c == ',')
                .unwrap_or(rest.len());
            let scheme = &rest[..end];
            rest = &rest[end..];
            let mut challenge = Challenge::default();
            loop {
                rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == ',');
                let Some((name, value, after)) = param(rest) else {
                    break;
                };
                match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => challenge.resource_metadata = Some(value),
                    "scope" => challenge.scope = Some(value),
                    "error" => challenge.error = Some(value),
                    _ => {}
                }
                rest = after;
            }
            if wanted(scheme) && found.is_none() {
                found = Some(challenge);
            }
            if rest.len() == before {
                break;
            }
        }
        found
    }
}

/// `name=value` or `name="quoted value"` at the start of `input`: the
/// name, the value and what follows; `None` when `input` starts a new
/// scheme (a token not followed by `=`).
fn param(input: &str) -> Option<(&str, String, &str)> {
    let eq = input.find('=')?;
    let name = input[..eq].trim();
    if name.is_empty() || name.contains(|c: char| c.is_ascii_whitespace() || c == ',') {
        return None;
    }
    let after = input[eq + 1..].trim_start();
    if let Some(quoted) = after.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return Some((name, value, &quoted[i + 1..])),
                c => value.push(c),
            }
        }
        Some((name, value, ""))
    } else {
        let end = after.find(',').unwrap_or(after.len());
        Some((name, after[..end].trim().to_owned(), &after[end..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bearer_parameters() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", scope="read write", error="insufficient_scope""#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("read write"));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    }

    #[test]
    fn finds_bearer_among_other_schemes_and_tolerates_junk() {
        let c = Challenge::parse(r#"Basic realm="a", Bearer error=invalid_token"#).unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(Challenge::parse("Basic realm=x"), None);
        assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
        assert_eq!(
            Challenge::parse(r#"Bearer scope="unterminated"#)
                .unwrap()
                .scope
                .as_deref(),
            Some("unterminated")
        );
        let _ = Challenge::parse(",,,=\"\\");
    }

    #[test]
    fn a_dpop_challenge_is_read_and_its_nonce_request_seen() {
        let header = r#"DPoP error="use_dpop_nonce", resource_metadata="https://x/prm""#;
        let c = Challenge::parse(header).unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("https://x/prm"));
        assert!(Challenge::asks_for_dpop_nonce(header));
        assert!(!Challenge::asks_for_dpop_nonce(
            r#"Bearer error="use_dpop_nonce""#
        ));
        assert!(!Challenge::asks_for_dpop_nonce(
            r#"DPoP error="invalid_token""#
        ));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any header text parses or not, never panics or loops.
        #[test]
        fn any_text_is_read_without_panic(header in "\\PC{0,200}") {
            let _ = Challenge::parse(&header);
        }

        /// Quoted values survive escaping of quotes and backslashes.
        #[test]
        fn quoted_values_round_trip(scope in "[ -~]{0,40}", error in "[a-z_]{1,20}") {
            let quoted = scope.replace('\\', "\\\\").replace('"', "\\\"");
            let header = format!(r#"Bearer error={error}, scope="{quoted}""#);
            let challenge = Challenge::parse(&header).unwrap();
            prop_assert_eq!(challenge.scope.as_deref(), Some(scope.as_str()));
            prop_assert_eq!(challenge.error.as_deref(), Some(error.as_str()));
        }
    }
}
