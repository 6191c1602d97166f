//! A request's configuration ([`Settings`]): what every attempt and every
//! session made from one request share, held behind one `Arc` so that
//! cloning a request (per attempt, per reconnect) copies none of it.

use std::sync::Arc;

use serde_json::Value;

use super::{Limits, TransportMode, VersionPolicy};
use crate::era_cache::EraCache;
use crate::inbound::{ClientHandler, Inbound, NotificationSender};
use crate::session::ClientIdentity;

/// A request's configuration: what every attempt and every session made
/// from it share.
#[derive(Clone)]
pub(super) struct Settings {
    pub(super) mode: TransportMode,
    pub(super) versions: VersionPolicy,
    pub(super) client: Arc<ClientIdentity>,
    pub(super) limits: Limits,
    pub(super) probe_timeout_is_legacy: bool,
    pub(super) era_cache: Option<EraCache>,
    /// The 2026-07-28 response cache, shared by every session made.
    pub(super) response_cache: Option<crate::response_cache::ResponseCache>,
    /// The capabilities the caller set, before the handler's are added.
    pub(super) declared: Value,
    pub(super) handler: ClientHandler,
    pub(super) listener: Option<NotificationSender>,
    /// The server's name for the application (notifications carry it).
    pub(super) name: Arc<str>,
    /// Made from `handler` and `listener`; shared by every attempt and
    /// every session made from this request.
    pub(super) inbound: Arc<Inbound>,
    /// How to authorize when the server asks (HTTP targets).
    pub(super) auth: Option<crate::auth::Authorization>,
    /// This request's own HTTP client, instead of the connector's.
    pub(super) http: Option<crate::transport::HttpClient>,
    /// Spans and metrics for what this request makes (feature `otel`).
    pub(super) telemetry: Option<crate::telemetry::Telemetry>,
}
