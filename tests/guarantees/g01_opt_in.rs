//! G1 Opt-in: without a recovery policy, behaviour is a single attempt,
//! exactly as configured.

use std::time::Duration;

use crate::support::{watchdog, Events, LegacyServer, Script, ScriptServer};
use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};

const LIMIT: Duration = Duration::from_secs(10);

/// A legacy server whose every `initialize` is cut off: an eligible failure.
async fn always_resets() -> ScriptServer {
    let legacy = LegacyServer::new();
    ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" => Script::ResetBeforeHeaders,
        _ => legacy.respond(r),
    })
    .await
}

/// G1: the bare connector makes exactly one attempt on an eligible failure.
#[tokio::test]
async fn bare_connector_makes_one_attempt() {
    let server = always_resets().await;
    let events = Events::new();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_observer(events.clone());
    assert!(watchdog(LIMIT, Connector::new().connect(request))
        .await
        .is_err());
    assert_eq!(server.count("initialize"), 1);
    assert_eq!(events.attempts(), 1);
}

/// G1: the assembled stack has recovery off unless asked, and a disabled
/// policy is one attempt too.
#[tokio::test]
async fn stack_without_a_recovery_policy_makes_one_attempt() {
    for stack in [
        EstablishBuilder::new(Connector::new()).build(),
        EstablishBuilder::new(Connector::new())
            .with_recovery(RecoveryPolicy::disabled())
            .build(),
    ] {
        let server = always_resets().await;
        let error = watchdog(
            LIMIT,
            stack.connect(ConnectRequest::http(&server.url()).unwrap()),
        )
        .await
        .unwrap_err();
        assert_eq!(error.attempts(), 1);
        assert!(error.later().is_empty());
        assert_eq!(
            server.methods(),
            ["server/discover", "initialize"],
            "exactly as configured"
        );
    }
}
