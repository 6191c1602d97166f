//! Who may call what, through the gateway (feature oauth; the Cedar tests
//! with feature cedar, which CI builds apart): the
//! principals are real JWT subjects (the testkit's `TokenIssuer`); a
//! policy hides a tool from one and refuses a call another tries without
//! listing it, none of which reaches the member; approval goes through
//! the calling client's elicitation; quotas are the principal's across
//! sessions; the audit file has one record per call and no argument it
//! was not told to keep.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_connect::demo::DemoServer;
use mcp_connect::group::ServerGroup;
use mcp_connect::inbound::ClientHandler;
use mcp_connect::protocol::server_requests::ElicitResult;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::store::Rate;
use mcp_connect::testkit::TokenIssuer;
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector, Session};
#[cfg(feature = "cedar")]
use mcp_connect_gateway::policy::CedarPolicy;
use mcp_connect_gateway::policy::{Action, Decision, ToolRequest};
use mcp_connect_gateway::{AuditRecord, Gateway, GatewayBuilder, Outcome, Quotas, ResourceServer};
use serde_json::json;

use super::{member, serve_on, LIMIT};

struct Fixture {
    issuer: TokenIssuer,
    demos: Vec<DemoServer>,
    url: String,
}

async fn fixture(configure: impl FnOnce(GatewayBuilder) -> GatewayBuilder) -> Fixture {
    fixture_of(ServerGroup::new(), configure).await
}

async fn fixture_of(
    group: ServerGroup,
    configure: impl FnOnce(GatewayBuilder) -> GatewayBuilder,
) -> Fixture {
    let issuer = TokenIssuer::start().await;
    let demos = vec![
        DemoServer::start().await.unwrap(),
        DemoServer::start().await.unwrap(),
    ];
    group.add(member(&demos[0].url(), "one")).unwrap();
    group.add(member(&demos[1].url(), "two")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let at = issuer.issuer().parse().unwrap();
    let server = ResourceServer::jwt(at, &url, HttpClient::default_client());
    let gateway = configure(Gateway::builder(group).resource_server(server)).build();
    let _: SocketAddr = serve_on(listener, gateway);
    Fixture { issuer, demos, url }
}

impl Fixture {
    async fn session(&self, subject: &str, pin: bool, handler: Option<ClientHandler>) -> Session {
        let token = self.issuer.access_token(subject, &self.url, "", 300);
        let mut request = ConnectRequest::http(&self.url)
            .unwrap()
            .with_header("Authorization", &format!("Bearer {token}"))
            .unwrap();
        if pin {
            request = request.with_pin(ProtocolVersion::V2025_11_25);
        }
        if let Some(handler) = handler {
            request = request.with_handler(handler);
        }
        tokio::time::timeout(LIMIT, Connector::new().connect(request))
            .await
            .unwrap()
            .unwrap()
    }

    fn calls(&self) -> u64 {
        self.demos.iter().map(DemoServer::tool_calls).sum()
    }
}

async fn names(session: &Session) -> Vec<String> {
    let listed = session.list_tools().await.unwrap();
    let mut names: Vec<_> = listed.tools.into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

#[cfg(feature = "cedar")]
const CEDAR: &str = r#"
permit(principal, action, resource);
forbid(principal == User::"bob", action, resource == Tool::"two__echo");
forbid(principal == User::"carol", action == Action::"call_tool", resource)
  when { resource.server == "one" };
forbid(principal, action == Action::"call_tool", resource)
  when { context.arguments has message && context.arguments.message like "*secret*" };
"#;

#[cfg(feature = "cedar")]
#[tokio::test]
async fn cedar_hides_a_tool_from_one_principal_and_refuses_a_call_another_never_listed() {
    let policy = CedarPolicy::from_text(CEDAR).unwrap();
    let f = fixture(|gateway| gateway.policy(policy)).await;
    for pin in [true, false] {
        let bob = f.session("bob", pin, None).await;
        assert_eq!(names(&bob).await, ["one__add", "one__echo", "two__add"]);
        let before = f.calls();
        // Calling what it was not shown: as if it did not exist.
        let hidden = bob
            .call_tool("two__echo", &json!({ "message": "hi" }))
            .await
            .unwrap_err();
        assert_eq!(hidden.jsonrpc_code(), Some(-32602), "{hidden:?}");
        let carol = f.session("carol", pin, None).await;
        assert_eq!(names(&carol).await.len(), 4, "carol sees every tool");
        // Carol never listed; her call to a server she may not call is refused.
        let refused = carol
            .call_tool("one__add", &json!({ "a": 1, "b": 2 }))
            .await
            .unwrap_err();
        assert_eq!(refused.jsonrpc_code(), Some(-32600), "{refused:?}");
        let secret = json!({ "message": "the secret plan" });
        let by_argument = carol.call_tool("two__echo", &secret).await.unwrap_err();
        assert_eq!(by_argument.jsonrpc_code(), Some(-32600));
        assert_eq!(f.calls(), before, "a refused call reached a member");
        let allowed = carol
            .call_tool("two__add", &json!({ "a": 1, "b": 2 }))
            .await
            .unwrap();
        assert_eq!(allowed.text(), "3");
        assert_eq!(f.calls(), before + 1);
    }
}

#[tokio::test]
async fn a_call_needing_approval_goes_ahead_only_when_the_calling_client_accepts() {
    let policy = |action: Action, request: &ToolRequest<'_>| match (action, request.tool) {
        (Action::Call, "one__echo") => Decision::RequireApproval,
        _ => Decision::Allow,
    };
    let f = fixture(|gateway| gateway.policy(policy)).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let answering = |accept: bool| {
        let asked = Arc::clone(&asked);
        ClientHandler::new().on_elicitation(move |request| {
            asked.lock().unwrap().push(request.message.clone());
            async move {
                Ok(match accept {
                    true => ElicitResult::accept(Default::default()),
                    false => ElicitResult::decline(),
                })
            }
        })
    };
    let yes = f.session("alice", true, Some(answering(true))).await;
    let echoed = yes
        .call_tool("one__echo", &json!({ "message": "hi" }))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "hi");
    let no = f.session("alice", true, Some(answering(false))).await;
    let declined = no
        .call_tool("one__echo", &json!({ "message": "hi" }))
        .await
        .unwrap_err();
    assert_eq!(declined.jsonrpc_code(), Some(-32600));
    assert_eq!(asked.lock().unwrap().len(), 2);
    assert!(asked.lock().unwrap()[0].contains("one__echo"));
    // A client that cannot be asked (no elicitation; a 2026-07-28 request)
    // is denied.
    let before = f.calls();
    for pin in [true, false] {
        let mute = f.session("alice", pin, None).await;
        let denied = mute
            .call_tool("one__echo", &json!({ "message": "hi" }))
            .await
            .unwrap_err();
        assert_eq!(denied.jsonrpc_code(), Some(-32600));
    }
    assert_eq!(f.calls(), before);
}

