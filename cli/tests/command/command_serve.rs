//! `mcp-connect serve` (issue 66): the config file's servers served as one
//! MCP server; a client of either era lists and calls through it; a
//! non-loopback `--listen` and a missing `--config` are usage errors; the
//! first signal ends it.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use crate::support::cli::{command, finish, run, serve_with_env};
use mcp_connect::demo::DemoServer;
use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::{ConnectRequest, Connector};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_clients_of_both_eras_until_the_first_signal() {
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap().to_owned();
    let mut child = command(&[
        "serve",
        "--config",
        &config,
        "--listen",
        "127.0.0.1:0",
        "--json",
    ])
    .spawn()
    .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        (line, stdout)
    });
    let (line, stdout) = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("the serving line")
        .unwrap();
    let serving: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(serving["event"], "serving", "{line}");
    let url = serving["url"].as_str().unwrap().to_owned();
    for pin in [Some(ProtocolVersion::V2025_11_25), None] {
        let mut request = ConnectRequest::http(&url).unwrap();
        if let Some(version) = &pin {
            request = request.with_pin(version.clone());
        }
        let session = Connector::new().connect(request).await.unwrap();
        assert_eq!(
            session.era(),
            if pin.is_some() {
                Era::Legacy
            } else {
                Era::Modern
            }
        );
        // The member may still be starting: its tools show once it is ready.
        let mut names = Vec::new();
        for _ in 0..200 {
            let listed = session.list_tools().await.unwrap();
            names = listed.tools.iter().map(|t| t.name.clone()).collect();
            if !names.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(names, ["add", "echo"]);
        let sum = session
            .call_tool("add", &json!({ "a": 1, "b": 2 }))
            .await
            .unwrap();
        assert_eq!(sum.text(), "3");
        session.close().await.unwrap();
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    drop(stdout);
    let output = tokio::task::spawn_blocking(move || finish(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn serve_refuses_another_address_than_loopback_and_needs_a_config() {
    let dir =
        std::env::temp_dir().join(format!("mcp-connect-serve-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    std::fs::write(&config, r#"{ "mcpServers": {} }"#).unwrap();
    let config = config.to_str().unwrap();
    let output = run(&["serve", "--config", config, "--listen", "0.0.0.0:0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("loopback"));
    let output = run(&["serve"]);
    assert_eq!(output.status.code(), Some(2));
    // What governs the gateway is read before anything starts.
    let policy = dir.join("policy.cedar");
    std::fs::write(&policy, "permit(principal, action, resource").unwrap();
    let output = run(&[
        "serve",
        "--config",
        config,
        "--policy",
        policy.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("--policy"), "{said}");
    let output = run(&["serve", "--config", config, "--quota", "often"]);
    assert_eq!(output.status.code(), Some(2));
    let unwritable = dir.join("missing").join("audit.jsonl");
    let output = run(&[
        "serve",
        "--config",
        config,
        "--audit",
        unwritable.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--audit"));
    let _ = std::fs::remove_dir_all(dir);
}

/// `serve --stdio`: this project's client starts the command as its stdio
/// server and lists and calls through it, in both eras; nothing but the
/// protocol goes to stdout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_stdio_answers_a_client_that_starts_it() {
    use mcp_connect::transport::StdioCommand;
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-serve-stdio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let program = env!("CARGO_BIN_EXE_mcp-connect");
    for pin in [Some(ProtocolVersion::V2025_11_25), None] {
        let command = StdioCommand::new(program).args([
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--stdio",
        ]);
        let mut request = ConnectRequest::stdio(command);
        if let Some(version) = &pin {
            request = request.with_pin(version.clone());
        }
        let session = Connector::new().connect(request).await.unwrap();
        let mut names = Vec::new();
        for _ in 0..200 {
            let listed = session.list_tools().await.unwrap();
            names = listed.tools.iter().map(|t| t.name.clone()).collect();
            if !names.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(names, ["add", "echo"], "{pin:?}");
        let sum = session
            .call_tool("add", &json!({ "a": 20, "b": 22 }))
            .await
            .unwrap();
        assert_eq!(sum.text(), "42");
        session.close().await.unwrap();
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `--bearer-token-env`: a request without one of the tokens gets 401, one
/// with it is served; the token never reaches the member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_bearer_tokens_admits_their_holders_only() {
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-serve-bearer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap().to_owned();
    let mut serve = command(&[
        "serve",
        "--config",
        &config,
        "--listen",
        "127.0.0.1:0",
        "--json",
        "--bearer-token-env",
        "GATEWAY_TOKENS",
    ]);
    serve.env("GATEWAY_TOKENS", "first-secret, second-secret");
    let mut child = serve.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let serving: serde_json::Value = serde_json::from_str(&line).unwrap();
    let url = serving["url"].as_str().unwrap().to_owned();
    let pinned = || {
        ConnectRequest::http(&url)
            .unwrap()
            .with_pin(ProtocolVersion::V2025_11_25)
    };
    let refused = Connector::new().connect(pinned()).await.unwrap_err();
    assert_eq!(refused.failure().http_status, Some(401), "{refused:?}");
    let wrong = pinned()
        .with_header("Authorization", "Bearer first")
        .unwrap();
    let refused = Connector::new().connect(wrong).await.unwrap_err();
    assert_eq!(refused.failure().http_status, Some(401));
    let holder = pinned()
        .with_header("Authorization", "Bearer second-secret")
        .unwrap();
    let session = Connector::new().connect(holder).await.unwrap();
    session.close().await.unwrap();
    assert!(!demo.saw_header("authorization"), "the token went upstream");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = tokio::task::spawn_blocking(move || finish(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130));
    let _ = std::fs::remove_dir_all(dir);
}

/// `--issuer`: the gateway is an OAuth resource server of a real
/// authorization server (the testkit's, issuing signed JWTs); a client
/// without a token gets 401 naming the metadata, this crate's client finds
/// the issuer through it, gets a token for the gateway's URL and calls;
/// the token never reaches the member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_an_issuer_admits_the_holders_of_its_tokens() {
    use mcp_connect::auth::Authorization;
    let issuer = mcp_connect::testkit::TokenIssuer::start().await;
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-serve-issuer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap().to_owned();
    let (child, url) = serve_with_env(
        &config,
        &[
            "--issuer",
            &issuer.issuer(),
            "--required-scope",
            "mcp:tools",
        ],
        &[],
    )
    .await;
    let refused = Connector::new()
        .connect(ConnectRequest::http(&url).unwrap())
        .await
        .unwrap_err();
    assert_eq!(refused.failure().http_status, Some(401), "{refused:?}");
    // A token for another resource is refused too.
    let elsewhere = issuer.access_token("alice", "http://127.0.0.1:1/mcp", "mcp:tools", 300);
    let wrong = ConnectRequest::http(&url)
        .unwrap()
        .with_header("Authorization", &format!("Bearer {elsewhere}"))
        .unwrap();
    let refused = Connector::new().connect(wrong).await.unwrap_err();
    assert_eq!(refused.failure().http_status, Some(401), "{refused:?}");
    let auth = Authorization::client_credentials("svc", "canary-secret").with_scope("mcp:tools");
    let request = ConnectRequest::http(&url).unwrap().with_authorization(auth);
    let session = Connector::new().connect(request).await.unwrap();
    let mut sum = None;
    for _ in 0..200 {
        match session.call_tool("add", &json!({ "a": 1, "b": 2 })).await {
            Ok(result) => {
                sum = Some(result.text());
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(25)).await,
        }
    }
    assert_eq!(sum.as_deref(), Some("3"));
    session.close().await.unwrap();
    assert!(!demo.saw_header("authorization"), "the token went upstream");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = tokio::task::spawn_blocking(move || finish(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130));
    let _ = std::fs::remove_dir_all(dir);
}

/// `--quota RATE --audit FILE --audit-field NAME`, and a per-tool rate in
/// the file's `"quotas"`: a call past a quota is refused with the time to
/// wait and never reaches the server; the audit file has one line per
/// call, the field it was told to keep and no other argument.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_quotas_and_an_audit_file() {
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-serve-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } },
        "quotas": { "echo": "1/hour" } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let audit = dir.join("audit.jsonl");
    let (config, audit_path) = (
        config.to_str().unwrap().to_owned(),
        audit.to_str().unwrap().to_owned(),
    );
    let (child, url) = serve_with_env(
        &config,
        &[
            "--quota",
            "3/hour",
            "--audit",
            &audit_path,
            "--audit-field",
            "a",
        ],
        &[],
    )
    .await;
    let session = Connector::new()
        .connect(ConnectRequest::http(&url).unwrap())
        .await
        .unwrap();
    for _ in 0..200 {
        if !session.list_tools().await.unwrap().tools.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let canary = json!({ "message": "canary-argument" });
    session.call_tool("echo", &canary).await.unwrap();
    let echo_spent = session.call_tool("echo", &canary).await.unwrap_err();
    assert_eq!(echo_spent.jsonrpc_code(), Some(-32023), "{echo_spent:?}");
    session
        .call_tool("add", &json!({ "a": 40, "b": 2 }))
        .await
        .unwrap();
    session
        .call_tool("add", &json!({ "a": 1, "b": 2 }))
        .await
        .unwrap();
    let spent = session
        .call_tool("add", &json!({ "a": 1, "b": 2 }))
        .await
        .unwrap_err();
    assert_eq!(spent.jsonrpc_code(), Some(-32023));
    assert_eq!(demo.tool_calls(), 3, "a refused call reached the server");
    session.close().await.unwrap();
    let mut lines = Vec::new();
    for _ in 0..200 {
        lines = std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        if lines.len() >= 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(lines.len(), 5, "{lines:?}");
    let records: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outcomes: Vec<_> = (records.iter())
        .map(|r| (r["tool"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("echo", "result"),
            ("echo", "throttled"),
            ("add", "result"),
            ("add", "result"),
            ("add", "throttled")
        ]
    );
    assert_eq!(records[2]["arguments"], json!({ "a": 40 }));
    assert_eq!(records[2]["server"], "demo");
    assert!(lines.iter().all(|l| !l.contains("canary")), "{lines:?}");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = tokio::task::spawn_blocking(move || finish(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130));
    let _ = std::fs::remove_dir_all(dir);
}

/// `--policy FILE` (the command built with `cedar`): a tool the policy
/// hides is not listed and a call of it is refused unsent; CI runs it
/// with `--features cedar`.
#[cfg(feature = "cedar")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_a_cedar_policy_hides_and_refuses_a_tool() {
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-serve-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let policy = dir.join("policy.cedar");
    let text = r#"permit(principal, action, resource);
        forbid(principal, action, resource == Tool::"echo");"#;
    std::fs::write(&policy, text).unwrap();
    let (config, policy) = (
        config.to_str().unwrap().to_owned(),
        policy.to_str().unwrap().to_owned(),
    );
    let (child, url) = serve_with_env(&config, &["--policy", &policy], &[]).await;
    let session = Connector::new()
        .connect(ConnectRequest::http(&url).unwrap())
        .await
        .unwrap();
    let mut names = Vec::new();
    for _ in 0..200 {
        names = (session.list_tools().await.unwrap().tools.into_iter())
            .map(|t| t.name)
            .collect();
        if !names.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(names, ["add"]);
    let refused = session
        .call_tool("echo", &json!({ "message": "hi" }))
        .await
        .unwrap_err();
    assert_eq!(refused.jsonrpc_code(), Some(-32602), "{refused:?}");
    assert_eq!(demo.tool_calls(), 0);
    session.close().await.unwrap();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = tokio::task::spawn_blocking(move || finish(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130));
    let _ = std::fs::remove_dir_all(dir);
}
