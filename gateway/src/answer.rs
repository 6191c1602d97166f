//! Each request's answer: the handshake's (`initialize`, `server/discover`)
//! and `ping` the gateway's own; the listings the group's catalogue; a
//! call, a prompt or a resource routed to the member the catalogue names
//! and its answer forwarded as it came.
//!
//! A member that is down leaves the others' items listed (the catalogue
//! keeps what each usable member listed); only when no member is usable
//! or starting is a listing an error, so a client never mistakes an
//! outage for an empty server.

use std::sync::Arc;

use mcp_connect::client::ClientError;
use mcp_connect::group::{Catalogue, GroupError, HealthState, ServerGroup};
use mcp_connect::protocol::{codes, meta_keys, methods, ProtocolVersion, RawRequest, RequestKind};
use mcp_connect::session::{Call, RequestOptions};
use serde_json::{json, Map, Value};

use crate::downstream::Downstream;
use crate::governance::{Caller, Governance};
use crate::relay;
use crate::reply::RpcFailure;
use crate::SessionClients;

/// Where a request goes: the group, and when the gateway makes each
/// downstream session clients of its own, the session and the function
/// that makes them.
#[derive(Clone, Copy)]
pub(crate) struct Upstream<'a> {
    pub(crate) group: &'a ServerGroup,
    pub(crate) session: Option<(&'a Arc<Downstream>, &'a SessionClients)>,
    /// Who asks: what the gateway's policy, quotas and audit see.
    pub(crate) caller: Caller<'a>,
    pub(crate) governance: &'a Governance,
}

pub(crate) use crate::reply::Answer;

/// The server's capabilities in a 2025 session.
pub(crate) fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": true },
        "prompts": { "listChanged": true },
        "resources": { "listChanged": true, "subscribe": true },
        "completions": {},
        "logging": {},
    })
}

/// The server's capabilities in the 2026-07-28 era, which has neither
/// resource subscriptions nor logging levels; list changes come on a
/// `subscriptions/listen` stream.
fn modern_capabilities() -> Value {
    json!({
        "tools": { "listChanged": true },
        "prompts": { "listChanged": true },
        "resources": { "listChanged": true },
        "completions": {},
    })
}

fn raw(value: &Value) -> Answer {
    serde_json::value::to_raw_value(value)
        .map_err(|_| RpcFailure::new(codes::INTERNAL_ERROR, "the answer could not be written"))
}

/// `initialize`'s result under `version`.
pub(crate) fn initialized(version: &str, name: &str, server_version: &str) -> Answer {
    raw(&json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": { "name": name, "version": server_version },
    }))
}

/// The version `initialize` asked for when this crate speaks it (a 2025
/// one), else the latest 2025 one.
pub(crate) fn negotiated(params: Option<&Value>) -> ProtocolVersion {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .map(ProtocolVersion::new);
    match asked {
        Some(v) if v.is_supported() && v != ProtocolVersion::LATEST_MODERN => v,
        _ => ProtocolVersion::LATEST_LEGACY,
    }
}

/// `server/discover`'s result.
pub(crate) fn discovered(name: &str, server_version: &str) -> Answer {
    let mut meta = Map::new();
    meta.insert(
        meta_keys::SERVER_INFO.into(),
        json!({ "name": name, "version": server_version }),
    );
    raw(&json!({
        "supportedVersions": [ProtocolVersion::LATEST_MODERN.as_str()],
        "capabilities": modern_capabilities(),
        "resultType": "complete",
        "_meta": meta,
    }))
}

/// The answer to any request but the handshake's; `options` carry the
/// request's progress callback and cancellation to the member.
pub(crate) async fn answer(
    upstream: Upstream<'_>,
    method: &str,
    params: Option<Value>,
    options: RequestOptions,
) -> Answer {
    let kind = RequestKind::of(method);
    let governance = upstream.governance;
    if governance.is_off() {
        return answered(upstream, kind, method, params, options).await;
    }
    // Boxed: an ungoverned request's future stays as small as it was.
    let gate = governance.gate(upstream.group, upstream.caller, kind, params.as_ref());
    let gate = match Box::pin(gate).await {
        Ok(gate) => gate,
        Err(answer) => return answer,
    };
    gate.finish(answered(upstream, kind, method, params, options).await)
}

