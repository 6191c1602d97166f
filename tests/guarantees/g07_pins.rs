//! G7 Pins: an explicit pin and a ceiling hold on every attempt.

use std::time::Duration;

use crate::support::{recovering, watchdog, Script, ScriptServer};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::VersionPolicy;
use mcp_connect::ConnectRequest;

const LIMIT: Duration = Duration::from_secs(20);

/// Every request is cut off: each attempt fails eligibly, so all three run.
async fn always_resets() -> ScriptServer {
    ScriptServer::start(|_| Script::ResetBeforeHeaders).await
}

async fn three_attempts(policy: VersionPolicy) -> ScriptServer {
    let server = always_resets().await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_versions(policy);
    let error = watchdog(LIMIT, recovering(3).connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.attempts(), 3);
    server
}

/// G7: a legacy pin is offered unchanged by every attempt; none probes.
#[tokio::test]
async fn legacy_pin_holds_on_every_attempt() {
    let server = three_attempts(VersionPolicy::Pin(ProtocolVersion::V2025_06_18)).await;
    let initializes: Vec<_> = server
        .recorded()
        .into_iter()
        .filter(|r| r.rpc_method() == "initialize")
        .collect();
    assert!(initializes.len() >= 2);
    for init in &initializes {
        assert_eq!(init.body["params"]["protocolVersion"], "2025-06-18");
    }
    assert_eq!(server.count("server/discover"), 0);
}

/// G7: a modern pin never becomes `initialize` on any attempt.
#[tokio::test]
async fn modern_pin_holds_on_every_attempt() {
    let server = three_attempts(VersionPolicy::Pin(ProtocolVersion::V2026_07_28)).await;
    let recorded = server.recorded();
    assert_eq!(recorded.len(), 3, "one probe per attempt, nothing else");
    for probe in &recorded {
        assert_eq!(probe.rpc_method(), "server/discover");
        assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(
            probe.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
}

/// G7: a ceiling caps the offer on every attempt.
#[tokio::test]
async fn ceiling_holds_on_every_attempt() {
    let server = three_attempts(VersionPolicy::Ceiling(ProtocolVersion::V2025_06_18)).await;
    assert_eq!(
        server.count("server/discover"),
        0,
        "a legacy ceiling never probes"
    );
    for init in server
        .recorded()
        .iter()
        .filter(|r| r.rpc_method() == "initialize")
    {
        assert_eq!(init.body["params"]["protocolVersion"], "2025-06-18");
    }
}
