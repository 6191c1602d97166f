//! URL checks shared by the connect request and the legacy SSE endpoint.
//!
//! `http::Uri` accepts any digits after the host's colon and reports a port
//! it cannot represent as "no port", which every client then reads as the
//! scheme's default: `http://host:99999/` would silently become port 80.
//! These checks make such URLs errors instead.

use http::Uri;

/// Whether the URL's explicit port, if it has one, is a usable TCP port
/// (1 to 65535). An empty port (`http://host:/`) means the default one.
pub(crate) fn port_is_valid(uri: &Uri) -> bool {
    let Some(authority) = uri.authority() else {
        return true;
    };
    let host_and_port = authority
        .as_str()
        .rsplit_once('@')
        .map_or(authority.as_str(), |(_, rest)| rest);
    // An IPv6 literal's colons are inside the brackets.
    let after_host = match host_and_port.rfind(']') {
        Some(end) => &host_and_port[end + 1..],
        None => host_and_port
            .find(':')
            .map_or("", |colon| &host_and_port[colon..]),
    };
    match after_host.strip_prefix(':') {
        None => after_host.is_empty(),
        Some("") => true,
        Some(digits) => {
            digits.bytes().all(|b| b.is_ascii_digit())
                && digits.parse::<u16>().is_ok_and(|p| p != 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(url: &str) -> bool {
        port_is_valid(&url.parse().unwrap())
    }

    #[test]
    fn ports_outside_1_to_65535_are_refused() {
        assert!(valid("http://127.0.0.1:8080/mcp"));
        assert!(valid("http://127.0.0.1/mcp"));
        assert!(valid("http://127.0.0.1:/mcp"));
        assert!(valid("http://[::1]:65535/mcp"));
        assert!(valid("http://[::1]/mcp"));
        assert!(valid("http://user:pw@host:1/mcp"));
        for bad in [
            "http://127.0.0.1:99999/mcp",
            "http://127.0.0.1:65536/mcp",
            "http://127.0.0.1:4294967376/mcp",
            "http://127.0.0.1:0/mcp",
            "http://[::1]:70000/mcp",
            "http://user:pw@host:123456/mcp",
        ] {
            assert!(!valid(bad), "{bad}");
        }
    }
}