#[tokio::test]
async fn a_quota_is_the_principals_whatever_its_sessions_and_says_how_long_to_wait() {
    let quotas = Quotas::local()
        .per_principal(Rate::new(3, Duration::from_secs(3600)))
        .per_tool("*__echo", Rate::new(1, Duration::from_secs(3600)));
    let f = fixture(|gateway| gateway.quotas(quotas)).await;
    let add = json!({ "a": 1, "b": 2 });
    let first = f.session("alice", true, None).await;
    first.call_tool("one__add", &add).await.unwrap();
    first
        .call_tool("one__echo", &json!({ "message": "hi" }))
        .await
        .unwrap();
    let tool_spent = first
        .call_tool("one__echo", &json!({ "message": "hi" }))
        .await
        .unwrap_err();
    assert_eq!(
        tool_spent.jsonrpc_code(),
        Some(-32023),
        "one echo an hour: {tool_spent:?}"
    );
    let wait = tool_spent
        .rpc_error()
        .and_then(|e| e.data())
        .and_then(|d| d["retryAfterMs"].as_u64());
    assert!(wait.is_some_and(|ms| ms > 3_000_000), "{wait:?}");
    // A new session (and a 2026-07-28 request) is the same principal.
    let again = f.session("alice", false, None).await;
    again.call_tool("two__add", &add).await.unwrap();
    let spent = again.call_tool("two__add", &add).await.unwrap_err();
    assert_eq!(spent.jsonrpc_code(), Some(-32023));
    // Another principal has its own.
    let bob = f.session("bob", true, None).await;
    bob.call_tool("one__add", &add).await.unwrap();
    assert_eq!(f.calls(), 4, "a refused call reached a member");
}

