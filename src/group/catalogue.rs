//! One catalogue of every usable server's tools, prompts, resources and
//! resource templates, rebuilt whenever a server's listing changes and
//! read as an immutable snapshot.
//!
//! A snapshot is an `Arc<Catalogue>`: a caller that holds one routes by it
//! while the group builds the next. Its [`version`](Catalogue::version)
//! grows by one each time the content changes, and only then: a server
//! that announces `list_changed` and lists the same tools again, or
//! reconnects and lists what it listed before, leaves the version as it
//! was, so a version is a cheap way to ask "must I tell the model?".

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::naming::{fit, is_valid_tool_name, NameRequest, Naming};
use crate::protocol::{Prompt, Resource, ResourceTemplate, Tool};

/// What one server lists, as last fetched (its tools already filtered).
/// Items are shared with every catalogue that shows them: a rebuild
/// copies pointers, and comparing an unchanged item is a pointer compare.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Listing {
    pub(crate) tools: Vec<Arc<Tool>>,
    pub(crate) prompts: Vec<Arc<Prompt>>,
    pub(crate) resources: Vec<Arc<Resource>>,
    pub(crate) templates: Vec<Arc<ResourceTemplate>>,
}

/// A tool or prompt under its catalogue name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Named<T> {
    /// The name a caller uses (see [`Naming`]).
    pub name: String,
    /// The server that offers it.
    pub server: Arc<str>,
    /// The item as the server listed it; its own `name` is the one the
    /// server is called with.
    pub item: Arc<T>,
}

/// A resource or resource template, with the server that offers it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Listed<T> {
    /// The server that offers it.
    pub server: Arc<str>,
    /// The item as the server listed it.
    pub item: Arc<T>,
}

/// Which kind of named item was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ItemKind {
    /// A tool.
    Tool,
    /// A prompt.
    Prompt,
}

/// Why an item is not in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeftOutReason {
    /// The naming rule gave a name that breaks the tool-name rules (too
    /// long, or characters outside `A-Z a-z 0-9 _ - .`); the name it gave
    /// is kept here.
    InvalidName(String),
    /// The naming rule gave this name to more than one item: none of them
    /// is routed by it.
    Collision(String),
}

/// An item left out of the catalogue; it stays reachable through the
/// server's own client ([`ServerGroup::client`](super::ServerGroup::client)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeftOut {
    /// The server that offers it.
    pub server: Arc<str>,
    /// The name the server gave it.
    pub name: String,
    /// A tool or a prompt.
    pub kind: ItemKind,
    /// Why it was left out.
    pub reason: LeftOutReason,
}

/// A snapshot of the group's catalogue. Tools and prompts are sorted by
/// catalogue name; resources and templates by server, in the server's
/// order.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    version: u64,
    content: Content,
    /// Built after the group's first settle: from then on a name handed
    /// out is kept (not part of the content: it never moves the version).
    settled: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Content {
    tools: Vec<Named<Tool>>,
    prompts: Vec<Named<Prompt>>,
    resources: Vec<Listed<Resource>>,
    templates: Vec<Listed<ResourceTemplate>>,
    left_out: Vec<LeftOut>,
}

impl Catalogue {
    /// Grows by one with every change of content; 0 for the empty
    /// catalogue a group starts with.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Every tool, by catalogue name.
    pub fn tools(&self) -> &[Named<Tool>] {
        &self.content.tools
    }

    /// Every prompt, by catalogue name.
    pub fn prompts(&self) -> &[Named<Prompt>] {
        &self.content.prompts
    }

    /// Every resource.
    pub fn resources(&self) -> &[Listed<Resource>] {
        &self.content.resources
    }

    /// Every resource template.
    pub fn resource_templates(&self) -> &[Listed<ResourceTemplate>] {
        &self.content.templates
    }

    /// The tools and prompts that have no catalogue name, and why.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.content.left_out
    }

    /// The tool a caller names `name`.
    pub fn tool(&self, name: &str) -> Option<&Named<Tool>> {
        find(&self.content.tools, name)
    }

    /// The prompt a caller names `name`.
    pub fn prompt(&self, name: &str) -> Option<&Named<Prompt>> {
        find(&self.content.prompts, name)
    }

    /// The servers whose listing has a resource at exactly `uri`.
    pub fn resource_servers(&self, uri: &str) -> Vec<Arc<str>> {
        let mut servers: Vec<Arc<str>> = self
            .content
            .resources
            .iter()
            .filter(|listed| listed.item.uri == uri)
            .map(|listed| Arc::clone(&listed.server))
            .collect();
        servers.dedup();
        servers
    }

    /// Marks it built after the group settled, without a new version.
    pub(crate) fn mark_settled(&mut self) {
        self.settled = true;
    }

    /// The catalogue of `listings` (server name to listing), one version
    /// after `previous`; `None` when its content is `previous`'s. Names
    /// `previous` handed out are kept when it was built after the group
    /// settled: before, while the servers started at once come up in any
    /// order, names follow the set of servers alone, so the same servers
    /// get the same names on every start.
    pub(crate) fn next(
        previous: &Catalogue,
        listings: &BTreeMap<Arc<str>, Arc<Listing>>,
        naming: &Naming,
        settled: bool,
    ) -> Option<Catalogue> {
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
            &kept(published(
                &previous.content.tools,
                |tool| &tool.name,
                naming,
            )),
            ItemKind::Tool,
            &mut left_out,
        );
        let prompts = named(
            listings,
            |listing| &listing.prompts,
            |prompt| &prompt.name,
            naming,
            &kept(published(
                &previous.content.prompts,
                |prompt| &prompt.name,
                naming,
            )),
            ItemKind::Prompt,
            &mut left_out,
        );
        let mut resources = Vec::new();
        let mut templates = Vec::new();
        for (server, listing) in listings {
            resources.extend(listing.resources.iter().map(|item| Listed {
                server: Arc::clone(server),
                item: Arc::clone(item),
            }));
            templates.extend(listing.templates.iter().map(|item| Listed {
                server: Arc::clone(server),
                item: Arc::clone(item),
            }));
        }
        let content = Content {
            tools,
            prompts,
            resources,
            templates,
            left_out,
        };
        if content == previous.content {
            return None;
        }
        Some(Catalogue {
            version: previous.version + 1,
            content,
            settled,
        })
    }
}

/// The entry named `name` in a list sorted by name.
fn find<'a, T>(named: &'a [Named<T>], name: &str) -> Option<&'a Named<T>> {
    named
        .binary_search_by(|entry| entry.name.as_str().cmp(name))
        .ok()
        .map(|i| &named[i])
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
    if !matches!(naming, Naming::OnCollision) {
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
        }));
    }
    unique
}

#[cfg(test)]
#[path = "catalogue_tests.rs"]
mod tests;
