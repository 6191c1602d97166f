//! Per-user upstream credentials (feature oauth): each 2025 session's own
//! client of a protected member exchanges the caller's token (RFC 8693)
//! at the member's authorization server, through the relay's
//! `caller_token` and `principal`; the member sees each caller as itself
//! with the gateway as the actor, and never the caller's own token.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use mcp_connect::auth::Authorization;
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::testkit::{result, LegacyServer, Recorded, Script, ScriptServer, TokenIssuer};
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use mcp_connect_gateway::{Gateway, ResourceServer};
use serde_json::{json, Value};

use super::{serve_on, LIMIT};

/// Who a bearer JWT names: `sub/act.sub`.
fn who(token: &str) -> String {
    let claims = token.split('.').nth(1).unwrap_or_default();
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(claims);
    let claims: Value = serde_json::from_slice(&claims.unwrap_or_default()).unwrap_or_default();
    format!(
        "{}/{}",
        claims["sub"].as_str().unwrap_or("?"),
        claims["act"]["sub"].as_str().unwrap_or("-")
    )
}

/// A member protected by `issuer`: its one tool `whoami` answers with who
/// the request's token names; every token it saw is kept.
async fn member(issuer: &TokenIssuer, seen: Arc<Mutex<Vec<String>>>) -> ScriptServer {
    let legacy = LegacyServer::new();
    let as_url = issuer.issuer();
    ScriptServer::start(move |r: &Recorded| {
        let base = format!("http://{}", r.header("host").unwrap_or_default());
        let token = r
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "));
        match (r.route(), token) {
            ("/prm", _) => Script::Json(
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [as_url] }),
            ),
            ("/mcp", None) => Script::JsonWith(
                401,
                json!({ "error": "invalid_token" }),
                vec![(
                    "www-authenticate",
                    format!(r#"Bearer resource_metadata="{base}/prm""#),
                )],
            ),
            ("/mcp", Some(token)) => {
                seen.lock().unwrap().push(token.to_owned());
                match r.rpc_method() {
                    "tools/list" => Script::Json(
                        200,
                        result(
                            r,
                            json!({ "tools": [
                        { "name": "whoami", "inputSchema": { "type": "object" } }] }),
                        ),
                    ),
                    "tools/call" => Script::Json(
                        200,
                        result(
                            r,
                            json!({
                        "content": [{ "type": "text", "text": who(token) }] }),
                        ),
                    ),
                    _ => legacy.respond(r),
                }
            }
            _ => Script::Status(404),
        }
    })
    .await
}

#[tokio::test]
async fn each_caller_reaches_the_member_as_itself_through_a_token_exchange() {
    let issuer = TokenIssuer::start().await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let upstream = member(&issuer, Arc::clone(&seen)).await;
    let stack = || {
        EstablishBuilder::new(Connector::new())
            .with_deadline(Duration::from_secs(5))
            .build()
    };
    let upstream_url = upstream.url();
    let pinned = move |auth: Authorization| {
        ConnectRequest::http(&upstream_url)
            .unwrap()
            .with_pin(ProtocolVersion::V2025_11_25)
            .with_authorization(auth)
            .with_name("one")
    };
    // The group lists with the gateway's own credentials.
    let group = ServerGroup::new();
    let own = Authorization::client_credentials("gateway", "canary-secret");
    group.add(Server::new(stack(), pinned(own))).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let at = issuer.issuer().parse().unwrap();
    let server = ResourceServer::jwt(at, &url, HttpClient::default_client());
    // Each session's own client acts for its caller.
    let make = move |_: &str, relay: mcp_connect_gateway::SessionRelay| {
        let principal = relay.principal()?;
        let name = format!("{}|{}", principal.issuer(), principal.subject());
        let auth = Authorization::token_exchange("gateway", "canary-secret", relay.caller_token())
            .for_principal(name);
        Some(McpClient::builder(stack(), relay.apply(pinned(auth))).build())
    };
    let gateway = Gateway::builder(group)
        .resource_server(server)
        .session_clients(make)
        .build();
    serve_on(listener, gateway);
    let mut callers = Vec::new();
    for subject in ["alice", "bob"] {
        let token = issuer.access_token(subject, &url, "", 300);
        let request = ConnectRequest::http(&url)
            .unwrap()
            .with_pin(ProtocolVersion::V2025_11_25)
            .with_header("Authorization", &format!("Bearer {token}"))
            .unwrap();
        let session = tokio::time::timeout(LIMIT, Connector::new().connect(request))
            .await
            .unwrap()
            .unwrap();
        callers.push((subject, token, session));
    }
    for (subject, _, session) in &callers {
        let answer = session.call_tool("whoami", &json!({})).await.unwrap();
        assert_eq!(answer.text(), format!("{subject}/gateway"));
    }
    let exchanged: Vec<_> = issuer
        .exchanges()
        .into_iter()
        .map(|(who, client, _)| (who, client))
        .collect();
    assert_eq!(
        exchanged,
        [
            ("alice".into(), "gateway".into()),
            ("bob".into(), "gateway".into())
        ]
    );
    // The member never saw a caller's own token.
    let seen = seen.lock().unwrap().clone();
    for (_, token, _) in &callers {
        assert!(!seen.contains(token), "a caller's token went upstream");
    }
}
