//! One kind of named item (tools, or prompts) across the servers: each
//! item's slot, the servers offering each name, the items claiming it, and
//! the rule that settles a collision (see the parent module).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::super::{ItemKind, LeftOut, LeftOutReason, Named};
use crate::group::naming::{fit, is_valid_tool_name, NameRequest, Naming};
use crate::protocol::{Prompt, Tool};

/// A tool or a prompt: what the catalogue names.
pub(super) trait Nameable {
    const KIND: ItemKind;
    fn original(&self) -> &String;
}

impl Nameable for Tool {
    const KIND: ItemKind = ItemKind::Tool;
    fn original(&self) -> &String {
        &self.name
    }
}

impl Nameable for Prompt {
    const KIND: ItemKind = ItemKind::Prompt;
    fn original(&self) -> &String {
        &self.name
    }
}

/// Where one item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In the catalogue under its name.
    Named,
    /// Its name is shared: left out.
    Collision,
    /// Its name breaks the rules: left out.
    Invalid,
    /// Listed by the change under way; `kept` when it has the name it had
    /// in the settled catalogue before.
    New { kept: bool },
}

#[derive(Debug, Clone)]
struct Slot<T> {
    item: Arc<T>,
    name: String,
    state: State,
    /// Its name was given on an earlier run: kept before the group settles.
    remembered: bool,
}

/// One kind of named item (tools, or prompts) across the servers.
#[derive(Debug, Clone)]
pub(super) struct Names<T> {
    /// Each server's items, in its order.
    slots: HashMap<Arc<str>, Vec<Slot<T>>>,
    /// The servers offering each name, as made to fit.
    offered: HashMap<String, BTreeSet<Arc<str>>>,
    /// The items claiming each catalogue name: server and position.
    claims: HashMap<String, Vec<(Arc<str>, usize)>>,
}

impl<T> Default for Names<T> {
    fn default() -> Self {
        Names {
            slots: HashMap::new(),
            offered: HashMap::new(),
            claims: HashMap::new(),
        }
    }
}

/// How the change under way names things.
pub(super) struct Rule<'a> {
    pub(super) naming: &'a Naming,
    /// The servers with a prefix of their own.
    pub(super) prefixes: &'a HashMap<Arc<str>, Arc<str>>,
    /// Names handed out are kept: the default rule, once settled.
    pub(super) keeps: bool,
}

impl Rule<'_> {
    /// What `server`'s names are prefixed with.
    fn prefix<'s>(&'s self, server: &'s str) -> &'s str {
        self.prefixes.get(server).map_or(server, |prefix| &**prefix)
    }

    /// Whether the default rule could give `original`, of `server`, the
    /// name `name` now (bare, or under the server's prefix): a remembered
    /// name that still can is kept; one from another rule or another
    /// server name is not.
    fn could_give(&self, server: &str, original: &str, name: &str) -> bool {
        matches!(self.naming, Naming::OnCollision | Naming::Never)
            && [false, true].into_iter().any(|collides| {
                let request = NameRequest {
                    server,
                    prefix: self.prefix(server),
                    name: original,
                    collides,
                };
                self.naming.name(&request) == name
            })
    }
}

