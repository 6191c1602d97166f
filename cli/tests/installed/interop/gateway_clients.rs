//! Real SDK clients through `mcp-connect serve` (issue 66): the Python
//! SDK's and the TypeScript SDK v2's, each in both eras, in front of two
//! members (server-everything over HTTP and over stdio). Each client is a
//! script in `gateway/tests/clients/` that exits non-zero at the first
//! thing that is not so: both members listed and called, progress
//! received, a call cancelled, and a member's sampling and elicitation
//! answered by the client (in 2026-07-28 as input_required rounds).

use std::process::Stdio;

use super::*;
use crate::support::cli::serve;

/// `mcp-connect serve` in front of an HTTP and a stdio server-everything,
/// answering the members' own sampling and elicitation with canned replies
/// (so that server-everything lists the tools gated on them to the
/// gateway); its URL, and what to keep alive.
async fn serve_two_everythings(test: &str) -> (String, Peer, std::process::Child, tempdir::Dir) {
    let http = everything_http().await;
    // A folder of this test's own: two tests writing one config file
    // would each serve the other's members.
    let dir = tempdir::Dir::new(test);
    let config = dir.path().join("servers.json");
    let servers = json!({ "mcpServers": {
        "http": { "url": http.url("/mcp") },
        "stdio": { "command": "node", "args": [everything_entry(), "stdio"] },
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap().to_owned();
    let (child, url) = serve(
        &config,
        &["--sample", "gateway canned reply", "--elicit", "defaults"],
    )
    .await;
    (url, http, child, dir)
}

/// Runs a client script to its end: its output, or the test fails with it.
async fn client(program: &std::path::Path, script: &std::path::Path, args: &[&str]) -> String {
    let output = Command::new(program)
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = watchdog(LIMIT * 3, output).await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{} {args:?}: {}\n{stdout}\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn clients_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gateway/tests/clients"
    ))
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn the_python_sdk_client_in_both_eras_through_serve() {
    let (url, http, mut serve, _dir) = serve_two_everythings("python-client").await;
    let script = clients_dir().join("python_client.py");
    let legacy = client(&python(), &script, &[&url, "legacy"]).await;
    assert!(
        legacy.contains("answered a member's sampling and elicitation"),
        "{legacy}"
    );
    let modern = client(&python(), &script, &[&url, "2026-07-28"]).await;
    assert!(modern.contains("cancelled a call"), "{modern}");
    assert!(
        modern.contains("answered a member's sampling and elicitation (2026-07-28)"),
        "{modern}"
    );
    let _ = serve.kill();
    let _ = serve.wait();
    http.stop().await;
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn the_typescript_sdk_client_in_both_eras_through_serve() {
    let (url, http, mut serve, _dir) = serve_two_everythings("ts-client").await;
    // Node resolves the SDK from the script's own folder: the script runs
    // from the folder the SDK is installed in.
    let script = peers().join("node-client/gateway_ts_client.mjs");
    std::fs::copy(clients_dir().join("ts_client.mjs"), &script).unwrap();
    let legacy = client(std::path::Path::new("node"), &script, &[&url, "legacy"]).await;
    assert!(
        legacy.contains("answered a member's sampling and elicitation"),
        "{legacy}"
    );
    let modern = client(std::path::Path::new("node"), &script, &[&url, "auto"]).await;
    assert!(modern.contains("cancelled a call"), "{modern}");
    assert!(
        modern.contains("answered a member's sampling and elicitation (auto)"),
        "{modern}"
    );
    let _ = serve.kill();
    let _ = serve.wait();
    http.stop().await;
}

/// Issue 67, item 5: the Python SDK client, shown only the meta-tools,
/// finds and describes a tool of a lazy member that is not running
/// (from the catalogue remembered by an earlier run), then calls it
/// through `call_tool`, which connects the member for the first time in
/// this gateway's life.
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn the_python_sdk_client_discovers_a_lazy_members_tool_through_serve() {
    let port = free_port();
    let dir = tempdir::Dir::new("python-discovery");
    let config = dir.path().join("servers.json");
    let cache = dir.path().join("catalogue.json");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let servers = json!({ "mcpServers": { "ev": { "url": url, "lazy": true } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let (config, cache) = (config.to_str().unwrap(), cache.to_str().unwrap());
    // An earlier run: the lazy member listed once and remembered.
    let everything = everything_http_on(port).await;
    let listed =
        crate::support::cli::run_async(&["--config", config, "--catalogue-cache", cache]).await;
    assert!(listed.status.success(), "{listed:?}");
    assert!(
        std::fs::metadata(cache).is_ok(),
        "the catalogue is remembered"
    );
    drop(everything);
    watchdog(LIMIT, async {
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;

    let (mut serve, gateway) = serve(
        config,
        &["--catalogue-cache", cache, "--discovery", "always"],
    )
    .await;
    let script = clients_dir().join("python_discovery.py");
    for era in ["legacy", "2026-07-28"] {
        let found = client(&python(), &script, &[&gateway, "find", era]).await;
        assert!(found.contains("described get-sum"), "{found}");
    }
    let everything = everything_http_on(port).await;
    for era in ["2026-07-28", "legacy"] {
        let called = client(&python(), &script, &[&gateway, "call", era]).await;
        assert!(
            called.contains("called get-sum through call_tool"),
            "{called}"
        );
    }
    let _ = serve.kill();
    let _ = serve.wait();
    drop(everything);
}

/// A folder of the test's own, removed when it drops.
mod tempdir {
    pub(super) struct Dir(std::path::PathBuf);

    impl Dir {
        pub(super) fn new(name: &str) -> Dir {
            let path =
                std::env::temp_dir().join(format!("mcp-connect-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }

        pub(super) fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
