//! G8 No replay: recovery covers establishment only; no application request
//! is ever re-sent, and an established session is never replaced behind the
//! caller's back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::{recovering, watchdog, LegacyServer, Script, ScriptServer};
use mcp_connect::ConnectRequest;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

/// G8: a failed tool call on a recovered session reaches the caller once,
/// and nothing re-sends it or builds another session.
#[tokio::test]
async fn a_failed_tool_call_is_never_resent_and_no_new_session_is_made() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let first_initialized = AtomicBool::new(true);
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "notifications/initialized" if first_initialized.swap(false, Ordering::SeqCst) => {
            Script::ResetBeforeHeaders
        }
        "tools/call" => Script::ResetBeforeHeaders,
        _ => responder.respond(r),
    })
    .await;
    let session = watchdog(
        LIMIT,
        recovering(3).connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(legacy.sessions_created(), 2, "establishment recovered once");
    let error = session
        .call_tool("transfer_funds", &json!({ "amount": 100 }))
        .await;
    assert!(error.is_err());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.count("tools/call"), 1, "never replayed");
    assert_eq!(
        legacy.sessions_created(),
        2,
        "no session built behind the caller's back"
    );
    let methods = server.methods();
    let before_call = &methods[..methods.iter().position(|m| m == "tools/call").unwrap()];
    assert!(
        before_call.iter().all(|m| matches!(
            m.as_str(),
            "server/discover" | "initialize" | "notifications/initialized" | "DELETE"
        )),
        "establishment sends handshake requests only: {before_call:?}"
    );
}
