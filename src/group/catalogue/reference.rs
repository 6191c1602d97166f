//! The catalogue as it was built before it was kept one server at a time:
//! everything named again from every listing. Kept for the tests, which
//! check that the index gives the same catalogue after every change.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{Catalogue, ItemKind, LeftOut, LeftOutReason, Listing, Named};
use crate::group::naming::{fit, is_valid_tool_name, NameRequest, Naming};
use crate::protocol::{Prompt, Tool};

/// What the reference builds: the tools and prompts by name, and what is
/// left out (in no particular order).
#[derive(Debug, PartialEq)]
pub(super) struct Content {
    pub(super) tools: Vec<Named<Tool>>,
    pub(super) prompts: Vec<Named<Prompt>>,
    pub(super) left_out: Vec<LeftOut>,
}

/// Every tool and prompt named from `listings`, after `previous`.
pub(super) fn next(
    previous: &Catalogue,
    listings: &BTreeMap<Arc<str>, Arc<Listing>>,
    naming: &Naming,
) -> Content {
    let kept = |names| {
        if previous.settled {
            names
        } else {
            HashMap::new()
        }
    };
    let mut left_out = Vec::new();
    let tools = named(
        listings,
        |listing| &listing.tools,
        |tool| &tool.name,
        naming,
        &kept(published(previous.tools(), |tool| &tool.name, naming)),
        ItemKind::Tool,
        &mut left_out,
    );
    let prompts = named(
        listings,
        |listing| &listing.prompts,
        |prompt| &prompt.name,
        naming,
        &kept(published(previous.prompts(), |prompt| &prompt.name, naming)),
        ItemKind::Prompt,
        &mut left_out,
    );
    Content {
        tools,
        prompts,
        left_out,
    }
}

/// The names the default rule already handed out, by server and original
/// name: they keep meaning the same item while it exists, whoever joins
/// (a newcomer with the same name is the one prefixed). Empty for the
/// other rules, which are stable by themselves or the application's.
fn published<T>(
    previous: &[Named<T>],
    name_of: impl Fn(&T) -> &String,
    naming: &Naming,
) -> HashMap<(Arc<str>, String), String> {
    if !matches!(naming, Naming::OnCollision | Naming::Never) {
        return HashMap::new();
    }
    previous
        .iter()
        .map(|entry| {
            let key = (Arc::clone(&entry.server), name_of(&entry.item).clone());
            (key, entry.name.clone())
        })
        .collect()
}

/// Names every item of one kind across servers: a name already handed out
/// for it, else the naming rule; then the checks (valid, unique: a name
/// already handed out wins over a new one), sorted by catalogue name.
fn named<T>(
    listings: &BTreeMap<Arc<str>, Arc<Listing>>,
    items: impl Fn(&Listing) -> &Vec<Arc<T>>,
    name_of: impl Fn(&T) -> &String,
    naming: &Naming,
    published: &HashMap<(Arc<str>, String), String>,
    kind: ItemKind,
    left_out: &mut Vec<LeftOut>,
) -> Vec<Named<T>> {
    // How many servers offer each name, as made to fit.
    let mut offered: HashMap<Cow<'_, str>, usize> = HashMap::new();
    for listing in listings.values() {
        let mut names: Vec<Cow<'_, str>> = items(listing)
            .iter()
            .map(|item| fit(name_of(item)))
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            *offered.entry(name).or_default() += 1;
        }
    }
    let mut named = Vec::new();
    for (server, listing) in listings {
        for item in items(listing) {
            let original = name_of(item);
            let request = NameRequest {
                server,
                prefix: server,
                name: original,
                collides: offered
                    .get(&fit(original))
                    .is_some_and(|&servers| servers > 1),
            };
            let kept = published.get(&(Arc::clone(server), original.clone()));
            let name = match kept {
                Some(name) => name.clone(),
                None => naming.name(&request),
            };
            if !is_valid_tool_name(&name) {
                left_out.push(LeftOut {
                    server: Arc::clone(server),
                    name: original.clone(),
                    kind,
                    reason: LeftOutReason::InvalidName(name),
                    others: Vec::new(),
                });
                continue;
            }
            named.push((
                kept.is_some(),
                Named {
                    name,
                    server: Arc::clone(server),
                    item: Arc::clone(item),
                },
            ));
        }
    }
    // Stable: servers in name order, each in its own order; of the same
    // name, one already handed out first.
    named.sort_by(|(a_kept, a), (b_kept, b)| a.name.cmp(&b.name).then(b_kept.cmp(a_kept)));
    let mut unique = Vec::with_capacity(named.len());
    let mut entries = named.into_iter().peekable();
    while let Some((kept, entry)) = entries.next() {
        let mut same = Vec::new();
        while let Some((_, next)) = entries.next_if(|(_, next)| next.name == entry.name) {
            same.push(next);
        }
        if same.is_empty() {
            unique.push(entry);
            continue;
        }
        if kept {
            // The name keeps its meaning; the newcomers are left out.
            let name = entry.name.clone();
            left_out.extend(same.into_iter().map(|other| LeftOut {
                name: name_of(&other.item).clone(),
                server: other.server,
                kind,
                reason: LeftOutReason::Collision(name.clone()),
                others: Vec::new(),
            }));
            unique.push(entry);
            continue;
        }
        let name = entry.name.clone();
        left_out.extend(std::iter::once(entry).chain(same).map(|entry| LeftOut {
            name: name_of(&entry.item).clone(),
            server: entry.server,
            kind,
            reason: LeftOutReason::Collision(name.clone()),
            others: Vec::new(),
        }));
    }
    unique
}
