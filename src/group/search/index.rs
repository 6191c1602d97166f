//! The inverted index behind [`ServerGroup::search_tools`](super::super::ServerGroup::search_tools),
//! kept one server at a time: a catalogue snapshot is compared with the
//! last one indexed part by part (one pointer compare per server), and
//! only the servers whose part changed have their tools taken out and put
//! back. Scores are Okapi BM25 (k1 1.2, b 0.75) over one weighted field:
//! a word in a tool's name counts three times, in its title or a
//! parameter's name twice, in a description once.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::tokens::Tokens;
use crate::group::catalogue::{Catalogue, Named, Part};
use crate::protocol::Tool;

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// How much a query word of four letters or more counts when it only
/// begins an indexed word (`repo` in `repositori`).
const PREFIX_WEIGHT: f32 = 0.4;

struct Doc {
    tool: Named<Tool>,
    /// The weighted count of its words.
    length: f32,
    /// Its distinct words, to take it out of the postings.
    words: Vec<String>,
}

/// Every indexed tool's words.
#[derive(Default)]
pub(crate) struct SearchIndex {
    /// The catalogue version last indexed (`None`: nothing yet).
    version: Option<u64>,
    /// Each server's part as last indexed, and its documents.
    servers: HashMap<Arc<str>, (Arc<Part>, Vec<u32>)>,
    docs: Vec<Option<Doc>>,
    free: Vec<u32>,
    /// Each word's documents and its weighted count in each; sorted, so a
    /// prefix is a range.
    postings: BTreeMap<String, HashMap<u32, f32>>,
    total_length: f64,
    live: usize,
}

impl SearchIndex {
    /// Brings the index to `catalogue`: the servers whose part changed
    /// are indexed again, the others are not touched.
    pub(crate) fn follow(&mut self, catalogue: &Catalogue, tokens: &Tokens) {
        if self.version == Some(catalogue.version()) {
            return;
        }
        let mut seen: HashMap<&Arc<str>, ()> = HashMap::new();
        for (server, part) in catalogue.parts() {
            seen.insert(server, ());
            let same = (self.servers.get(server)).is_some_and(|(old, _)| Arc::ptr_eq(old, part));
            if same {
                continue;
            }
            self.remove_server(server);
            let ids = (part.tools().iter())
                .map(|tool| self.add(tool.clone(), tokens))
                .collect();
            self.servers
                .insert(Arc::clone(server), (Arc::clone(part), ids));
        }
        let gone: Vec<Arc<str>> = (self.servers.keys())
            .filter(|server| !seen.contains_key(server))
            .cloned()
            .collect();
        for server in gone {
            self.remove_server(&server);
        }
        self.version = Some(catalogue.version());
    }

    fn remove_server(&mut self, server: &Arc<str>) {
        let Some((_, ids)) = self.servers.remove(server) else {
            return;
        };
        for id in ids {
            let Some(doc) = self.docs[id as usize].take() else {
                continue;
            };
            for word in &doc.words {
                if let Some(postings) = self.postings.get_mut(word) {
                    postings.remove(&id);
                    if postings.is_empty() {
                        self.postings.remove(word);
                    }
                }
            }
            self.total_length -= f64::from(doc.length);
            self.live -= 1;
            self.free.push(id);
        }
    }

    fn add(&mut self, tool: Named<Tool>, tokens: &Tokens) -> u32 {
        let mut counts: HashMap<String, f32> = HashMap::new();
        let mut length = 0.0;
        fields(&tool, |text, weight| {
            tokens.each(text, |word| {
                *counts.entry(word).or_default() += weight;
                length += weight;
            });
        });
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.docs.push(None);
                (self.docs.len() - 1) as u32
            }
        };
        for (word, count) in &counts {
            // The word is copied only the first time it is seen.
            if let Some(postings) = self.postings.get_mut(word.as_str()) {
                postings.insert(id, *count);
            } else {
                (self.postings).insert(word.clone(), HashMap::from([(id, *count)]));
            }
        }
        self.total_length += f64::from(length);
        self.live += 1;
        self.docs[id as usize] = Some(Doc {
            tool,
            length,
            words: counts.into_keys().collect(),
        });
        id
    }

    /// Every tool with a BM25 score above 0 for `query`'s words.
    pub(crate) fn scores(&self, query: &[(String, f32)]) -> HashMap<u32, f32> {
        let mut scores: HashMap<u32, f32> = HashMap::new();
        if self.live == 0 {
            return scores;
        }
        let n = self.live as f32;
        let average = (self.total_length / self.live as f64) as f32;
        // Each word once, at the highest weight it is asked with.
        let mut words: Vec<(&String, f32)> = query.iter().map(|(w, weight)| (w, *weight)).collect();
        words.sort_by(|a, b| a.0.cmp(b.0).then(b.1.total_cmp(&a.1)));
        words.dedup_by(|later, first| later.0 == first.0);
        for (word, asked) in words {
            let exact = self.postings.get(word.as_str()).map(|p| (p, asked));
            let prefixed = (word.chars().count() >= 4)
                .then(|| {
                    let from = std::ops::Bound::Included(word.as_str());
                    self.postings
                        .range::<str, _>((from, std::ops::Bound::Unbounded))
                })
                .into_iter()
                .flatten()
                .skip(usize::from(exact.is_some()))
                .take_while(|(indexed, _)| indexed.starts_with(word.as_str()))
                .map(|(_, postings)| (postings, asked * PREFIX_WEIGHT));
            for (postings, weight) in exact.into_iter().chain(prefixed) {
                let df = postings.len() as f32;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                for (&id, &count) in postings {
                    let Some(doc) = &self.docs[id as usize] else {
                        continue;
                    };
                    let norm = K1 * (1.0 - B + B * doc.length / average);
                    *scores.entry(id).or_default() +=
                        weight * idf * count * (K1 + 1.0) / (count + norm);
                }
            }
        }
        scores
    }

    /// The tool indexed as `id`.
    pub(crate) fn tool(&self, id: u32) -> Option<&Named<Tool>> {
        self.docs.get(id as usize)?.as_ref().map(|doc| &doc.tool)
    }

    /// Every indexed tool, with its id.
    pub(crate) fn tools(&self) -> impl Iterator<Item = (u32, &Named<Tool>)> {
        (self.docs.iter().enumerate())
            .filter_map(|(id, doc)| Some((id as u32, &doc.as_ref()?.tool)))
    }
}

/// The texts a tool is found by, each with its weight.
fn fields(tool: &Named<Tool>, mut field: impl FnMut(&str, f32)) {
    field(&tool.name, 3.0);
    if tool.item.name != tool.name {
        field(&tool.item.name, 1.0);
    }
    if let Some(title) = &tool.item.title {
        field(title, 2.0);
    }
    if let Some(description) = &tool.item.description {
        field(description, 1.0);
    }
    let properties = tool.item.input_schema.get("properties");
    if let Some(Value::Object(properties)) = properties {
        for (name, schema) in properties.iter().take(64) {
            field(name, 2.0);
            if let Some(text) = schema.get("description").and_then(Value::as_str) {
                field(text, 1.0);
            }
        }
    }
}