impl<T: Nameable> Names<T> {
    /// Replaces `server`'s items with `items`; adds every server whose
    /// entries may have moved to `touched`.
    pub(super) fn replace(
        &mut self,
        server: &Arc<str>,
        items: &[Arc<T>],
        rule: &Rule<'_>,
        remembered: Option<&BTreeMap<String, String>>,
        touched: &mut BTreeSet<Arc<str>>,
    ) {
        let old = self.slots.remove(server).unwrap_or_default();
        let kept: HashMap<&str, &str> = if rule.keeps {
            (old.iter())
                .filter(|slot| slot.state == State::Named)
                .map(|slot| (slot.item.original().as_str(), slot.name.as_str()))
                .collect()
        } else {
            HashMap::new()
        };
        let mut dirty = BTreeSet::new();
        for (index, slot) in old.iter().enumerate() {
            if slot.state != State::Invalid {
                self.unclaim(&slot.name, server, index);
                dirty.insert(slot.name.clone());
            }
        }
        let before = fitted(old.iter().map(|slot| &slot.item));
        let after = fitted(items.iter());
        let mut flipped = Vec::new();
        for name in before.difference(&after) {
            if let Some(servers) = self.offered.get_mut(name) {
                servers.remove(server);
                match servers.len() {
                    0 => drop(self.offered.remove(name)),
                    1 => flipped.push(name.clone()),
                    _ => {}
                }
            }
        }
        for name in after.difference(&before) {
            let servers = self.offered.entry(name.clone()).or_default();
            servers.insert(Arc::clone(server));
            if servers.len() == 2 {
                flipped.push(name.clone());
            }
        }
        let slots = (items.iter().enumerate())
            .map(|(index, item)| {
                let original = item.original();
                let from_memory = (remembered.and_then(|names| names.get(original)))
                    .filter(|name| rule.could_give(server, original, name));
                let (name, kept, remembered) = match (kept.get(original.as_str()), from_memory) {
                    (Some(name), _) => ((*name).to_owned(), true, false),
                    (None, Some(name)) => (name.clone(), true, true),
                    (None, None) => (self.name_for(server, item, rule), false, false),
                };
                let state = if is_valid_tool_name(&name) {
                    self.claim(&name, server, index);
                    dirty.insert(name.clone());
                    State::New { kept }
                } else {
                    State::Invalid
                };
                Slot {
                    item: Arc::clone(item),
                    name,
                    state,
                    remembered,
                }
            })
            .collect::<Vec<_>>();
        if !slots.is_empty() {
            self.slots.insert(Arc::clone(server), slots);
        }
        touched.insert(Arc::clone(server));
        // Whether a name collides changed: the other servers' items of
        // that name are named again, except those a settled catalogue
        // already shows (their names are kept).
        for name in flipped {
            let others: Vec<Arc<str>> = (self.offered.get(&name).into_iter().flatten())
                .filter(|other| *other != server)
                .cloned()
                .collect();
            for other in others {
                self.rename(&other, &name, rule, &mut dirty, touched);
            }
        }
        for name in dirty {
            self.resolve(&name, rule, touched);
        }
    }

    pub(super) fn name_for(&self, server: &str, item: &T, rule: &Rule<'_>) -> String {
        let original = item.original();
        let collides = (self.offered.get(&*fit(original))).is_some_and(|servers| servers.len() > 1);
        rule.naming.name(&NameRequest {
            server,
            prefix: rule.prefix(server),
            name: original,
            collides,
        })
    }

    /// Names `server`'s items made to fit as `fitted` again.
    pub(super) fn rename(
        &mut self,
        server: &Arc<str>,
        fitted: &str,
        rule: &Rule<'_>,
        dirty: &mut BTreeSet<String>,
        touched: &mut BTreeSet<Arc<str>>,
    ) {
        let Some(mut slots) = self.slots.remove(server) else {
            return;
        };
        // A name shown keeps its item, and every item the server lists
        // under the same original name (as the kept names always did).
        let keeps = |slot: &Slot<T>| (rule.keeps || slot.remembered) && slot.state == State::Named;
        let kept: HashMap<String, String> = (slots.iter())
            .filter(|slot| keeps(slot))
            .map(|slot| (slot.item.original().clone(), slot.name.clone()))
            .collect();
        for (index, slot) in slots.iter_mut().enumerate() {
            let keeps_its_name = keeps(slot);
            if keeps_its_name || fit(slot.item.original()) != Cow::Borrowed(fitted) {
                continue;
            }
            let (name, kept) = match kept.get(slot.item.original()) {
                Some(name) => (name.clone(), true),
                None => (self.name_for(server, &slot.item, rule), false),
            };
            if name == slot.name {
                continue;
            }
            if slot.state != State::Invalid {
                self.unclaim(&slot.name, server, index);
                dirty.insert(std::mem::take(&mut slot.name));
            }
            slot.state = if is_valid_tool_name(&name) {
                self.claim(&name, server, index);
                dirty.insert(name.clone());
                State::New { kept }
            } else {
                State::Invalid
            };
            slot.name = name;
            slot.remembered = false;
            touched.insert(Arc::clone(server));
        }
        self.slots.insert(Arc::clone(server), slots);
    }

