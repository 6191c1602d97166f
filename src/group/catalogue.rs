//! One catalogue of every usable server's tools, prompts, resources and
//! resource templates, updated one server at a time as listings change
//! ([`index`]) and read as an immutable snapshot.
//!
//! A snapshot is an `Arc<Catalogue>`: a caller that holds one routes by it
//! while the group builds the next. It shares each server's entries with
//! the group (a publish copies one pointer per server, not every item);
//! the sorted lists are built on the first read of a snapshot. Its [`version`](Catalogue::version)
//! grows by one each time the content changes, and only then: a server
//! that announces `list_changed` and lists the same tools again, or
//! reconnects and lists what it listed before, leaves the version as it
//! was, so a version is a cheap way to ask "must I tell the model?".

mod index;
mod parts;
#[cfg(test)]
mod reference;
mod uri_template;
mod vendor_names;

use std::sync::{Arc, OnceLock};

pub(crate) use index::CatalogueIndex;
pub(super) use vendor_names::VendorNames;
pub use vendor_names::{vendor_name, VENDOR_NAME_MAX};

use crate::protocol::{Prompt, Resource, ResourceTemplate, Tool};

/// What one server lists, as last fetched (its tools already filtered).
/// Items are shared with every catalogue that shows them: a change
/// copies pointers, and comparing an unchanged item is a pointer compare.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Listing {
    pub(crate) tools: Vec<Arc<Tool>>,
    pub(crate) prompts: Vec<Arc<Prompt>>,
    pub(crate) resources: Vec<Arc<Resource>>,
    pub(crate) templates: Vec<Arc<ResourceTemplate>>,
    /// The server's filter patterns that matched none of its tools.
    pub(crate) unmatched: Vec<String>,
}

/// The catalogue names a server's tools and prompts were given, by the
/// name the server gives each: remembered with the server's listing, so a
/// name once handed out is handed out again on the next run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct GivenNames {
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) tools: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) prompts: std::collections::BTreeMap<String, String>,
}

impl GivenNames {
    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.prompts.is_empty()
    }
}

/// A tool or prompt under its catalogue name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Named<T> {
    /// The name a caller uses (see [`Naming`](super::Naming)).
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
    /// For a collision, the other servers whose items claimed the same
    /// name when it was left out, by name.
    pub others: Vec<Arc<str>>,
}

/// A snapshot of the group's catalogue. Tools and prompts are sorted by
/// catalogue name; resources, templates and the items left out by server,
/// each in the server's order.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    version: u64,
    parts: parts::Parts,
    /// Built after the group's first settle: from then on a name handed
    /// out is kept (not part of the content: it never moves the version).
    settled: bool,
    /// The lists, built from the parts on the first read.
    view: OnceLock<View>,
    /// The tools' vendor names, made on the first ask.
    vendor: OnceLock<VendorNames>,
    /// The tokens its tool definitions take, estimated on the first ask.
    pub(super) tokens: OnceLock<usize>,
}

/// What one server shows in the catalogue, and what of it is left out.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Part {
    tools: Vec<Named<Tool>>,
    prompts: Vec<Named<Prompt>>,
    resources: Vec<Listed<Resource>>,
    templates: Vec<Listed<ResourceTemplate>>,
    left_out: Vec<LeftOut>,
    unmatched: Vec<String>,
}

impl Part {
    /// The server's tools under their catalogue names.
    pub(crate) fn tools(&self) -> &[Named<Tool>] {
        &self.tools
    }
}

#[derive(Debug, Clone, Default)]
struct View {
    tools: Vec<Named<Tool>>,
    prompts: Vec<Named<Prompt>>,
    resources: Vec<Listed<Resource>>,
    templates: Vec<Listed<ResourceTemplate>>,
    left_out: Vec<LeftOut>,
    unmatched: Vec<(Arc<str>, String)>,
}

