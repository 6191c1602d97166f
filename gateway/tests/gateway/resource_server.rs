//! The gateway as an OAuth resource server, against a real authorization
//! server issuing signed JWTs (the testkit's `TokenIssuer`): a good token
//! is served, every kind of bad one gets 401 (a missing scope 403) with
//! the challenge that names the metadata, no member ever sees a request
//! for it, and a session is its opener's only.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioExecutor;
use mcp_connect::auth::Authorization;
use mcp_connect::demo::DemoServer;
use mcp_connect::group::ServerGroup;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::testkit::TokenIssuer;
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector};
use mcp_connect_gateway::{Gateway, ResourceServer};
use serde_json::{json, Value};

use super::{initialize, member, serve_on, BOTH_OUT, JSON_IN, LIMIT};

struct Fixture {
    issuer: TokenIssuer,
    demo: DemoServer,
    addr: SocketAddr,
    resource: String,
}

async fn fixture(scopes: &[&str]) -> Fixture {
    fixture_with(scopes, false).await
}

async fn fixture_with(scopes: &[&str], introspection: bool) -> Fixture {
    let issuer = TokenIssuer::start().await;
    let demo = DemoServer::start().await.unwrap();
    let group = ServerGroup::new();
    group.add(member(&demo.url(), "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (at, client) = (
        issuer.issuer().parse().unwrap(),
        HttpClient::default_client(),
    );
    let server = match introspection {
        true => ResourceServer::introspection(at, &resource, client, "gateway", "canary-secret"),
        false => ResourceServer::jwt(at, &resource, client),
    };
    let server = server
        .required_scopes(scopes.iter().copied())
        .refetch_interval(Duration::from_millis(200));
    let gateway = Gateway::builder(group).resource_server(server).build();
    let addr = serve_on(listener, gateway);
    Fixture {
        issuer,
        demo,
        addr,
        resource,
    }
}

/// A raw POST (or GET of `path`) with `token`: status, headers, body.
async fn send(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
    body: Option<String>,
    extra: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let method = if body.is_some() { "POST" } else { "GET" };
    let mut request = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    for (name, value) in [JSON_IN, BOTH_OUT].iter().chain(extra) {
        request = request.header(*name, *value);
    }
    let body = Full::new(Bytes::from(body.unwrap_or_default()));
    let response = client.request(request.body(body).unwrap()).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let last = text.lines().rev().find_map(|l| l.strip_prefix("data: "));
    let body = serde_json::from_str(last.unwrap_or(&text)).unwrap_or(Value::Null);
    (status, headers, body)
}

fn challenge(headers: &HeaderMap) -> String {
    let value = headers.get("www-authenticate").expect("a challenge");
    value.to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_valid_token_is_served_and_every_bad_one_is_refused_before_any_member_is_asked() {
    let f = fixture(&["mcp:tools"]).await;
    let metadata_url = format!("http://{}/.well-known/oauth-protected-resource/mcp", f.addr);
    let good = f
        .issuer
        .access_token("alice", &f.resource, "mcp:tools", 300);
    let (status, headers, _) = send(f.addr, "/mcp", Some(&good), Some(initialize()), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.contains_key("mcp-session-id"));
    let asked_before = f.demo.requests();

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |over: Value| {
        let mut claims = json!({ "iss": f.issuer.issuer(), "sub": "alice", "aud": f.resource,
            "scope": "mcp:tools", "exp": now + 300 });
        for (name, value) in over.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let expired = f.issuer.sign(&claims(json!({ "exp": now - 120 })));
    let wrong_audience = f
        .issuer
        .sign(&claims(json!({ "aud": "http://127.0.0.1:1/other" })));
    let wrong_issuer = f
        .issuer
        .sign(&claims(json!({ "iss": "http://127.0.0.1:1" })));
    let unknown_key = f.issuer.sign_unlisted(&claims(json!({})));
    let header = |alg: &str| {
        use base64::Engine as _;
        let encode =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        (
            encode(&json!({ "alg": alg, "typ": "JWT", "kid": "key-1" })),
            encode(&claims(json!({}))),
        )
    };
    let (none_header, none_claims) = header("none");
    let alg_none = format!("{none_header}.{none_claims}.");
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    parts[1] = header("ES256").1; // the claims changed, the signature kept
    let tampered = parts.join(".");
    let no_scope = f.issuer.sign(&claims(json!({ "scope": "other" })));
    for (name, token, status) in [
        ("none at all", None, StatusCode::UNAUTHORIZED),
        ("expired", Some(expired), StatusCode::UNAUTHORIZED),
        (
            "wrong audience",
            Some(wrong_audience),
            StatusCode::UNAUTHORIZED,
        ),
        ("wrong issuer", Some(wrong_issuer), StatusCode::UNAUTHORIZED),
        ("unknown kid", Some(unknown_key), StatusCode::UNAUTHORIZED),
        ("alg none", Some(alg_none), StatusCode::UNAUTHORIZED),
        ("tampered", Some(tampered), StatusCode::UNAUTHORIZED),
        (
            "not a JWT",
            Some("canary-opaque".into()),
            StatusCode::UNAUTHORIZED,
        ),
        ("without the scope", Some(no_scope), StatusCode::FORBIDDEN),
    ] {
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "echo", "arguments": { "message": "canary" },
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } } });
        let extra = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ];
        let (got, headers, _) = send(
            f.addr,
            "/mcp",
            token.as_deref(),
            Some(call.to_string()),
            &extra,
        )
        .await;
        assert_eq!(got, status, "{name}");
        let challenge = challenge(&headers);
        assert!(challenge.contains(&metadata_url), "{name}: {challenge}");
        match status {
            StatusCode::FORBIDDEN => {
                assert!(
                    challenge.contains(r#"error="insufficient_scope""#),
                    "{challenge}"
                );
                assert!(challenge.contains(r#"scope="mcp:tools""#), "{challenge}");
            }
            _ if token.is_none() => assert!(!challenge.contains("error="), "{challenge}"),
            _ => assert!(
                challenge.contains(r#"error="invalid_token""#),
                "{name}: {challenge}"
            ),
        }
    }
    assert_eq!(
        f.demo.requests(),
        asked_before,
        "a refused request reached a member"
    );

    // The metadata is public and names the issuer.
    let (status, _, document) = send(
        f.addr,
        "/.well-known/oauth-protected-resource/mcp",
        None,
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["resource"], json!(f.resource));
    assert_eq!(
        document["authorization_servers"],
        json!([f.issuer.issuer()])
    );
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_made_up_key_ids_cost_the_issuer_nothing() {
    let f = fixture(&[]).await;
    let token = |unlisted: bool| {
        let claims = json!({ "iss": f.issuer.issuer(), "sub": "alice", "aud": f.resource,
            "exp": 4_000_000_000u64 });
        match unlisted {
            true => f.issuer.sign_unlisted(&claims),
            false => f.issuer.sign(&claims),
        }
    };
    let first = send(f.addr, "/mcp", Some(&token(false)), Some(initialize()), &[]).await;
    assert_eq!(first.0, StatusCode::OK);
    assert_eq!(f.issuer.key_set_fetches(), 1);
    // Within the refetch interval, unknown key ids fetch nothing more.
    for _ in 0..20 {
        let refused = send(f.addr, "/mcp", Some(&token(true)), Some(initialize()), &[]).await;
        assert_eq!(refused.0, StatusCode::UNAUTHORIZED);
    }
    assert!(
        f.issuer.key_set_fetches() <= 2,
        "{}",
        f.issuer.key_set_fetches()
    );
    // The issuer rotates: once the interval has passed, one fetch finds it.
    let new_key = token(true);
    f.issuer.publish_unlisted();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let rotated = send(f.addr, "/mcp", Some(&new_key), Some(initialize()), &[]).await;
    assert_eq!(rotated.0, StatusCode::OK);
    let fetched = f.issuer.key_set_fetches();
    for _ in 0..5 {
        let again = send(f.addr, "/mcp", Some(&new_key), Some(initialize()), &[]).await;
        assert_eq!(again.0, StatusCode::OK);
    }
    assert_eq!(
        f.issuer.key_set_fetches(),
        fetched,
        "a known key was fetched again"
    );
}

#[tokio::test]
async fn a_session_is_its_openers_only() {
    let f = fixture(&[]).await;
    let alice = f.issuer.access_token("alice", &f.resource, "", 300);
    let mallory = f.issuer.access_token("mallory", &f.resource, "", 300);
    let (_, headers, _) = send(f.addr, "/mcp", Some(&alice), Some(initialize()), &[]).await;
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let with_session = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let (theirs, _, _) = send(
        f.addr,
        "/mcp",
        Some(&mallory),
        Some(list.clone()),
        &with_session,
    )
    .await;
    assert_eq!(
        theirs,
        StatusCode::NOT_FOUND,
        "another principal used the session"
    );
    let (own, _, body) = send(f.addr, "/mcp", Some(&alice), Some(list), &with_session).await;
    assert_eq!(own, StatusCode::OK);
    assert!(
        body["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{body}"
    );
}

#[tokio::test]
async fn this_crates_client_finds_the_issuer_through_the_challenge_and_calls_a_tool() {
    let f = fixture(&["mcp:tools"]).await;
    for pin in [Some(ProtocolVersion::V2025_11_25), None] {
        let auth =
            Authorization::client_credentials("svc", "canary-secret").with_scope("mcp:tools");
        let mut request = ConnectRequest::http(&f.resource)
            .unwrap()
            .with_authorization(auth);
        if let Some(pin) = pin {
            request = request.with_pin(pin);
        }
        let connected = tokio::time::timeout(LIMIT, Connector::new().connect(request)).await;
        let session = connected.unwrap().unwrap();
        let echoed = session
            .call_tool("echo", &json!({ "message": "hi" }))
            .await
            .unwrap();
        assert_eq!(echoed.text(), "hi");
        session.close().await.unwrap();
    }
    let grants: Vec<_> = (f.issuer.server().recorded().into_iter())
        .filter(|r| r.route() == "/token")
        .map(|r| (r.field("grant_type"), r.field("resource")))
        .collect();
    assert!(!grants.is_empty());
    for (grant, resource) in grants {
        assert_eq!(grant.as_deref(), Some("client_credentials"));
        assert_eq!(
            resource.as_deref(),
            Some(f.resource.as_str()),
            "RFC 8707 resource"
        );
    }
}

#[tokio::test]
async fn an_opaque_token_is_checked_at_the_issuers_introspection_endpoint() {
    let f = fixture_with(&["mcp:tools"], true).await;
    let good = f
        .issuer
        .access_token("alice", &f.resource, "mcp:tools", 300);
    let expired = f
        .issuer
        .access_token("alice", &f.resource, "mcp:tools", -120);
    let elsewhere = f
        .issuer
        .access_token("alice", "http://127.0.0.1:1/mcp", "mcp:tools", 300);
    let narrow = f.issuer.access_token("alice", &f.resource, "other", 300);
    for (token, status) in [
        (good, StatusCode::OK),
        (expired, StatusCode::UNAUTHORIZED),
        (elsewhere, StatusCode::UNAUTHORIZED),
        ("canary-unknown".into(), StatusCode::UNAUTHORIZED),
        (narrow, StatusCode::FORBIDDEN),
    ] {
        let (got, _, _) = send(f.addr, "/mcp", Some(&token), Some(initialize()), &[]).await;
        assert_eq!(got, status);
    }
    let asked: Vec<_> = (f.issuer.server().recorded().into_iter())
        .filter(|r| r.route() == "/introspect")
        .collect();
    assert_eq!(asked.len(), 5);
    // The gateway authenticates as its client there.
    assert!(asked.iter().all(|r| r
        .header("authorization")
        .is_some_and(|h| h.starts_with("Basic "))));
}