async fn answered(
    upstream: Upstream<'_>,
    kind: RequestKind,
    method: &str,
    params: Option<Value>,
    options: RequestOptions,
) -> Answer {
    match kind {
        RequestKind::Ping => raw(&json!({})),
        RequestKind::ListTools
        | RequestKind::ListPrompts
        | RequestKind::ListResources
        | RequestKind::ListResourceTemplates => listing(upstream.group, kind),
        // The level is the session's own (`crate::relay` filters by it).
        RequestKind::SetLoggingLevel => raw(&json!({})),
        RequestKind::Complete => complete(upstream.group, params).await,
        RequestKind::CallTool
        | RequestKind::GetPrompt
        | RequestKind::ReadResource
        | RequestKind::Subscribe
        | RequestKind::Unsubscribe => {
            let mut params = params;
            if let Some(answer) = crate::discovery::answered(upstream.group, kind, &mut params) {
                return answer;
            }
            routed(upstream, kind, method, params, options).await
        }
        _ => Err(RpcFailure::new(codes::METHOD_NOT_FOUND, "Method not found")),
    }
}

/// A request the catalogue routes: through the session's own client of
/// the member when there is one, else through the group.
async fn routed(
    upstream: Upstream<'_>,
    kind: RequestKind,
    method: &str,
    params: Option<Value>,
    options: RequestOptions,
) -> Answer {
    let Some((down, make)) = upstream.session else {
        let call = Call::new(RawRequest::new(method.to_owned(), params)).with_options(options);
        return (upstream.group.send(call).await).map_err(|error| routed_failure(&error));
    };
    let mut params = params.unwrap_or_else(|| json!({}));
    let server = route(&upstream.group.catalogue(), kind, &mut params)?;
    let usable = (upstream.group.health(&server)).is_some_and(|h| h.state.is_usable());
    if !usable {
        return Err(RpcFailure::new(
            codes::INTERNAL_ERROR,
            "the server is not usable now",
        ));
    }
    let client = down.client(&server, || make(&server, relay::session_relay(down)));
    let Some(client) = client else {
        return Err(RpcFailure::new(
            codes::INTERNAL_ERROR,
            "the server is not usable now",
        ));
    };
    let request = RawRequest::new(method.to_owned(), Some(params));
    (client.send(Call::new(request).with_options(options)).await)
        .map_err(|error| client_failure(&error))
}

/// The member a request goes to, its target renamed as that member named
/// it (the group's own routing, for a session's own clients).
pub(crate) fn route(
    catalogue: &Catalogue,
    kind: RequestKind,
    params: &mut Value,
) -> Result<Arc<str>, RpcFailure> {
    let field = if kind == RequestKind::CallTool || kind == RequestKind::GetPrompt {
        "name"
    } else {
        "uri"
    };
    let target = params
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (server, own) = match kind {
        RequestKind::CallTool => {
            let tool = catalogue
                .tool(&target)
                .ok_or_else(|| RpcFailure::new(codes::INVALID_PARAMS, "Unknown tool"))?;
            (Arc::clone(&tool.server), tool.item.name.clone())
        }
        RequestKind::GetPrompt => {
            let prompt = catalogue
                .prompt(&target)
                .ok_or_else(|| RpcFailure::new(codes::INVALID_PARAMS, "Unknown prompt"))?;
            (Arc::clone(&prompt.server), prompt.item.name.clone())
        }
        _ => {
            let mut servers = catalogue.resource_servers(&target);
            return match servers.len() {
                0 => Err(RpcFailure::new(
                    codes::RESOURCE_NOT_FOUND,
                    "Resource not found",
                )),
                1 => Ok(servers.remove(0)),
                _ => Err(RpcFailure::new(
                    codes::INVALID_PARAMS,
                    "the resource is offered by more than one server",
                )),
            };
        }
    };
    params[field] = Value::String(own);
    Ok(server)
}

/// What a member's client's failure tells the client: the member's own
/// JSON-RPC error as it sent it, else the failure's kind in the gateway's
/// words.
pub(crate) fn client_failure(error: &ClientError) -> RpcFailure {
    match error.call_error().and_then(|e| e.rpc_error()) {
        Some(rpc) => RpcFailure {
            code: rpc.code(),
            message: rpc.message().to_owned(),
            data: rpc.data().cloned(),
        },
        None => RpcFailure::new(
            codes::INTERNAL_ERROR,
            format!("the server failed: {}", error.failure().kind.as_str()),
        ),
    }
}

