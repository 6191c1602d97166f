//! The request an entry's `command` (stdio: `args`, `env`, `cwd`) or
//! `url` (remote: `headers`, Codex's header fields, `socket`, `proxy`,
//! `cacert`) describes, every value's `${...}` references expanded.
//!
//! `proxy` (a proxy URL, or `false` for none) and `cacert` (a PEM file of
//! CA certificates trusted beside the default roots, as the command's
//! `--cacert`) give the server its own HTTP client: one server behind a
//! corporate proxy or a private CA among many that are not. Neither
//! selects the server (the URL does), so neither joins the era cache's key;
//! both are in the entry's revision, so a reload that changes them
//! replaces the member.

use serde_json::{Map, Value};

use super::expand::{expand, Variables};
use super::fields::{list, strings, text};
use super::{codex, EntryProblem};
use crate::request::TransportMode;
use crate::transport::StdioCommand;
use crate::ConnectRequest;

pub(super) fn stdio(
    command: &str,
    entry: &Map<String, Value>,
    env: &Variables<'_>,
) -> Result<ConnectRequest, EntryProblem> {
    let mut stdio = StdioCommand::new(expand(command, env)?);
    for arg in list(entry, "args")? {
        stdio = stdio.args([expand(arg, env)?]);
    }
    for (key, value) in environment(entry, env)? {
        stdio = stdio.env(key, value);
    }
    if let Some(cwd) = text(entry, "cwd")? {
        stdio = stdio.current_dir(expand(cwd, env)?);
    }
    Ok(ConnectRequest::stdio(stdio))
}

/// The entry's `env`, each value expanded.
pub(super) fn environment(
    entry: &Map<String, Value>,
    env: &Variables<'_>,
) -> Result<Vec<(String, String)>, EntryProblem> {
    (strings(entry, "env")?.into_iter())
        .map(|(key, value)| Ok((key.to_owned(), expand(value, env)?)))
        .collect()
}

pub(super) fn remote(
    url: &str,
    mode: TransportMode,
    entry: &Map<String, Value>,
    env: &Variables<'_>,
) -> Result<ConnectRequest, EntryProblem> {
    let url = expand(url, env)?;
    let mut request = ConnectRequest::http(&url).map_err(invalid("url"))?;
    for (name, value) in strings(entry, "headers")? {
        request = request
            .with_header(name, &expand(value, env)?)
            .map_err(invalid("headers"))?;
    }
    for (name, value) in codex::headers(entry)? {
        request = request
            .with_header(&name, &expand(&value, env)?)
            .map_err(invalid("http_headers"))?;
    }
    if let Some(socket) = text(entry, "socket")? {
        if let Some(field) = OWN_CLIENT.iter().find(|field| entry.contains_key(**field)) {
            return Err(EntryProblem::NotOverSocket { field });
        }
        // Nothing speaks TLS over the socket: an https URL there would
        // pass every check and fail at the first byte.
        if request.target().http_url().map(http::Uri::scheme_str) != Some(Some("http")) {
            return Err(EntryProblem::SocketNeedsHttp);
        }
        request = request.with_unix_socket(expand(socket, env)?);
    }
    if let Some(client) = own_client(entry, env)? {
        request = request.with_http_client(client);
    }
    Ok(request.with_mode(mode))
}

/// The fields that give a remote server its own HTTP client.
pub(super) const OWN_CLIENT: [&str; 2] = ["proxy", "cacert"];

/// The entry's own HTTP client, when it says `proxy` or `cacert`.
fn own_client(
    entry: &Map<String, Value>,
    env: &Variables<'_>,
) -> Result<Option<crate::transport::HttpClient>, EntryProblem> {
    use crate::transport::{HttpClient, Proxy};
    let mut builder = HttpClient::builder();
    let proxy = entry.get("proxy");
    match proxy {
        None => {}
        Some(Value::Bool(false)) => builder = builder.proxy(Proxy::none()),
        Some(Value::String(url)) => {
            let proxy = Proxy::url(&expand(url, env)?).map_err(EntryProblem::BadProxy)?;
            builder = builder.proxy(proxy);
        }
        Some(_) => return Err(EntryProblem::WrongType { field: "proxy" }),
    }
    let cacert = text(entry, "cacert")?;
    if let Some(path) = cacert {
        let pem = std::fs::read(expand(path, env)?).map_err(EntryProblem::CaFile)?;
        builder = trusting(builder, &pem)?;
    }
    Ok((proxy.is_some() || cacert.is_some()).then(|| builder.build()))
}

#[cfg(feature = "rustls")]
fn trusting(
    builder: crate::transport::HttpClientBuilder,
    pem: &[u8],
) -> Result<crate::transport::HttpClientBuilder, EntryProblem> {
    builder
        .add_root_certificates_pem(pem)
        .map_err(EntryProblem::BadCa)
}

#[cfg(not(feature = "rustls"))]
fn trusting(
    _: crate::transport::HttpClientBuilder,
    _: &[u8],
) -> Result<crate::transport::HttpClientBuilder, EntryProblem> {
    Err(EntryProblem::NoTls)
}

/// A problem [`ConnectRequest`] found with what `field` gave.
pub(super) fn invalid(field: &'static str) -> impl Fn(crate::Error) -> EntryProblem {
    move |error| match error.into_kind() {
        crate::ErrorKind::Config(source) => EntryProblem::Invalid { field, source },
        // Never reached: a request's builders and `validate` fail with
        // configuration errors only, found before any I/O.
        _ => EntryProblem::Invalid {
            field,
            source: crate::error::ConfigError::Url,
        },
    }
}