impl Catalogue {
    fn of(version: u64, parts: parts::Parts, settled: bool) -> Catalogue {
        Catalogue {
            version,
            parts,
            settled,
            view: OnceLock::new(),
            vendor: OnceLock::new(),
            tokens: OnceLock::new(),
        }
    }

    /// Every tool's vendor name (see [`vendor_tools`](Self::vendor_tools)).
    pub(super) fn vendor_names(&self) -> &VendorNames {
        self.vendor.get_or_init(|| VendorNames::of(self.tools()))
    }

    fn view(&self) -> &View {
        self.view.get_or_init(|| {
            let mut view = View::default();
            for (server, part) in self.parts.in_order() {
                view.tools.extend(part.tools.iter().cloned());
                view.prompts.extend(part.prompts.iter().cloned());
                view.resources.extend(part.resources.iter().cloned());
                view.templates.extend(part.templates.iter().cloned());
                view.left_out.extend(part.left_out.iter().cloned());
                let unmatched = part.unmatched.iter().cloned();
                view.unmatched
                    .extend(unmatched.map(|p| (Arc::clone(server), p)));
            }
            // Names are unique across the catalogue.
            view.tools.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            view.prompts.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            view
        })
    }

    /// Grows by one with every change of content; 0 for the empty
    /// catalogue a group starts with.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Every tool, by catalogue name.
    pub fn tools(&self) -> &[Named<Tool>] {
        &self.view().tools
    }

    /// Every prompt, by catalogue name.
    pub fn prompts(&self) -> &[Named<Prompt>] {
        &self.view().prompts
    }

    /// Every resource.
    pub fn resources(&self) -> &[Listed<Resource>] {
        &self.view().resources
    }

    /// Every resource template.
    pub fn resource_templates(&self) -> &[Listed<ResourceTemplate>] {
        &self.view().templates
    }

    /// The tools and prompts that have no catalogue name, and why.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.view().left_out
    }

    /// Each server's tool filter patterns (include or exclude) that match
    /// none of the tools it lists, by server: a warning for whoever wrote
    /// them (a typo, or a tool the server renamed), never an error.
    pub fn unmatched_patterns(&self) -> &[(Arc<str>, String)] {
        &self.view().unmatched
    }

    /// The tool a caller names `name`.
    pub fn tool(&self, name: &str) -> Option<&Named<Tool>> {
        find(self.tools(), name)
    }

    /// The prompt a caller names `name`.
    pub fn prompt(&self, name: &str) -> Option<&Named<Prompt>> {
        find(self.prompts(), name)
    }

    /// The servers whose listing has a resource at exactly `uri`; when
    /// none has, the servers with a resource template that `uri` matches.
    pub fn resource_servers(&self, uri: &str) -> Vec<Arc<str>> {
        // On the routing path: sort the few that match, not every server.
        let servers = |owns: &dyn Fn(&Part) -> bool| {
            let mut servers: Vec<Arc<str>> = (self.parts.iter())
                .filter(|(_, part)| owns(part))
                .map(|(server, _)| Arc::clone(server))
                .collect();
            servers.sort_unstable();
            servers
        };
        let listed = servers(&|part| part.resources.iter().any(|r| r.item.uri == uri));
        if !listed.is_empty() {
            return listed;
        }
        servers(&|part| {
            (part.templates.iter()).any(|t| uri_template::matches(&t.item.uri_template, uri))
        })
    }

    /// Each server's part, in no particular order.
    pub(crate) fn parts(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<Part>)> {
        self.parts.iter()
    }

    pub(crate) fn is_settled(&self) -> bool {
        self.settled
    }

    /// Marks it built after the group settled, without a new version.
    pub(crate) fn mark_settled(&mut self) {
        self.settled = true;
    }
}

/// The entry named `name` in a list sorted by name.
fn find<'a, T>(named: &'a [Named<T>], name: &str) -> Option<&'a Named<T>> {
    named
        .binary_search_by(|entry| entry.name.as_str().cmp(name))
        .ok()
        .map(|i| &named[i])
}

#[cfg(test)]
#[path = "catalogue_tests.rs"]
mod tests;
