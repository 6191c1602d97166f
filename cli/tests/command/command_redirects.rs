//! Issue 27, item 4 (in part): `--max-redirects N`. A framework's `/mcp`
//! to `/mcp/` 307 is followed by default; with `--max-redirects 0` it is the
//! failure it was before: an unexpected status, named.

use crate::support::cli::{json_lines, run_async};
use crate::support::{legacy, Script, ScriptServer};

#[tokio::test]
async fn a_same_origin_307_is_followed_unless_redirects_are_off() {
    let server = ScriptServer::start(|request| match request.route() {
        "/mcp" => Script::StatusWith(307, vec![("location", "/mcp/".to_owned())]),
        _ => legacy(request),
    })
    .await;
    let url = server.url();
    let followed = run_async(&[&url, "--json"]).await;
    let text = String::from_utf8_lossy(&followed.stdout).into_owned();
    assert_eq!(followed.status.code(), Some(0), "{text}");
    assert_eq!(
        json_lines(&followed).last().unwrap()["outcome"],
        "established",
        "{text}"
    );

    let refused = run_async(&[&url, "--json", "--max-redirects", "0"]).await;
    let text = String::from_utf8_lossy(&refused.stdout).into_owned();
    assert_ne!(refused.status.code(), Some(0), "{text}");
    let last = json_lines(&refused).last().unwrap().clone();
    assert_eq!(last["outcome"], "failed", "{text}");
    assert_eq!(last["failure"]["http_status"], 307, "{text}");
    let human = run_async(&[&url, "--max-redirects", "0"]).await;
    let human = String::from_utf8_lossy(&human.stdout).into_owned();
    assert!(human.contains("unexpected HTTP status 307"), "{human}");
    assert!(
        !human.contains("/mcp/"),
        "the Location is never shown: {human}"
    );
}
