//! HTTP proxies for the default client: which requests go through one, and
//! how.
//!
//! The rules are hyper-util's own proxy matcher (`client-proxy`), the same
//! curl-style `NO_PROXY` rules reqwest uses: `HTTP_PROXY`, `HTTPS_PROXY`,
//! `ALL_PROXY` and `NO_PROXY` (uppercase first, then lowercase), read once
//! when the client is built, or an explicit [`Proxy`] that overrides them.
//! An `http://` target goes to the proxy as an absolute-form request with
//! the proxy's credentials in `Proxy-Authorization`; an `https://` target
//! goes through a `CONNECT` tunnel, with TLS to the origin inside it, and
//! the credentials ride only on the `CONNECT`. Neither the origin nor any
//! log ever sees them.
//!
//! Where this differs from hyper-util: a proxy URL that is set but cannot be
//! used (not a URL, an `https://` or SOCKS proxy) fails every request of its
//! scheme with a typed [`ProxyConfigError`] before any I/O, instead of being
//! skipped, so a broken setting never turns into a silent direct
//! connection. SOCKS is not offered: hyper-util's SOCKS connector resolves
//! names with a blocking call on the runtime's thread and its errors carry
//! no source, so a refused proxy could not be told from an unreachable one.

mod connector;
mod error;
mod forward;

use std::fmt;
use std::sync::Arc;

use hyper_util::client::proxy::matcher::{Intercept, Matcher};

pub(crate) use connector::ProxyConnector;
pub use error::{ProxyConfigError, ProxyError, ProxyUrlProblem};
pub(crate) use forward::ForwardLayer;

/// Which proxy the default client goes through
/// ([`HttpClientBuilder::proxy`](super::HttpClientBuilder::proxy)).
///
/// ```
/// use mcp_connect::transport::{HttpClient, Proxy};
///
/// // Every target through one proxy, except hosts under example.internal.
/// let proxy = Proxy::url("http://user:secret@127.0.0.1:3128")?
///     .with_no_proxy("example.internal");
/// let client = HttpClient::builder().proxy(proxy).build();
/// // The proxy's address, never its credentials.
/// let via = client.proxy_for(&"http://127.0.0.1:9/mcp".parse()?);
/// assert_eq!(via.map(|uri| uri.to_string()), Some("http://127.0.0.1:3128/".into()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Proxy {
    source: Source,
    /// `NO_PROXY`-style exceptions that replace the environment's.
    no_proxy: Option<String>,
}

#[derive(Clone, Default)]
enum Source {
    /// `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`.
    #[default]
    Environment,
    /// Never a proxy, whatever the environment says.
    Off,
    /// This proxy (checked; it may hold credentials) for every target.
    Url(String),
}

/// What names an explicit proxy in errors.
const EXPLICIT: &str = "the proxy URL";

impl Proxy {
    /// The environment's proxies (the default): `HTTP_PROXY` for `http://`
    /// targets, `HTTPS_PROXY` for `https://` ones, `ALL_PROXY` for either
    /// when its own is unset, `NO_PROXY` for the hosts that bypass them
    /// (comma-separated host names, which also match their subdomains, IP
    /// addresses and CIDR ranges, or `*`), uppercase names before
    /// lowercase ones. Read when the client is built. Under CGI
    /// (`REQUEST_METHOD` set) the environment is not trusted and no proxy
    /// is used, as in hyper-util and curl.
    pub fn from_env() -> Self {
        Proxy::default()
    }

    /// No proxy, whatever the environment says.
    pub fn none() -> Self {
        Proxy {
            source: Source::Off,
            no_proxy: None,
        }
    }

    /// Every target through the proxy at `url` (`http://host:port`, the
    /// scheme optional, credentials as `http://user:password@host:port`,
    /// percent-encoded), whatever the environment says.
    pub fn url(url: &str) -> Result<Self, ProxyConfigError> {
        check(EXPLICIT, url)?;
        Ok(Proxy {
            source: Source::Url(url.to_owned()),
            no_proxy: None,
        })
    }

