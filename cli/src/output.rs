//! What the command prints: a human timeline or JSON lines.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use mcp_connect::client::ClientError;
use mcp_connect::layers::diagnostics::{LifecycleMetrics, StageRecord};
use mcp_connect::layers::{Failure, StageOutcome};
use mcp_connect::protocol::CallToolResult;
use mcp_connect::Session;
use serde_json::{json, Map, Value};

mod shown;
pub(crate) use shown::{shown, shown_lines};

/// Prints stage events as they happen and the final summary.
pub(crate) struct Printer {
    json: bool,
    /// Standard output, or standard error where stdout is the protocol
    /// (`serve --stdio`).
    out: Mutex<Box<dyn Write + Send>>,
    last_attempt: AtomicU32,
    /// The server is reached over a Unix socket (a 421 then gets a hint).
    over_socket: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

/// Where the command connects, as its first line says it.
pub(crate) struct TargetLine<'a> {
    /// The URL (without secrets) or the program.
    pub(crate) shown: &'a str,
    /// The registry name of a server a `server.json` describes.
    pub(crate) registry: Option<&'a str>,
    /// The Unix socket the HTTP goes over.
    pub(crate) socket: Option<&'a std::path::Path>,
    pub(crate) demo: bool,
    pub(crate) proxy: Option<&'a str>,
}

