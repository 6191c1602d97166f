//! The catalogue's naming, routing and versioning, without servers.
use super::*;
use crate::group::Naming;
use serde_json::json;
use std::collections::BTreeMap;

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

/// A catalogue with the index it was published from.
#[derive(Debug, Clone, Default)]
struct Step {
    index: CatalogueIndex,
    listings: BTreeMap<Arc<str>, Arc<Listing>>,
    catalogue: Catalogue,
}

impl std::ops::Deref for Step {
    type Target = Catalogue;
    fn deref(&self) -> &Catalogue {
        &self.catalogue
    }
}

impl Step {
    /// Sets one server's listing, as a group does.
    fn set(&mut self, server: &Arc<str>, listing: Option<Arc<Listing>>, naming: &Naming) {
        match &listing {
            Some(listing) => self
                .listings
                .insert(Arc::clone(server), Arc::clone(listing)),
            None => self.listings.remove(server),
        };
        self.index.set(server, listing, naming, None);
    }

    /// Publishes what was set, as a group does after a burst of changes.
    fn publish(&mut self, settled: bool) {
        match self.index.publish(&self.catalogue, settled) {
            Some(next) => self.catalogue = next,
            None if settled => self.catalogue.mark_settled(),
            None => {}
        }
    }
}

/// The catalogue after `previous` with `listings` (one burst: those gone
/// first, then the others), settled; `previous` again when nothing
/// changed.
fn next(previous: &Step, listings: &BTreeMap<Arc<str>, Arc<Listing>>, naming: &Naming) -> Step {
    let mut step = previous.clone();
    let gone: Vec<Arc<str>> = (previous.listings.keys())
        .filter(|server| !listings.contains_key(*server))
        .cloned()
        .collect();
    for server in gone {
        step.set(&server, None, naming);
    }
    for (server, listing) in listings {
        step.set(server, Some(Arc::clone(listing)), naming);
    }
    step.publish(true);
    step
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
    let first = next(&Step::default(), &alone, &Naming::OnCollision);
    assert_eq!(names(&first), vec![("add", "py", "add")]);
    let both = listings(&[("js", &["add"]), ("py", &["add"])]);
    let second = next(&first, &both, &Naming::OnCollision);
    assert_eq!(
        names(&second),
        vec![("add", "py", "add"), ("js__add", "js", "add")]
    );
    // Started together, neither wins: both prefixed.
    let together = next(&Step::default(), &both, &Naming::OnCollision);
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
    let start = Step::default();
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
        let catalogue = next(&Step::default(), &both, &naming);
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
        let catalogue = next(&Step::default(), &gone, &naming);
        assert!(catalogue.tool("files__read").is_none(), "{naming:?}");
        assert!(catalogue.tool("evil__files__read").is_some());
    }
}

#[test]
fn the_version_moves_only_with_the_content() {
    let servers = listings(&[("a", &["x"])]);
    let first = next(&Step::default(), &servers, &Naming::OnCollision);
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
    let catalogue = next(&Step::default(), &servers, &Naming::OnCollision);
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
    let catalogue = next(&Step::default(), &listings(&[("a", &["x", "y"])]), &same);
    assert!(catalogue.tools().is_empty());
    assert_eq!(
        catalogue.left_out()[0].reason,
        LeftOutReason::Collision("same".into())
    );
}