    /// The hosts that bypass the proxy, in `NO_PROXY`'s syntax, replacing
    /// what the environment's `NO_PROXY` says.
    #[must_use]
    pub fn with_no_proxy(mut self, rules: &str) -> Self {
        self.no_proxy = Some(rules.to_owned());
        self
    }

    /// The routes this setting gives, reading the environment now.
    pub(crate) fn routes(&self) -> Routes {
        match &self.source {
            Source::Off => Routes::direct(),
            Source::Url(url) => {
                let setting = Ok((EXPLICIT, url.clone()));
                Routes::new(
                    Some(setting.clone()),
                    Some(setting),
                    self.no_proxy.as_deref(),
                )
            }
            Source::Environment if std::env::var_os("REQUEST_METHOD").is_some() => Routes::direct(),
            Source::Environment => {
                let all = first_env(&["ALL_PROXY", "all_proxy"]);
                let http = first_env(&["HTTP_PROXY", "http_proxy"]).or_else(|| all.clone());
                let https = first_env(&["HTTPS_PROXY", "https_proxy"]).or(all);
                let no = match &self.no_proxy {
                    Some(rules) => rules.clone(),
                    None => match first_env(&["NO_PROXY", "no_proxy"]) {
                        Some(Ok((_, rules))) => rules,
                        _ => String::new(),
                    },
                };
                Routes::new(http, https, Some(&no))
            }
        }
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the URL: it may hold a password.
        let source = match self.source {
            Source::Environment => "environment",
            Source::Off => "none",
            Source::Url(_) => "url",
        };
        f.debug_struct("Proxy")
            .field("source", &source)
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

/// A setting read from the environment: its name and value, or the name of
/// a variable that is set but is not Unicode.
type Setting = Result<(&'static str, String), &'static str>;

/// The first of `names` that is set and not empty.
fn first_env(names: &[&'static str]) -> Option<Setting> {
    names.iter().find_map(|name| match std::env::var(name) {
        Ok(value) if value.trim().is_empty() => None,
        Ok(value) => Some(Ok((*name, value))),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => Some(Err(*name)),
    })
}

/// Whether `value` is a proxy URL the client can use: `http://` (or no
/// scheme), a host, no path beyond `/`, no query.
fn check(setting: &'static str, value: &str) -> Result<(), ProxyConfigError> {
    let fail = |problem| ProxyConfigError { setting, problem };
    let uri: http::Uri = value
        .trim()
        .parse()
        .map_err(|_| fail(ProxyUrlProblem::NotAUrl))?;
    if !matches!(uri.scheme_str(), None | Some("http")) {
        return Err(fail(ProxyUrlProblem::UnsupportedScheme));
    }
    let host = uri.authority().map(|a| a.host()).unwrap_or_default();
    if host.is_empty() {
        return Err(fail(ProxyUrlProblem::NoHost));
    }
    if uri.query().is_some() || !matches!(uri.path(), "" | "/") {
        return Err(fail(ProxyUrlProblem::HasPath));
    }
    // `http::Uri` takes any digits after the host; only 1..=65535 reach a
    // proxy.
    if let Some(port) = port_text(uri.authority().map_or("", |a| a.as_str())) {
        if !port.parse::<u16>().is_ok_and(|port| port != 0) {
            return Err(fail(ProxyUrlProblem::BadPort));
        }
    }
    Ok(())
}

/// The text after the host's `:` in an authority, if it has one.
fn port_text(authority: &str) -> Option<&str> {
    let host_start = authority.rfind('@').map_or(0, |at| at + 1);
    let host = &authority[host_start..];
    let after_brackets = host.rfind(']').map_or(0, |end| end + 1);
    host[after_brackets..]
        .rsplit_once(':')
        .map(|(_, port)| port)
}

/// The `NO_PROXY` rules curl follows that hyper-util's matcher does not:
/// `*` alone exempts every host (IP literals included), and an IP literal
/// may be written in brackets (`[::1]`). Read once per client.
#[derive(Debug, Default)]
struct Exempt {
    every_host: bool,
    addresses: Vec<std::net::IpAddr>,
}

impl Exempt {
    fn parse(rules: &str) -> Exempt {
        let mut exempt = Exempt::default();
        for rule in rules.split(',').map(str::trim) {
            if rule == "*" {
                exempt.every_host = true;
            } else if let Some(inner) = rule.strip_prefix('[').and_then(|r| r.split_once(']')) {
                if let Ok(ip) = inner.0.parse() {
                    exempt.addresses.push(ip);
                }
            } else if let Ok(ip) = rule.parse() {
                exempt.addresses.push(ip);
            }
        }
        exempt
    }

    fn covers(&self, dst: &http::Uri) -> bool {
        if self.every_host {
            return true;
        }
        let host = dst.host().unwrap_or_default();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        host.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| self.addresses.contains(&ip))
    }
}

/// Where each request goes: direct, or through which proxy. Built once per
/// client and shared by its connector and its request layer.
#[derive(Debug)]
pub(crate) struct Routes {
    matcher: Matcher,
    exempt: Exempt,
    /// A proxy for `http://` targets is set but unusable.
    http_unusable: Option<ProxyConfigError>,
    /// The same for `https://` targets.
    https_unusable: Option<ProxyConfigError>,
    /// Whether any `http://` target may go through a proxy (the request
    /// layer is needed only then).
    proxies_http: bool,
}

impl Routes {
    /// Every request direct.
    pub(crate) fn direct() -> Self {
        Routes::new(None, None, None)
    }

    fn new(http: Option<Setting>, https: Option<Setting>, no: Option<&str>) -> Self {
        let checked = |setting: Option<Setting>| match setting {
            None => (String::new(), None),
            Some(Err(name)) => (
                String::new(),
                Some(ProxyConfigError {
                    setting: name,
                    problem: ProxyUrlProblem::NotAUrl,
                }),
            ),
            Some(Ok((name, value))) => match check(name, &value) {
                Ok(()) => (value.trim().to_owned(), None),
                Err(error) => (String::new(), Some(error)),
            },
        };
        let (http, http_unusable) = checked(http);
        let (https, https_unusable) = checked(https);
        let proxies_http = !http.is_empty();
        let matcher = Matcher::builder()
            .http(http)
            .https(https)
            .no(no.unwrap_or_default())
            .build();
        Routes {
            matcher,
            exempt: Exempt::parse(no.unwrap_or_default()),
            http_unusable,
            https_unusable,
            proxies_http,
        }
    }

    /// The proxy `dst` goes through, if any.
    pub(crate) fn route(&self, dst: &http::Uri) -> Result<Option<Intercept>, ProxyError> {
        let unusable = match dst.scheme_str() {
            Some("http") => &self.http_unusable,
            Some("https") => &self.https_unusable,
            _ => &None,
        };
        if self.exempt.covers(dst) {
            return Ok(None);
        }
        if let Some(error) = unusable {
            return Err(ProxyError::Setting(error.clone()));
        }
        Ok(self.matcher.intercept(dst))
    }

    /// Whether some `http://` target may go through a proxy.
    pub(crate) fn proxies_http(&self) -> bool {
        self.proxies_http
    }
}

/// The routes, shared.
pub(crate) type SharedRoutes = Arc<Routes>;

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> http::Uri {
        s.parse().expect("uri")
    }

    #[test]
    fn explicit_proxy_and_its_exceptions() {
        let routes = Proxy::url("http://u:p@127.0.0.1:3128")
            .expect("valid")
            .with_no_proxy("10.0.0.0/8, example.internal")
            .routes();
        let via = routes
            .route(&uri("https://mcp.example.com/mcp"))
            .expect("ok");
        assert_eq!(via.expect("proxied").uri(), &uri("http://127.0.0.1:3128/"));
        for direct in [
            "http://10.1.2.3/mcp",
            "https://example.internal/",
            "https://a.example.internal/",
        ] {
            assert!(
                routes.route(&uri(direct)).expect("ok").is_none(),
                "{direct}"
            );
        }
        assert!(Proxy::none()
            .routes()
            .route(&uri("http://a/"))
            .expect("ok")
            .is_none());
    }

    /// Issue 40, item 5: `NO_PROXY=*` exempts IP literals too (curl's
    /// rule), and a bracketed IPv6 literal is honoured.
    #[test]
    fn a_star_and_bracketed_addresses_are_exempt() {
        let star = Proxy::url("http://127.0.0.1:3128")
            .expect("valid")
            .with_no_proxy("*")
            .routes();
        for direct in [
            "http://127.0.0.1:9/mcp",
            "https://127.0.0.1:9/mcp",
            "http://[::1]:9/mcp",
            "https://mcp.example.com/",
        ] {
            assert!(star.route(&uri(direct)).expect("ok").is_none(), "{direct}");
        }
        let bracketed = Proxy::url("http://127.0.0.1:3128")
            .expect("valid")
            .with_no_proxy("[::1], 127.0.0.2")
            .routes();
        for direct in ["http://[::1]:9/mcp", "https://127.0.0.2/"] {
            let route = bracketed.route(&uri(direct)).expect("ok");
            assert!(route.is_none(), "{direct}");
        }
        assert!(bracketed
            .route(&uri("http://127.0.0.1:9/"))
            .expect("ok")
            .is_some());
    }

    /// Issue 40, item 15: a port outside 1..=65535 is a configuration
    /// error, not a proxy that fails at connect.
    #[test]
    fn a_port_out_of_range_is_unusable() {
        for value in [
            "http://127.0.0.1:99999",
            "http://127.0.0.1:0",
            "127.0.0.1:70000",
        ] {
            let error = Proxy::url(value).expect_err(value);
            assert_eq!(error.problem, ProxyUrlProblem::BadPort, "{value}");
        }
        assert!(Proxy::url("http://[::1]:3128").is_ok());
        assert!(Proxy::url("http://proxy").is_ok());
    }

    #[test]
    fn credentials_become_basic_proxy_authorization() {
        let routes = Proxy::url("http://alice:s%3Acret@127.0.0.1:3128")
            .expect("valid")
            .routes();
        let via = routes
            .route(&uri("http://a/"))
            .expect("ok")
            .expect("proxied");
        // base64("alice:s:cret")
        assert_eq!(via.basic_auth().expect("auth"), "Basic YWxpY2U6czpjcmV0");
        assert!(via.basic_auth().expect("auth").is_sensitive());
    }

    #[test]
    fn unusable_urls_are_typed_and_never_echoed() {
        for (value, problem) in [
            ("http://user:pw@[::1", ProxyUrlProblem::NotAUrl),
            (
                "https://user:pw@proxy:443",
                ProxyUrlProblem::UnsupportedScheme,
            ),
            (
                "socks5://user:pw@proxy:1080",
                ProxyUrlProblem::UnsupportedScheme,
            ),
            ("http://user:pw@proxy:3128/path", ProxyUrlProblem::HasPath),
            ("http://user:pw@proxy:3128/?q", ProxyUrlProblem::HasPath),
        ] {
            let error = Proxy::url(value).expect_err(value);
            assert_eq!(error.problem, problem, "{value}");
            assert!(!error.to_string().contains("pw"), "{error}");
            assert!(!format!("{error:?}").contains("pw"), "{error:?}");
        }
        let debug = format!(
            "{:?}",
            Proxy::url("http://user:pw@proxy:3128").expect("valid")
        );
        assert!(!debug.contains("pw"), "{debug}");
        // No scheme means http://.
        assert!(Proxy::url("127.0.0.1:3128").is_ok());
    }

    #[test]
    fn an_unusable_setting_fails_its_scheme_only() {
        let routes = Routes::new(
            Some(Ok(("HTTP_PROXY", "http://127.0.0.1:3128".into()))),
            Some(Ok(("HTTPS_PROXY", "ftp://127.0.0.1:21".into()))),
            None,
        );
        assert!(routes.route(&uri("http://a/")).expect("ok").is_some());
        let error = routes.route(&uri("https://a/")).expect_err("unusable");
        assert!(
            matches!(&error, ProxyError::Setting(e) if e.setting == "HTTPS_PROXY"),
            "{error:?}"
        );
        let not_unicode = Routes::new(None, Some(Err("https_proxy")), None);
        assert!(not_unicode.route(&uri("https://a/")).is_err());
    }
}
