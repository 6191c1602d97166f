//! Issue 27, item 4 (in part): `--proxy URL` and `--no-proxy`, against a
//! scripted proxy (tinyproxy's runs are in `tests/proxy.rs`). The summary
//! names the proxy's address; its credentials never show.

use std::process::Command;

use mcp_connect::demo::DemoServer;
use serde_json::Value;

use crate::support::cli::{command, run_command};
use crate::support::proxy::AnsweringProxy;

const PASSWORD: &str = "canary-cli-proxy-password";

/// The command with no proxy variable but those given.
fn with_env(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = command(args);
    for name in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"] {
        command.env_remove(name);
    }
    for name in ["ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command
}

async fn run(command: Command) -> (Option<i32>, Value, String) {
    let output = tokio::task::spawn_blocking(move || run_command(command))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let last = String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or(Value::Null);
    (output.status.code(), last, text)
}

#[tokio::test]
async fn proxy_sends_every_request_through_it_and_never_shows_the_password() {
    let origin = DemoServer::start().await.unwrap();
    let proxy = AnsweringProxy::start(407).await;
    let url = proxy
        .url()
        .replace("http://", &format!("http://u:{PASSWORD}@"));
    let (code, last, text) = run(with_env(&["--json", "--proxy", &url, &origin.url()], &[])).await;
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(last["outcome"], "failed");
    assert_eq!(last["failure"]["kind"], "proxy", "{last}");
    assert_eq!(last["failure"]["http_status"], 407);
    assert_eq!(last["attempts"], 1);
    assert_eq!(last["proxy"], format!("{}/", proxy.url()));
    assert!(!text.contains(PASSWORD), "{text}");
    assert_eq!(proxy.connections(), 1);
    assert_eq!(origin.requests(), 0);

    // The human summary names the proxy too.
    let (_, _, human) = run(with_env(&["--proxy", &url, &origin.url()], &[])).await;
    assert!(
        human.contains(&format!("via proxy {}/", proxy.url())),
        "{human}"
    );
    assert!(!human.contains(PASSWORD), "{human}");
}

#[tokio::test]
async fn no_proxy_ignores_the_environment_and_a_bad_proxy_url_is_a_usage_error() {
    let origin = DemoServer::start().await.unwrap();
    let proxy = AnsweringProxy::start(403).await;
    let (code, last, text) = run(with_env(
        &["--json", "--no-proxy", &origin.url()],
        &[("HTTP_PROXY", &proxy.url())],
    ))
    .await;
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(last["outcome"], "established");
    assert_eq!(last["proxy"], Value::Null);
    assert_eq!(proxy.connections(), 0);

    // The environment's proxy is used without it, and NO_PROXY still
    // applies to --proxy.
    let (_, last, _) = run(with_env(
        &["--json", &origin.url()],
        &[("HTTP_PROXY", &proxy.url())],
    ))
    .await;
    assert_eq!(
        last["failure"]["kind"], "auth",
        "a 403 from the proxy: {last}"
    );
    let (_, last, _) = run(with_env(
        &["--json", "--proxy", &proxy.url(), &origin.url()],
        &[("NO_PROXY", "127.0.0.1")],
    ))
    .await;
    assert_eq!(last["outcome"], "established", "{last}");

    for bad in [
        format!("socks5://u:{PASSWORD}@127.0.0.1:1080"),
        format!("http://u:{PASSWORD}@127.0.0.1:3128/path"),
    ] {
        let (code, _, text) = run(with_env(&["--proxy", &bad, &origin.url()], &[])).await;
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains("--proxy"), "{text}");
        assert!(!text.contains(PASSWORD), "{text}");
    }
    // A variable that cannot be used fails before any I/O, naming itself.
    let served = origin.requests();
    let (code, last, text) = run(with_env(
        &["--json", &origin.url()],
        &[("HTTP_PROXY", &format!("ftp://u:{PASSWORD}@127.0.0.1:21"))],
    ))
    .await;
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(last["failure"]["kind"], "configuration", "{last}");
    assert!(!text.contains(PASSWORD), "{text}");
    let (_, _, human) = run(with_env(
        &[&origin.url()],
        &[("HTTP_PROXY", &format!("ftp://u:{PASSWORD}@127.0.0.1:21"))],
    ))
    .await;
    assert!(human.contains("HTTP_PROXY is unusable"), "{human}");
    assert!(!human.contains(PASSWORD), "{human}");
    assert_eq!(origin.requests(), served, "nothing was sent");

    let (code, _, _) = run(with_env(
        &["--proxy", &proxy.url(), "--no-proxy", &origin.url()],
        &[],
    ))
    .await;
    assert_eq!(code, Some(2), "the two flags conflict");
}

#[tokio::test]
async fn unix_socket_reaches_the_server_like_curl_and_no_proxy_applies() {
    let socket = std::env::temp_dir().join(format!("mcp-cli-{}.sock", std::process::id()));
    let origin = DemoServer::start_on_unix_socket(&socket).await.unwrap();
    let proxy = AnsweringProxy::start(403).await;
    let socket_arg = socket.to_string_lossy().into_owned();
    let (code, last, text) = run(with_env(
        &[
            "--json",
            "--unix-socket",
            &socket_arg,
            "--call-tool",
            "add",
            "--args",
            r#"{"a":2,"b":3}"#,
            "http://localhost/mcp",
        ],
        &[("HTTP_PROXY", &proxy.url())],
    ))
    .await;
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(last["outcome"], "established", "{text}");
    assert_eq!(last["proxy"], Value::Null, "{text}");
    // Counted like any other request, and all of them reached the socket.
    assert_eq!(
        last["http_requests"].as_u64(),
        Some(origin.requests()),
        "{text}"
    );
    assert!(origin.requests() >= 2, "{text}");
    assert!(proxy.heads().is_empty(), "{text}");

    // Only a URL is reached over a socket.
    let (code, _, text) = run(with_env(&["--unix-socket", &socket_arg], &[])).await;
    assert_eq!(code, Some(2), "{text}");
    let _ = std::fs::remove_file(&socket);
}

/// Issue 63, item 8: with `--unix-socket`, a `--replica` at another origin
/// is reached at its own URL (its traffic went to the primary's socket).
#[tokio::test]
async fn a_replica_elsewhere_is_reached_at_its_own_url_not_the_socket() {
    let socket = std::env::temp_dir().join(format!("mcp-cli-replica-{}.sock", std::process::id()));
    let origin = DemoServer::start_on_unix_socket(&socket).await.unwrap();
    let replica = DemoServer::start().await.unwrap();
    let socket_arg = socket.to_string_lossy().into_owned();
    let replica_url = replica.url();
    let (code, _, text) = run(with_env(
        &[
            "--json",
            "--unix-socket",
            &socket_arg,
            "--replica",
            &replica_url,
            "--call-tool",
            "add",
            "--args",
            r#"{"a":2,"b":3}"#,
            "--repeat",
            "24",
            "--interval",
            "10ms",
            "http://localhost/mcp",
        ],
        &[],
    ))
    .await;
    assert_eq!(code, Some(0), "{text}");
    // Balanced by two random choices over idle replicas: both take calls.
    assert!(replica.requests() >= 2, "the replica was reached: {text}");
    assert!(origin.requests() >= 2, "{text}");
    let _ = std::fs::remove_file(&socket);
}
