//! One audit record per tool call: who called which server's tool, what
//! the policy and the quotas said, how it ended, how long it took and how
//! large it was. Never the arguments or the result, except the argument
//! fields the gateway is told to keep ([`GatewayBuilder::audit_arguments`](crate::GatewayBuilder::audit_arguments)).
//!
//! Records go to an [`AuditSink`]: [`JsonLines`] writes one JSON object a
//! line to a file or to stdout, from a thread of its own, so a slow disk
//! never holds a call; a sink of the application's own (an OpenTelemetry
//! log exporter, a queue) implements the trait.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::policy::Decision;
use crate::quota::QuotaDecision;
use crate::Principal;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The tool answered with a result.
    Result,
    /// The tool answered with a result that says it failed (`isError`).
    ToolError,
    /// The server or the gateway answered with a JSON-RPC error.
    Error,
    /// The policy refused it (or nobody approved it): never sent.
    Denied,
    /// A quota refused it: never sent.
    Throttled,
}

impl Outcome {
    /// Its name in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::Throttled => "throttled",
        }
    }
}

/// One call's record.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call arrived.
    pub time: SystemTime,
    /// Who called (`None`: nobody was authenticated).
    pub principal: Option<Principal>,
    /// The member the tool belongs to (`None`: no such tool).
    pub server: Option<String>,
    /// The tool's exposed name.
    pub tool: String,
    /// The policy's decision (`None`: no policy).
    pub decision: Option<Decision>,
    /// What the quotas said.
    pub quota: QuotaDecision,
    /// How it ended.
    pub outcome: Outcome,
    /// From its arrival to its answer.
    pub duration: Duration,
    /// The request's arguments, in bytes of JSON.
    pub request_bytes: usize,
    /// The answer, in bytes of JSON.
    pub response_bytes: usize,
    /// The argument fields the gateway was told to keep.
    pub arguments: Map<String, Value>,
}

impl AuditRecord {
    /// The record as one JSON object.
    pub fn to_json(&self) -> Value {
        let time = self.time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut record = json!({
            "time_ms": u64::try_from(time.as_millis()).unwrap_or(u64::MAX),
            "principal": self.principal.as_ref().map(|p| json!({ "issuer": p.issuer(), "subject": p.subject() })),
            "server": self.server,
            "tool": self.tool,
            "decision": self.decision.map(Decision::as_str),
            "quota": self.quota.as_str(),
            "outcome": self.outcome.as_str(),
            "duration_ms": self.duration.as_secs_f64() * 1000.0,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
        });
        if !self.arguments.is_empty() {
            record["arguments"] = Value::Object(self.arguments.clone());
        }
        record
    }
}

/// Where records go. Called on the call's task once it is answered: it
/// must not block.
pub trait AuditSink: Send + Sync + 'static {
    /// Keeps `record`.
    fn record(&self, record: &AuditRecord);
}

impl<F: Fn(&AuditRecord) + Send + Sync + 'static> AuditSink for F {
    fn record(&self, record: &AuditRecord) {
        self(record)
    }
}

/// Records as JSON lines, written by a thread of their own. At most
/// 4,096 records wait for the writer; past that a record is counted as
/// dropped ([`JsonLines::dropped`]) rather than holding a call.
#[derive(Debug, Clone)]
pub struct JsonLines {
    lines: SyncSender<String>,
    dropped: Arc<AtomicU64>,
}

/// How many records wait for the writer.
const WAITING: usize = 4096;

impl JsonLines {
    /// Records appended to `writer` (a file opened for appending, stdout),
    /// flushed after each burst.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        let (lines, waiting) = sync_channel::<String>(WAITING);
        std::thread::Builder::new()
            .name("mcp-connect-audit".into())
            .spawn(move || {
                let mut writer = std::io::BufWriter::new(writer);
                while let Ok(line) = waiting.recv() {
                    let _ = writeln!(writer, "{line}");
                    while let Ok(line) = waiting.try_recv() {
                        let _ = writeln!(writer, "{line}");
                    }
                    let _ = writer.flush();
                }
            })
            .expect("a thread for the audit writer");
        JsonLines {
            lines,
            dropped: Arc::default(),
        }
    }

    /// How many records were dropped because the writer fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl AuditSink for JsonLines {
    fn record(&self, record: &AuditRecord) {
        match self.lines.try_send(record.to_json().to_string()) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