/// The index gives, after every burst of changes, the catalogue the old
/// rebuild-everything code gives from the same listings (kept as
/// `reference`): random listings over a few servers and colliding names,
/// under each rule, before and after the group settles. After the settle
/// a burst is one change: within a burst the index names as if each
/// change were published alone, which the old code did not.
#[test]
fn the_index_names_as_a_full_rebuild_does() {
    let long = "t".repeat(127);
    let pool = [
        "x",
        "y",
        "read",
        "a__x",
        "files__read",
        "user/update",
        &long,
        "x",
    ];
    let servers: Vec<Arc<str>> = ["a", "b", "files", "a b"].map(Arc::from).to_vec();
    let rules = || {
        [
            Naming::OnCollision,
            Naming::Always,
            Naming::Never,
            Naming::custom(|r| {
                if r.collides {
                    "same".into()
                } else {
                    r.name.replace('/', "_")
                }
            }),
        ]
    };
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below as u64) as usize
    };
    let mut checked = 0;
    for round in 0..300 {
        for naming in rules() {
            let mut step = Step::default();
            let settle_at = random(12);
            for burst in 0..12 {
                let settled = burst >= settle_at;
                let changes = if step.is_settled() { 1 } else { 1 + random(3) };
                for _ in 0..changes {
                    let server = &servers[random(servers.len())];
                    let listing = (random(5) > 0).then(|| {
                        let (tools, prompts) = (random(4), random(3));
                        let mut names = (0..tools + prompts).map(|_| pool[random(pool.len())]);
                        let tools = (names.by_ref().take(tools))
                            .map(|name| Arc::new(tool(name)))
                            .collect();
                        let prompts = names
                            .map(|name| {
                                Arc::new(serde_json::from_value(json!({ "name": name })).unwrap())
                            })
                            .collect();
                        Arc::new(Listing {
                            tools,
                            prompts,
                            ..Listing::default()
                        })
                    });
                    step.set(server, listing, &naming);
                }
                let expected = reference::next(&step.catalogue, &step.listings, &naming);
                step.publish(settled);
                let sorted = |left_out: &[LeftOut]| {
                    // Who else claimed a name is the index's own report.
                    let mut left_out: Vec<LeftOut> = (left_out.iter())
                        .map(|l| LeftOut {
                            others: Vec::new(),
                            ..l.clone()
                        })
                        .collect();
                    left_out.sort_by_key(|l| {
                        (
                            l.server.clone(),
                            l.name.clone(),
                            format!("{:?}{:?}", l.kind, l.reason),
                        )
                    });
                    left_out
                };
                let context = format!("round {round}, burst {burst}, {naming:?}");
                assert_eq!(step.tools(), expected.tools, "{context}");
                assert_eq!(step.prompts(), expected.prompts, "{context}");
                assert_eq!(
                    sorted(step.left_out()),
                    sorted(&expected.left_out),
                    "{context}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 300 * 4 * 12);
}

/// Issue 67, item 1: under `never` a name two servers offer is refused
/// on both, each naming the other; once settled, the holder keeps its
/// name and only the newcomer is refused; names are never prefixed.
#[test]
fn never_refuses_a_collision_naming_both_servers() {
    let never = Naming::Never;
    let both = listings(&[("gh", &["search", "issue"]), ("web", &["search"])]);
    let together = next(&Step::default(), &both, &never);
    assert_eq!(names(&together), vec![("issue", "gh", "issue")]);
    let refused: Vec<(&str, Vec<&str>)> = (together.left_out().iter())
        .map(|l| (&*l.server, l.others.iter().map(|s| &**s).collect()))
        .collect();
    assert_eq!(refused, vec![("gh", vec!["web"]), ("web", vec!["gh"])]);
    assert!(together
        .left_out()
        .iter()
        .all(|l| l.reason == LeftOutReason::Collision("search".into())));

    let alone = listings(&[("gh", &["search", "issue"])]);
    let first = next(&Step::default(), &alone, &never);
    let joined = next(&first, &both, &never);
    assert_eq!(
        names(&joined),
        vec![("issue", "gh", "issue"), ("search", "gh", "search")],
        "the holder keeps its name"
    );
    assert_eq!(joined.left_out().len(), 1);
    assert_eq!(&*joined.left_out()[0].server, "web");
    assert_eq!(joined.left_out()[0].others, vec![Arc::<str>::from("gh")]);
}

/// Issue 67, item 1: a server's own prefix replaces its name wherever
/// the rule prefixes, and only there.
#[test]
fn a_servers_own_prefix_replaces_its_name() {
    let mut step = Step::default();
    step.index.set_prefix(&Arc::from("github"), Some("gh"));
    let both = listings(&[("github", &["search", "issue"]), ("web", &["search"])]);
    let catalogue = next(&step, &both, &Naming::OnCollision);
    assert_eq!(
        names(&catalogue),
        vec![
            ("gh__search", "github", "search"),
            ("issue", "github", "issue"),
            ("web__search", "web", "search"),
        ]
    );
    let always = next(&step, &both, &Naming::Always);
    assert_eq!(always.tools()[0].name, "gh__issue");
}

/// A hostile tool name: empty, 500 characters, Unicode, the group's
/// separator, the separators other gateways use, a vendor name's shape.
fn hostile_name() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        Just(String::new()),
        Just("x".repeat(500)),
        Just("a".repeat(128)),
        Just("b".repeat(65)),
        Just("__".to_owned()),
        Just("files__read".to_owned()),
        Just("files_read_2c8d1f6e".to_owned()),
        "[a-z]{1,6}",
        "[a-z]{1,4}[/:. -][a-z]{1,4}",
        "[a-zA-Z0-9_.:/ -]{1,80}",
        "\\PC{1,12}",
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Issue 67, item 2: under every rule, every name the catalogue
    /// exposes follows SEP-986, every vendor name the vendors' pattern;
    /// no two tools share either; each maps back to its own tool; and
    /// every tool a server lists is exposed or reported, never dropped.
    #[test]
    fn every_exposed_name_is_one_every_consumer_accepts(
        servers in proptest::collection::vec(
            (proptest::sample::select(vec!["a", "gh", "my server", "x__y", "ünï"]),
             proptest::collection::vec(hostile_name(), 0..6)),
            1..4,
        ),
        rule in 0..3usize,
    ) {
        let naming = [Naming::OnCollision, Naming::Always, Naming::Never][rule].clone();
        let mut listings: BTreeMap<Arc<str>, Arc<Listing>> = BTreeMap::new();
        for (server, names) in &servers {
            let tools = names.iter().map(|name| Arc::new(tool(name))).collect();
            listings.insert(Arc::from(*server), Arc::new(Listing { tools, ..Listing::default() }));
        }
        let catalogue = next(&Step::default(), &listings, &naming);
        let vendor = |n: &str| {
            (1..=64).contains(&n.len())
                && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        let mut seen = std::collections::HashSet::new();
        for tool in catalogue.tools() {
            proptest::prop_assert!(crate::group::is_valid_tool_name(&tool.name), "{:?}", tool.name);
            proptest::prop_assert!(seen.insert(tool.name.clone()), "twice: {:?}", tool.name);
        }
        let mut vendors = std::collections::HashSet::new();
        for (name, tool) in catalogue.vendor_tools() {
            proptest::prop_assert!(vendor(&name), "{name:?}");
            proptest::prop_assert!(vendors.insert(name.to_string()), "twice: {name:?}");
            let back = catalogue.tool_by_vendor_name(&name).expect("maps back");
            proptest::prop_assert_eq!(&back.name, &tool.name);
            proptest::prop_assert_eq!(&back.server, &tool.server);
        }
        let listed: usize = listings.values().map(|l| l.tools.len()).sum();
        let reported = catalogue.left_out().iter().filter(|l| l.kind == ItemKind::Tool).count();
        proptest::prop_assert_eq!(catalogue.tools().len() + reported, listed);
    }
}
