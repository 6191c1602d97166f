//! Issue 66: instructions and allocations per `tools/call` forwarded by the
//! gateway, counted like the client's (bench/src/instructions.rs): the
//! gateway runs alone in a child process under valgrind (the group, its
//! client of the member, the hyper server it is mounted in, all on one
//! current-thread runtime), the member is the demo server in the parent
//! (the canned server answers no listing), and the parent drives `n`, then `2n`, calls through it; the
//! difference over `n` is the gateway's cost of one forwarded call, its
//! start-up, warm-up and exit cancelled out.

use std::process::Stdio;
use std::time::Duration;

use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use mcp_connect_gateway::Gateway;
use tokio::io::{AsyncBufReadExt, BufReader};
use tower_service::Service as _;

use crate::clients::Era;
use crate::instructions::{count_of, counting, summary_path, Counter, WARM_UP};

/// The child: `gateway-count MEMBER_URL`. Prints the address it serves
/// `/mcp` on, and serves until its stdin ends.
pub fn child(args: &[String]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let stack = EstablishBuilder::new(Connector::new()).build();
        let group = ServerGroup::new();
        let member = ConnectRequest::http(&args[0]).unwrap().with_name("demo");
        group.add(Server::new(stack, member)).unwrap();
        group.settled().await;
        let gateway = Gateway::builder(group).max_sessions(1_000_000).build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        let serving = async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let gateway = gateway.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let mut gateway = gateway.clone();
                        async move { gateway.call(request).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        };
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        tokio::select! {
            () = serving => {}
            _ = async { while let Ok(Some(_)) = stdin.next_line().await {} } => {}
        }
    });
    // Open connections' tasks would be torn down differently run to run.
    std::process::exit(0);
}

/// `counter` per forwarded call of a client of `era`, `member` behind the
/// gateway: the difference of `2n` and `n` calls, over `n`.
pub async fn per_call(counter: Counter, era: Era, member: &str, n: usize) -> f64 {
    let short = collected(counter, era, member, n).await;
    let long = collected(counter, era, member, 2 * n).await;
    long.saturating_sub(short) as f64 / n as f64
}

/// What `counter` counts of the gateway while one client of `era` makes
/// `n` calls (after the warm-up) through it.
async fn collected(counter: Counter, era: Era, member: &str, n: usize) -> u64 {
    let summary = summary_path();
    let mut command = tokio::process::Command::from(counting(counter, &summary));
    let mut child = command
        .arg(std::env::current_exe().expect("this program"))
        .args(["gateway-count", member])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("valgrind (apt-get install valgrind): {e}"));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .expect("the gateway's address within 2 minutes")
        .unwrap()
        .expect("the gateway's address");
    let client = crate::client_named("ours");
    let held = client.establish(&format!("http://{addr}/mcp"), era).await;
    for _ in 0..WARM_UP + n {
        held.call().await;
    }
    held.close().await;
    drop(child.stdin.take());
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the gateway ends with its stdin")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "counting failed: {stderr}");
    count_of(counter, &stderr, &summary)
}
