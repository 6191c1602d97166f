//! The catalogue's naming, routing and versioning, without servers.
use super::*;
use serde_json::json;

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({ "name": name, "inputSchema": { "type": "object" } }))
        .expect("tool")
}

fn listings(servers: &[(&str, &[&str])]) -> BTreeMap<Arc<str>, Arc<Listing>> {
    servers
        .iter()
        .map(|(server, tools)| {
            let listing = Listing {
                tools: tools.iter().map(|name| Arc::new(tool(name))).collect(),
                ..Listing::default()
            };
            (Arc::from(*server), Arc::new(listing))
        })
        .collect()
}

/// The next catalogue, or `previous` again when nothing changed.
fn next(
    previous: &Catalogue,
    listings: &BTreeMap<Arc<str>, Arc<Listing>>,
    naming: &Naming,
) -> Catalogue {
    Catalogue::next(previous, listings, naming, true).unwrap_or_else(|| previous.clone())
}

fn names(catalogue: &Catalogue) -> Vec<(&str, &str, &str)> {
    catalogue
        .tools()
        .iter()
        .map(|t| (t.name.as_str(), &*t.server, t.item.name.as_str()))
        .collect()
}

/// Issue 44, item 2: a name handed out keeps meaning the same tool
/// when a server with the same name joins; the newcomer is prefixed.
#[test]
fn a_published_name_survives_a_colliding_newcomer() {
    let alone = listings(&[("py", &["add"])]);
    let first = next(&Catalogue::default(), &alone, &Naming::OnCollision);
    assert_eq!(names(&first), vec![("add", "py", "add")]);
    let both = listings(&[("js", &["add"]), ("py", &["add"])]);
    let second = next(&first, &both, &Naming::OnCollision);
    assert_eq!(
        names(&second),
        vec![("add", "py", "add"), ("js__add", "js", "add")]
    );
    // Started together, neither wins: both prefixed.
    let together = next(&Catalogue::default(), &both, &Naming::OnCollision);
    assert_eq!(
        names(&together),
        vec![("js__add", "js", "add"), ("py__add", "py", "add")]
    );
    // Once handed out, a prefixed name stays when the other leaves.
    let alone_again = next(&together, &alone, &Naming::OnCollision);
    assert_eq!(names(&alone_again), vec![("py__add", "py", "add")]);
}

#[test]
fn collisions_are_prefixed_on_every_side_and_routed_to_the_original() {
    let start = Catalogue::default();
    let servers = listings(&[("files", &["read", "list"]), ("git", &["read", "log"])]);
    let catalogue = next(&start, &servers, &Naming::OnCollision);
    assert_eq!(
        names(&catalogue),
        vec![
            ("files__read", "files", "read"),
            ("git__read", "git", "read"),
            ("list", "files", "list"),
            ("log", "git", "log"),
        ]
    );
    let routed = catalogue.tool("git__read").expect("routed");
    assert_eq!(
        (&*routed.server, routed.item.name.as_str()),
        ("git", "read")
    );
    assert!(catalogue.tool("read").is_none());
    assert_eq!(catalogue.version(), 1);
}

/// Issue 40, item 3: a server that lists a tool literally named
/// `files__read` neither knocks `files`'s `read` out (a) nor receives
/// the calls meant for `files__read` once `files` is gone (b).
#[test]
fn a_server_given_name_never_takes_another_servers_namespace() {
    for naming in [Naming::OnCollision, Naming::Always] {
        // git's `read` makes files's `files__read` under either rule.
        let both = listings(&[
            ("files", &["read"]),
            ("git", &["read"]),
            ("evil", &["files__read"]),
        ]);
        let catalogue = next(&Catalogue::default(), &both, &naming);
        let routed = catalogue.tool("files__read").expect("files's read");
        assert_eq!(&*routed.server, "files", "{naming:?}");
        assert_eq!(routed.item.name, "read");
        let squat = catalogue.tool("evil__files__read").expect("evil's own");
        assert_eq!(&*squat.server, "evil");
        assert!(
            catalogue.left_out().is_empty(),
            "{:?}",
            catalogue.left_out()
        );

        let gone = listings(&[("git", &["read"]), ("evil", &["files__read"])]);
        let catalogue = next(&Catalogue::default(), &gone, &naming);
        assert!(catalogue.tool("files__read").is_none(), "{naming:?}");
        assert!(catalogue.tool("evil__files__read").is_some());
    }
}

#[test]
fn the_version_moves_only_with_the_content() {
    let servers = listings(&[("a", &["x"])]);
    let first = next(&Catalogue::default(), &servers, &Naming::OnCollision);
    let same = next(&first, &listings(&[("a", &["x"])]), &Naming::OnCollision);
    assert_eq!(same.version(), 1);
    let changed = next(&same, &listings(&[("a", &["x", "y"])]), &Naming::Always);
    assert_eq!(changed.version(), 2);
    assert_eq!(changed.tools()[0].name, "a__x");
}

#[test]
fn names_that_break_the_rules_or_still_collide_are_left_out() {
    let long = "t".repeat(127);
    let servers = listings(&[
        ("a b", &["user/update", long.as_str()]),
        ("c", &[long.as_str()]),
    ]);
    let catalogue = next(&Catalogue::default(), &servers, &Naming::OnCollision);
    // "user/update" fits as "user_update"; the long name collides, and
    // prefixed it is longer than 128 characters.
    assert_eq!(
        names(&catalogue),
        vec![("user_update", "a b", "user/update")]
    );
    assert_eq!(catalogue.left_out().len(), 2);
    assert!(catalogue
        .left_out()
        .iter()
        .all(|l| matches!(l.reason, LeftOutReason::InvalidName(_))));
    // A custom rule that names two tools alike routes neither.
    let same = Naming::custom(|_| "same".to_owned());
    let catalogue = next(
        &Catalogue::default(),
        &listings(&[("a", &["x", "y"])]),
        &same,
    );
    assert!(catalogue.tools().is_empty());
    assert_eq!(
        catalogue.left_out()[0].reason,
        LeftOutReason::Collision("same".into())
    );
}