/// `completion/complete`, sent to the member whose prompt or resource
/// template it names (a prompt under the name that member gave it).
async fn complete(group: &ServerGroup, params: Option<Value>) -> Answer {
    let unknown = || RpcFailure::new(codes::INVALID_PARAMS, "Unknown reference");
    let mut params = params.ok_or_else(unknown)?;
    let reference = params.get_mut("ref").ok_or_else(unknown)?;
    let catalogue = group.catalogue();
    let server = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = reference
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let prompt = catalogue.prompt(name).ok_or_else(unknown)?;
            reference["name"] = Value::String(prompt.item.name.clone());
            prompt.server.clone()
        }
        Some("ref/resource") => {
            let uri = reference
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default();
            (catalogue.resource_templates().iter())
                .find(|t| t.item.uri_template == uri)
                .map(|t| t.server.clone())
                .or_else(|| catalogue.resource_servers(uri).into_iter().next())
                .ok_or_else(unknown)?
        }
        _ => return Err(unknown()),
    };
    let client = group.client(&server).ok_or_else(unknown)?;
    let request = RawRequest::new(methods::COMPLETION_COMPLETE.to_owned(), Some(params));
    client.send(request).await.map_err(|error| {
        match error.call_error().and_then(|e| e.rpc_error()) {
            Some(rpc) => RpcFailure {
                code: rpc.code(),
                message: rpc.message().to_owned(),
                data: rpc.data().cloned(),
            },
            None => RpcFailure::new(codes::INTERNAL_ERROR, "the server is not usable now"),
        }
    })
}

/// A listing from the catalogue: every usable member's items, tools and
/// prompts under their catalogue names.
pub(crate) fn listing(group: &ServerGroup, kind: RequestKind) -> Answer {
    // An error only when every member has settled and none is usable: a
    // member still starting is not an outage (its items show once it is
    // ready).
    let healths = group.healths();
    let hope = |state: &HealthState| state.is_usable() || state.is_connecting();
    if !healths.is_empty() && !healths.iter().any(|(_, h)| hope(&h.state)) {
        return Err(RpcFailure::new(
            codes::INTERNAL_ERROR,
            "no server behind the gateway is usable now",
        ));
    }
    let catalogue = group.catalogue();
    let renamed = |item: Value, name: &str| match item {
        Value::Object(mut fields) => {
            fields.insert("name".into(), Value::String(name.to_owned()));
            Value::Object(fields)
        }
        other => other,
    };
    let (key, items): (&str, Vec<Value>) = match kind {
        RequestKind::ListTools => (
            "tools",
            (group.shown_tools().tools().iter())
                .map(|t| renamed(serde_json::to_value(&*t.tool).unwrap_or_default(), &t.name))
                .collect(),
        ),
        RequestKind::ListPrompts => (
            "prompts",
            (catalogue.prompts().iter())
                .map(|p| renamed(serde_json::to_value(&*p.item).unwrap_or_default(), &p.name))
                .collect(),
        ),
        RequestKind::ListResources => (
            "resources",
            (catalogue.resources().iter())
                .map(|r| serde_json::to_value(&*r.item).unwrap_or_default())
                .collect(),
        ),
        _ => (
            "resourceTemplates",
            (catalogue.resource_templates().iter())
                .map(|r| serde_json::to_value(&*r.item).unwrap_or_default())
                .collect(),
        ),
    };
    raw(&json!({ key: items }))
}

/// What a routed request's failure tells the client: a member's own
/// JSON-RPC error as it sent it; the gateway's words for the rest (its
/// kind, never a member's text or an address).
fn routed_failure(error: &GroupError) -> RpcFailure {
    match error {
        GroupError::UnknownTool { .. } => RpcFailure::new(codes::INVALID_PARAMS, "Unknown tool"),
        GroupError::UnknownPrompt { .. } => {
            RpcFailure::new(codes::INVALID_PARAMS, "Unknown prompt")
        }
        GroupError::UnknownResource => {
            RpcFailure::new(codes::RESOURCE_NOT_FOUND, "Resource not found")
        }
        GroupError::AmbiguousResource { .. } => RpcFailure::new(
            codes::INVALID_PARAMS,
            "the resource is offered by more than one server",
        ),
        GroupError::Call { error, .. } => client_failure(error),
        GroupError::NotUsable { .. } | GroupError::NoneUsable => {
            RpcFailure::new(codes::INTERNAL_ERROR, "the server is not usable now")
        }
        _ => RpcFailure::new(codes::INTERNAL_ERROR, "the request could not be routed"),
    }
}