#[tokio::test]
async fn the_audit_has_one_record_per_call_and_no_argument_it_was_not_told_to_keep() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let kept = Arc::clone(&records);
    let policy = |action: Action, request: &ToolRequest<'_>| match (action, request.tool) {
        (Action::Call, "two__echo") => Decision::Deny,
        _ => Decision::Allow,
    };
    let quotas = Quotas::local().per_tool("one__add", Rate::new(1, Duration::from_secs(3600)));
    let f = fixture(|gateway| {
        (gateway.policy(policy).quotas(quotas))
            .audit(move |record: &AuditRecord| kept.lock().unwrap().push(record.clone()))
            .audit_arguments(["a"])
    })
    .await;
    let alice = f.session("alice", true, None).await;
    let canary = json!({ "message": "canary-argument-value" });
    alice.call_tool("one__echo", &canary).await.unwrap();
    alice.call_tool("two__echo", &canary).await.unwrap_err();
    alice
        .call_tool("one__add", &json!({ "a": 40, "b": 2 }))
        .await
        .unwrap();
    alice
        .call_tool("one__add", &json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    alice.call_tool("nope", &json!({})).await.unwrap_err();
    names(&alice).await;
    let records = records.lock().unwrap().clone();
    let outcomes: Vec<_> = records
        .iter()
        .map(|r| (r.tool.as_str(), r.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("one__echo", Outcome::Result),
            ("two__echo", Outcome::Denied),
            ("one__add", Outcome::Result),
            ("one__add", Outcome::Throttled),
            ("nope", Outcome::Error),
        ]
    );
    for record in &records {
        assert_eq!(
            record.principal.as_ref().map(|p| p.subject()),
            Some("alice")
        );
        let line = record.to_json().to_string();
        assert!(!line.contains("canary"), "{line}");
    }
    assert_eq!(records[2].server.as_deref(), Some("one"));
    assert_eq!(
        records[2].arguments.get("a"),
        Some(&json!(40)),
        "the field it was told to keep"
    );
    assert!(records[2].response_bytes > 0 && records[2].request_bytes > 0);
}

#[cfg(feature = "cedar")]
#[tokio::test]
async fn the_meta_tools_show_and_call_only_what_the_policy_lets_a_principal_see() {
    let policy = CedarPolicy::from_text(CEDAR).unwrap();
    let group = ServerGroup::builder()
        .with_discovery(mcp_connect::group::Discovery::Always)
        .build();
    let f = fixture_of(group, |gateway| gateway.policy(policy)).await;
    let bob = f.session("bob", true, None).await;
    assert_eq!(
        names(&bob).await,
        ["call_tool", "describe_tool", "search_tools"]
    );
    let found = bob
        .call_tool(
            "search_tools",
            &json!({ "query": "echo message", "limit": 10 }),
        )
        .await
        .unwrap();
    let found: Vec<_> = (found.structured_content.as_ref().unwrap()["tools"]
        .as_array()
        .unwrap())
    .iter()
    .map(|t| t["name"].as_str().unwrap().to_owned())
    .collect();
    assert!(found.contains(&"one__echo".to_owned()), "{found:?}");
    assert!(
        !found.contains(&"two__echo".to_owned()),
        "a hidden tool was found: {found:?}"
    );
    let described = bob
        .call_tool("describe_tool", &json!({ "name": "two__echo" }))
        .await
        .unwrap();
    assert!(described.is_error, "a hidden tool was described");
    let before = f.calls();
    let routed = json!({ "name": "two__echo", "arguments": { "message": "hi" } });
    let refused = bob.call_tool("call_tool", &routed).await.unwrap_err();
    assert_eq!(refused.jsonrpc_code(), Some(-32602), "{refused:?}");
    assert_eq!(f.calls(), before, "call_tool reached a hidden tool");
    let routed = json!({ "name": "one__echo", "arguments": { "message": "hi" } });
    let echoed = bob.call_tool("call_tool", &routed).await.unwrap();
    assert_eq!(echoed.text(), "hi");
}
