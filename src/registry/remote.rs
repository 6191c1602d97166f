//! A remote of a `server.json`: its URL and headers, their `{name}`
//! template variables filled.
//!
//! A template variable is filled only when the document declares it (the
//! remote's `variables` for the URL, the header's own `variables` for a
//! header), and only from what the caller answers for it (a value the
//! user gave for that name: a config entry's `env`, an input a person
//! typed) or from its declared `default`: never from this process's
//! environment, which the document would otherwise read by naming any
//! variable (a `{AWS_SECRET_ACCESS_KEY}` in a URL sent to its server).

use serde_json::Value;

use super::launch::Refusal;
use super::{list, text};
use crate::request::{ConnectRequest, TransportMode};

/// What a remote gives.
pub(super) enum Remote {
    /// A request for it.
    Usable(ConnectRequest),
    /// A transport or URL this client does not use.
    Unusable,
    /// Required variables nothing answers.
    Missing(Vec<String>),
    /// The document asked what the launcher does not do.
    Refused(Refusal),
}

/// A remote's request, its URL and headers filled.
pub(super) fn request(remote: &Value, answer: &dyn Fn(&str) -> Option<String>) -> Remote {
    let mode = match text(remote, "type") {
        Some("streamable-http") => TransportMode::StreamableHttp,
        Some("sse") => TransportMode::Sse,
        _ => return Remote::Unusable,
    };
    let Some(url) = text(remote, "url") else {
        return Remote::Unusable;
    };
    let mut missing = Vec::new();
    let url = match fill(url, remote.get("variables"), answer) {
        Ok(Filled::Done(url)) => url,
        Ok(Filled::Missing(names)) => {
            missing.extend(names);
            String::new()
        }
        Err(refusal) => return Remote::Refused(refusal),
    };
    let mut headers = Vec::new();
    for header in list(remote, "headers") {
        let (Some(name), Some(value)) = (text(header, "name"), text(header, "value")) else {
            continue;
        };
        match fill(value, header.get("variables"), answer) {
            Ok(Filled::Done(value)) => headers.push((name, value)),
            // A header the server needs, that cannot be filled: not usable.
            Ok(Filled::Missing(names)) if header.get("isRequired") == Some(&Value::Bool(true)) => {
                missing.extend(names)
            }
            Ok(Filled::Missing(_)) => {}
            Err(refusal) if header.get("isRequired") == Some(&Value::Bool(true)) => {
                return Remote::Refused(refusal)
            }
            // An optional header the document cannot fill as it may: left out.
            Err(_) => {}
        }
    }
    if !missing.is_empty() {
        missing.dedup();
        return Remote::Missing(missing);
    }
    let Ok(mut request) = ConnectRequest::http(&url) else {
        return Remote::Unusable;
    };
    for (name, value) in headers {
        match request.with_header(name, &value) {
            Ok(with) => request = with,
            Err(_) => return Remote::Unusable,
        }
    }
    Remote::Usable(request.with_mode(mode))
}

/// A template, filled or not.
enum Filled {
    Done(String),
    /// The declared variables with neither an answer nor a default.
    Missing(Vec<String>),
}

/// `template` with each `{name}` replaced by the answer for `name`, else
/// its declared default. A name the template uses without declaring it
/// refuses the remote. The value is the user's (a tenant, a token): never
/// printed.
fn fill(
    template: &str,
    variables: Option<&Value>,
    answer: &dyn Fn(&str) -> Option<String>,
) -> Result<Filled, Refusal> {
    let mut out = String::with_capacity(template.len());
    let mut missing = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + close];
        if !is_template_name(name) {
            return Err(Refusal::VariableName);
        }
        let Some(declared) = variables.and_then(|v| v.get(name)) else {
            return Err(Refusal::UndeclaredVariable {
                variable: name.to_owned(),
            });
        };
        let default = || text(declared, "default").map(str::to_owned);
        match answer(name).or_else(default) {
            Some(value) => {
                out.push_str(&rest[..open]);
                out.push_str(&value);
            }
            None => missing.push(name.to_owned()),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(match missing.is_empty() {
        true => Filled::Done(out),
        false => Filled::Missing(missing),
    })
}

/// A template variable's name: letters, digits, `_`, `.`, `-`; at most 128.
fn is_template_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}