    pub(super) fn claim(&mut self, name: &str, server: &Arc<str>, index: usize) {
        let claims = self.claims.entry(name.to_owned()).or_default();
        claims.push((Arc::clone(server), index));
    }

    pub(super) fn unclaim(&mut self, name: &str, server: &Arc<str>, index: usize) {
        if let Some(claims) = self.claims.get_mut(name) {
            claims.retain(|(s, i)| !(s == server && *i == index));
            if claims.is_empty() {
                self.claims.remove(name);
            }
        }
    }

    /// Decides who has `name`: its only claimant; or, of several, the one
    /// that had it before (first in server order), the others left out;
    /// or, when none had it, none of them.
    pub(super) fn resolve(
        &mut self,
        name: &str,
        rule: &Rule<'_>,
        touched: &mut BTreeSet<Arc<str>>,
    ) {
        let Some(claims) = self.claims.get(name) else {
            return;
        };
        let mut claims: Vec<(bool, Arc<str>, usize)> = (claims.iter())
            .map(|(server, index)| {
                let slots = &self.slots[server];
                let slot = &slots[*index];
                // Kept: named so by this change for that reason, or listed
                // under an original name the server's shown item has
                // (itself, or a twin of the same name).
                let kept = slot.state == State::New { kept: true }
                    || slots.iter().any(|other| {
                        other.state == State::Named
                            && other.name == slot.name
                            && other.item.original() == slot.item.original()
                    });
                (
                    (rule.keeps || slot.remembered) && kept,
                    Arc::clone(server),
                    *index,
                )
            })
            .collect();
        claims.sort_by(|(a_kept, a_server, a), (b_kept, b_server, b)| {
            b_kept
                .cmp(a_kept)
                .then(a_server.cmp(b_server))
                .then(a.cmp(b))
        });
        let winner = claims.len() == 1 || claims[0].0;
        for (position, (_, server, index)) in claims.into_iter().enumerate() {
            let state = if position == 0 && winner {
                State::Named
            } else {
                State::Collision
            };
            let slot = &mut self.slots.get_mut(&server).expect("a claim has a slot")[index];
            if slot.state != state {
                slot.state = state;
                touched.insert(server);
            }
        }
    }

    /// The catalogue names `server`'s items have now, by original name.
    pub(super) fn given(&self, server: &Arc<str>) -> BTreeMap<String, String> {
        (self.slots.get(server).into_iter().flatten())
            .filter(|slot| slot.state == State::Named)
            .map(|slot| (slot.item.original().clone(), slot.name.clone()))
            .collect()
    }

    /// What `server` shows of this kind, and what it leaves out.
    pub(super) fn part(&self, server: &Arc<str>, left_out: &mut Vec<LeftOut>) -> Vec<Named<T>> {
        let mut named = Vec::new();
        for slot in self.slots.get(server).into_iter().flatten() {
            let reason = match slot.state {
                State::Named => {
                    named.push(Named {
                        name: slot.name.clone(),
                        server: Arc::clone(server),
                        item: Arc::clone(&slot.item),
                    });
                    continue;
                }
                State::Collision => LeftOutReason::Collision(slot.name.clone()),
                State::Invalid => LeftOutReason::InvalidName(slot.name.clone()),
                State::New { .. } => unreachable!("every new item is resolved"),
            };
            let others = match slot.state {
                State::Collision => (self.claims.get(&slot.name).into_iter().flatten())
                    .map(|(other, _)| other)
                    .filter(|other| *other != server)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .cloned()
                    .collect(),
                _ => Vec::new(),
            };
            left_out.push(LeftOut {
                server: Arc::clone(server),
                name: slot.item.original().clone(),
                kind: T::KIND,
                reason,
                others,
            });
        }
        named
    }
}

/// The distinct names of `items`, as made to fit.
fn fitted<'a, T: Nameable + 'a>(items: impl Iterator<Item = &'a Arc<T>>) -> BTreeSet<String> {
    items
        .map(|item| fit(item.original()).into_owned())
        .collect()
}
