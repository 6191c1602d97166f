//! Search over a group's catalogue: [`ServerGroup::search_tools`] ranks
//! tools by how well their name, title, description and parameters match
//! a query, so a model can be given a few tools that fit a task instead
//! of every tool of every server (see [`super::discovery`]).
//!
//! The score is Okapi BM25 over stemmed words, computed here in a few
//! lines over an index the group keeps one server at a time; stemming is
//! the Snowball English stemmer of `rust-stemmers`. The `bm25` crates were
//! looked at and not taken: their engines fix the average document length
//! when they are built (it drifts as servers join and leave), and bring
//! stop-word lists for many languages and a cache the group does not need.
//! Lazy servers are searched through what they listed on an earlier run
//! (the remembered listing in the catalogue): a search never connects a
//! server.
//!
//! A [`Ranker`] of the application's own (embeddings, a blend, a boost for
//! tools a user often picks) scores the candidates instead.

mod index;
mod tokens;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use index::SearchIndex;
use tokens::Tokens;

use super::{Catalogue, Named, ServerGroup};
use crate::protocol::Tool;

/// The longest summary of a tool a search returns, in characters.
const SUMMARY_CHARS: usize = 160;

/// A tool a search found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolHit {
    /// The tool under its catalogue name.
    pub tool: Named<Tool>,
    /// How well it matches: higher is better; comparable within one
    /// search only.
    pub score: f32,
}

impl ToolHit {
    /// One line about the tool: the first sentence of its description
    /// (else its title), at most 160 characters.
    pub fn summary(&self) -> String {
        summary(&self.tool.item)
    }
}

/// The first sentence or line of `tool`'s description, else its title.
pub(crate) fn summary(tool: &Tool) -> String {
    let text = (tool.description.as_deref())
        .filter(|d| !d.trim().is_empty())
        .or(tool.title.as_deref())
        .unwrap_or_default()
        .trim();
    let line = text.lines().next().unwrap_or_default();
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    let mut out: String = sentence.chars().take(SUMMARY_CHARS).collect();
    if out.len() < sentence.len() {
        out.push('…');
    }
    out
}

/// Scores tools for a query in place of (or on top of) BM25: plug in
/// embeddings, blend scores, boost favourites.
pub trait Ranker: Send + Sync + 'static {
    /// `tool`'s score for `query`, given its BM25 score `lexical` (0 when
    /// none of the query's words is in it). A tool scored 0 or less is not
    /// returned.
    fn score(&self, query: &str, tool: &Named<Tool>, lexical: f32) -> f32;

    /// Whether tools without a word of the query are scored too (an
    /// embedding ranker finds synonyms); by default only BM25's matches
    /// are.
    fn scores_every_tool(&self) -> bool {
        false
    }
}

/// The group's search index and its tokenizer, held for one search.
pub(crate) struct Search {
    state: Mutex<(SearchIndex, Tokens)>,
    ranker: Option<Arc<dyn Ranker>>,
}

impl Search {
    pub(crate) fn new(ranker: Option<Arc<dyn Ranker>>) -> Self {
        Search {
            state: Mutex::new((SearchIndex::default(), Tokens::new())),
            ranker,
        }
    }
}

impl fmt::Debug for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Search")
            .field("ranker", &self.ranker.is_some())
            .finish_non_exhaustive()
    }
}

impl ServerGroup {
    /// The `limit` tools of the catalogue that best match `query`, best
    /// first (ties by name); none when no tool shares a word with it.
    /// Answers from the catalogue as it is, lazy servers' remembered tools
    /// included, without connecting anything; the index follows the
    /// catalogue one changed server at a time.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<ToolHit> {
        self.shared.search.search(&self.catalogue(), query, limit)
    }
}

impl Search {
    /// `search_tools` over `catalogue`.
    pub(crate) fn search(&self, catalogue: &Catalogue, query: &str, limit: usize) -> Vec<ToolHit> {
        let search = self;
        let mut state = search.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (index, tokens) = &mut *state;
        index.follow(catalogue, tokens);
        let words = tokens.query(query);
        let lexical = index.scores(&words);
        let mut hits: Vec<ToolHit> = match &search.ranker {
            None => (lexical.iter())
                .filter_map(|(&id, &score)| {
                    let tool = index.tool(id)?.clone();
                    Some(ToolHit { tool, score })
                })
                .collect(),
            Some(ranker) => {
                let every = ranker.scores_every_tool();
                (index.tools())
                    .filter_map(|(id, tool)| {
                        let lexical = lexical.get(&id).copied();
                        if lexical.is_none() && !every {
                            return None;
                        }
                        let score = ranker.score(query, tool, lexical.unwrap_or(0.0));
                        Some(ToolHit {
                            tool: tool.clone(),
                            score,
                        })
                    })
                    .collect()
            }
        };
        drop(state);
        hits.retain(|hit| hit.score > 0.0);
        let best_first = |a: &ToolHit, b: &ToolHit| {
            (b.score.total_cmp(&a.score)).then_with(|| a.tool.name.cmp(&b.tool.name))
        };
        // The best `limit` in linear time, then only those sorted: a
        // common word matches thousands of tools in a large catalogue.
        if limit < hits.len() {
            hits.select_nth_unstable_by(limit, best_first);
            hits.truncate(limit);
        }
        hits.sort_by(best_first);
        hits
    }
}

#[cfg(test)]
mod tests;