/// Names joined for one human line, each [`shown`] safely.
fn names_shown(names: &[String]) -> String {
    names
        .iter()
        .map(|name| shown(name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// A failure's payload-free fields, as every JSON line writes them.
pub(super) fn failure_json(f: &Failure) -> Value {
    json!({
        "stage": f.stage.as_str(),
        "kind": f.kind.as_str(),
        "http_status": f.http_status,
        "jsonrpc_code": f.jsonrpc_code,
        "cancel_source": f.cancel_source.map(|s| s.as_str()),
    })
}

impl Printer {
    pub(crate) fn new(json: bool) -> Self {
        Self::to(json, Box::new(std::io::stdout()))
    }

    /// The lines on standard error: stdout carries the protocol.
    pub(crate) fn on_stderr(json: bool) -> Self {
        Self::to(json, Box::new(std::io::stderr()))
    }

    fn to(json: bool, out: Box<dyn Write + Send>) -> Self {
        Printer {
            json,
            out: Mutex::new(out),
            last_attempt: AtomicU32::new(1),
            over_socket: Default::default(),
        }
    }

    /// The highest attempt number seen in the stage events.
    pub(crate) fn last_attempt(&self) -> u32 {
        self.last_attempt.load(Ordering::Relaxed)
    }

    pub(crate) fn line(&self, human: &str, json: Value) {
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = if self.json {
            writeln!(out, "{json}")
        } else {
            writeln!(out, "{human}")
        };
    }

    /// The target, and the proxy's address when one is used.
    /// The first line: what is reached, and how (a registry server by its
    /// name, then what starts it; a Unix socket; a proxy).
    pub(crate) fn target(&self, target: &TargetLine<'_>) {
        let note = if target.demo {
            " (built-in demo server)"
        } else {
            ""
        };
        let via = (target.proxy)
            .map(|p| format!(" via proxy {p}"))
            .unwrap_or_default();
        let socket = target
            .socket
            .map(|path| path.to_string_lossy().into_owned());
        let over = (socket.as_deref())
            .map(|path| format!(" over the Unix socket {}", self::shown(path)))
            .unwrap_or_default();
        self.over_socket.store(socket.is_some(), Ordering::Relaxed);
        let what = match target.registry {
            Some(name) => format!("{} ({})", self::shown(name), self::shown(target.shown)),
            None => self::shown(target.shown).into_owned(),
        };
        self.line(
            &format!("connecting to {what}{note}{over}{via}"),
            json!({ "event": "target", "target": target.shown, "registry": target.registry,
                    "socket": socket, "demo": target.demo, "proxy": target.proxy }),
        );
    }

    pub(crate) fn tools(&self, names: &[String]) {
        self.line(
            &format!("tools: {}", names_shown(names)),
            json!({ "event": "tools", "tools": names }),
        );
    }

    /// A tool left out of the listing: its name (the user asked for the
    /// names) and the rule it broke.
    pub(crate) fn excluded_tool(&self, name: &str, reason: &dyn std::fmt::Display) {
        self.line(
            &format!("excluded tool {}: {reason}", shown(name)),
            json!({ "event": "excluded_tool", "tool": name, "reason": reason.to_string() }),
        );
    }

    pub(crate) fn listing(&self, what: &str, names: &[String]) {
        self.line(
            &format!("{what}: {}", names_shown(names)),
            json!({ "event": what, what: names }),
        );
    }

    /// A progress report of a call: numbers only.
    pub(crate) fn progress(&self, progress: f64, total: Option<f64>) {
        let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
        self.line(
            &format!("progress {progress}{of}"),
            json!({ "event": "progress", "progress": progress, "total": total }),
        );
    }

    /// A server notification: its method only, when it is one of the
    /// protocol's (anything else reads `unknown`), never its params.
    pub(crate) fn notification(&self, method: &str) {
        let known = method.len() <= 64
            && method.starts_with("notifications/")
            && method
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'/' || b == b'_');
        let method = if known { method } else { "unknown" };
        self.line(
            &format!("notification {method}"),
            json!({ "event": "notification", "method": method }),
        );
    }

    /// A call the group routed by catalogue name: its server, the answer
    /// or the whole error chain.
    pub(crate) fn routed_call(
        &self,
        n: u32,
        name: &str,
        route: Option<(&str, u64)>,
        result: &Result<mcp_connect::protocol::CallToolResult, mcp_connect::group::GroupError>,
    ) {
        let (server, generation) = route.map_or((None, None), |(s, g)| (Some(s), Some(g)));
        let on = route
            .map(|(server, generation)| format!(" ({}, session {generation})", shown(server)))
            .unwrap_or_default();
        match result {
            Ok(result) => {
                let outcome = if result.is_error { "tool error: " } else { "" };
                self.line(
                    &format!(
                        "call {n} {}: {outcome}{}{on}",
                        shown(name),
                        shown_lines(&result.text())
                    ),
                    json!({ "event": "call", "n": n, "tool": name, "ok": !result.is_error,
                            "text": result.text(), "server": server, "generation": generation }),
                )
            }
            Err(error) => {
                let failure = error.failure();
                let report = chain(error);
                self.line(
                    &format!("call {n} {}: failed: {report}{on}", shown(name)),
                    json!({ "event": "call", "n": n, "tool": name, "ok": false,
                            "server": server, "generation": generation,
                            "failure": failure_json(&failure), "error": report }),
                )
            }
        }
    }

    pub(crate) fn call(
        &self,
        n: u32,
        name: &str,
        result: &Result<CallToolResult, ClientError>,
        generation: u64,
        reconnected: bool,
    ) {
        let note = if reconnected { ", reconnected" } else { "" };
        match result {
            Ok(result) => self.line(
                &format!(
                    "call {n} {}: {}{} (session {generation}{note})",
                    shown(name),
                    if result.is_error { "tool error: " } else { "" },
                    shown_lines(&result.text()),
                ),
                json!({
                    "event": "call", "n": n, "tool": name, "ok": !result.is_error, "text": result.text(),
                    "generation": generation, "http_status": null, "reconnected": reconnected,
                }),
            ),
            Err(error) => {
                let failure = error.failure();
                let report = chain(error);
                self.line(
                    &format!(
                        "call {n} {}: failed: {report} (session {generation}{note})",
                        shown(name),
                    ),
                    json!({
                        "event": "call", "n": n, "tool": name, "ok": false,
                        "generation": generation, "http_status": failure.http_status,
                        "reconnected": reconnected, "session_lost": error.is_session_lost(),
                        "failure": failure_json(&failure), "error": report,
                    }),
                )
            }
        }
    }

    pub(crate) fn summary(
        &self,
        outcome: Result<&Session, (&(dyn std::error::Error + 'static), Failure)>,
        elapsed: Duration,
        http_requests: u64,
        attempts: u32,
        proxy: Option<&str>,
        signal: Option<&'static str>,
    ) {
        let mut summary = Map::new();
        summary.insert("event".into(), "summary".into());
        summary.insert("signal".into(), signal.into());
        summary.insert("attempts".into(), attempts.into());
        summary.insert("elapsed_ms".into(), millis(elapsed).into());
        summary.insert("http_requests".into(), http_requests.into());
        summary.insert("proxy".into(), proxy.into());
        let via = proxy
            .map(|p| format!(", via proxy {p}"))
            .unwrap_or_default();
        let human = match outcome {
            Ok(session) => established(&mut summary, session, &via, http_requests, elapsed),
            Err((error, failure)) => {
                summary.insert("outcome".into(), "failed".into());
                summary.insert("failure".into(), failure_json(&failure));
                // The report: every cause, payload-free like every error
                // of the library (no server text, no secret).
                summary.insert("error".into(), chain(error).into());
                let mut text = format!("failed: {}", shown(&error.to_string()));
                let mut source = error.source();
                while let Some(cause) = source {
                    text.push_str(&format!("\n  caused by: {}", shown(&cause.to_string())));
                    source = cause.source();
                }
                if let Some((problem, hint)) = tls_hint(error) {
                    summary.insert("tls_problem".into(), problem.into());
                    summary.insert("hint".into(), hint.into());
                    text.push_str(&format!("\nhint: {hint}"));
                } else if failure.http_status == Some(421)
                    && self.over_socket.load(Ordering::Relaxed)
                {
                    let hint = "the server refused the URL's host (421 Misdirected Request): over a Unix socket the URL still gives the Host header the server checks; give the host it expects";
                    summary.insert("hint".into(), hint.into());
                    text.push_str(&format!("\nhint: {hint}"));
                }
                text.push_str(&format!(
                    "\n{http_requests} HTTP requests{via}, {:.3} ms",
                    millis(elapsed)
                ));
                text
            }
        };
        let human = match signal {
            Some(signal) => {
                format!("{human}\ninterrupted by {signal}")
            }
            None => human,
        };
        self.line(&human, Value::Object(summary));
    }
}

/// The summary of an established session: its fields into `summary`, its
/// line returned.
fn established(
    summary: &mut Map<String, Value>,
    session: &Session,
    via: &str,
    http_requests: u64,
    elapsed: Duration,
) -> String {
    summary.insert("outcome".into(), "established".into());
    summary.insert("era".into(), session.era().as_str().into());
    summary.insert(
        "protocol_version".into(),
        session.protocol_version().as_str().into(),
    );
    summary.insert("transport".into(), session.transport_kind().as_str().into());
    let info = session.server_info();
    summary.insert(
        "server".into(),
        json!({ "name": info.name, "version": info.version }),
    );
    format!(
        "established: {} era, protocol {}, over {}{via}, server {} {}, {} HTTP requests, {:.3} ms",
        session.era(),
        session.protocol_version(),
        session.transport_kind(),
        shown(&info.name),
        shown(&info.version),
        http_requests,
        millis(elapsed)
    )
}

/// The command's events are the diagnostics layer's values.
impl LifecycleMetrics for Printer {
    fn on_stage(&self, record: &StageRecord) {
        let event = &record.event;
        self.last_attempt
            .fetch_max(event.attempt, Ordering::Relaxed);
        let (word, failure) = match &event.outcome {
            StageOutcome::Started => ("started", None),
            StageOutcome::Succeeded => ("ok", None),
            StageOutcome::Failed(failure) => ("failed", Some(failure)),
            _ => ("other", None),
        };
        let mut human = format!(
            "{:>10.3} ms  attempt {}  {:<12} {}",
            millis(event.elapsed),
            event.attempt,
            event.stage.as_str(),
            word
        );
        let mut record = json!({
            "event": "stage",
            "attempt": event.attempt,
            "stage": event.stage.as_str(),
            "outcome": if word == "ok" { "succeeded" } else { word },
            "elapsed_ms": millis(event.elapsed),
            "remaining_ms": record.remaining.map(millis),
            "transport": record.label,
        });
        if let Some(failure) = failure {
            human.push_str(&format!(": {}", failure.kind));
            if let Some(status) = failure.http_status {
                human.push_str(&format!(", HTTP {status}"));
            }
            if let Some(code) = failure.jsonrpc_code {
                human.push_str(&format!(", JSON-RPC {code}"));
            }
            if let Some(source) = failure.cancel_source {
                human.push_str(&format!(", by {source}"));
            }
            record["failure"] = failure_json(failure);
        }
        self.line(&human, record);
    }
}

/// What TLS refused in `error`, and the options that fix it: the hint a
/// user on a corporate machine needs first.
#[cfg(feature = "rustls")]
pub(super) fn tls_hint(
    error: &(dyn std::error::Error + 'static),
) -> Option<(&'static str, &'static str)> {
    use mcp_connect::transport::{tls_problem, TlsProblem};
    let problem = tls_problem(error)?;
    let hint = match problem {
        TlsProblem::UnknownIssuer => {
            "the server's certificate is from a CA not trusted here: pass --cacert FILE with that CA, or set SSL_CERT_FILE or SSL_CERT_DIR"
        }
        TlsProblem::NameMismatch => {
            "the server's certificate is not for this host name: use the name it was issued for"
        }
        TlsProblem::Expired => {
            "the server's certificate has expired or is not valid yet (check this machine's clock)"
        }
        TlsProblem::ClientCertificateRequired => {
            "the server wants a client certificate it accepts: pass --cert FILE --key FILE"
        }
        _ => return None,
    };
    Some((problem.as_str(), hint))
}

/// Without TLS there is nothing TLS refused.
#[cfg(not(feature = "rustls"))]
pub(super) fn tls_hint(
    _: &(dyn std::error::Error + 'static),
) -> Option<(&'static str, &'static str)> {
    None
}

/// An error and its causes on one line, each cause after a colon.
pub(super) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    // Escaped like every other text a server or a document chose: an
    // error may name a registry document's variable or a bundle's file.
    shown(&mcp_connect::error::report::Report::new(error).to_string()).into_owned()
}
