//! Search over catalogues built as a group builds them, without servers.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::group::catalogue::{CatalogueIndex, Listing};
use crate::group::Naming;

fn tool(name: &str, description: &str, properties: Value) -> Arc<Tool> {
    let tool = json!({ "name": name, "description": description,
        "inputSchema": { "type": "object", "properties": properties } });
    Arc::new(serde_json::from_value(tool).expect("tool"))
}

/// The catalogue after each server in `servers` lists its tools.
fn catalogue(
    index: &mut CatalogueIndex,
    previous: &Catalogue,
    servers: Vec<(&str, Vec<Arc<Tool>>)>,
) -> Catalogue {
    for (server, tools) in servers {
        let listing = Listing {
            tools,
            ..Listing::default()
        };
        index.set(
            &Arc::from(server),
            Some(Arc::new(listing)),
            &Naming::OnCollision,
            None,
        );
    }
    index
        .publish(previous, true)
        .unwrap_or_else(|| previous.clone())
}

fn github() -> Vec<Arc<Tool>> {
    vec![
        tool(
            "create_issue",
            "Create a new issue in a GitHub repository.",
            json!({ "owner": { "description": "Repository owner" }, "title": {} }),
        ),
        tool(
            "list_pull_requests",
            "List pull requests in a GitHub repository.",
            json!({ "state": { "description": "open, closed or all" } }),
        ),
        tool(
            "search_code",
            "Search for code across GitHub repositories.",
            json!({ "q": {} }),
        ),
    ]
}

fn files() -> Vec<Arc<Tool>> {
    vec![
        tool(
            "read_file",
            "Read the complete contents of a file from the file system.",
            json!({ "path": {} }),
        ),
        tool(
            "write_file",
            "Create a new file or overwrite an existing file with new content.",
            json!({ "path": {}, "content": {} }),
        ),
        tool(
            "list_directory",
            "Get a detailed listing of all files and directories in a path.",
            json!({ "path": {} }),
        ),
    ]
}

fn found(hits: &[ToolHit]) -> Vec<&str> {
    hits.iter().map(|hit| hit.tool.name.as_str()).collect()
}

#[test]
fn tools_are_ranked_by_their_words_best_first() {
    let mut index = CatalogueIndex::default();
    let catalogue = catalogue(
        &mut index,
        &Catalogue::default(),
        vec![("github", github()), ("files", files())],
    );
    let search = Search::new(None);
    let hits = search.search(&catalogue, "open a new issue on a repo", 3);
    assert_eq!(hits[0].tool.name, "create_issue", "{:?}", found(&hits));
    assert_eq!(&*hits[0].tool.server, "github");
    let hits = search.search(&catalogue, "read me what is in the file notes.txt", 2);
    assert_eq!(found(&hits)[0], "read_file", "{:?}", found(&hits));
    let hits = search.search(&catalogue, "directories", 5);
    assert_eq!(found(&hits), ["list_directory"]);
    assert!(search.search(&catalogue, "weather forecast", 5).is_empty());
    assert!(search.search(&catalogue, "", 5).is_empty());
    assert_eq!(
        search.search(&catalogue, "file", 1).len(),
        1,
        "the limit holds"
    );
    let summary = hits[0].summary();
    assert_eq!(
        summary,
        "Get a detailed listing of all files and directories in a path."
    );
}

/// The index follows the catalogue one changed server at a time: a server
/// that leaves takes its tools out of the results, one that joins brings
/// its own, and an unchanged server's entries are the ones indexed before.
#[test]
fn the_index_follows_servers_joining_and_leaving() {
    let mut index = CatalogueIndex::default();
    let first = catalogue(&mut index, &Catalogue::default(), vec![("files", files())]);
    let search = Search::new(None);
    assert!(search.search(&first, "pull requests", 5).is_empty());
    let second = catalogue(&mut index, &first, vec![("github", github())]);
    assert_eq!(
        found(&search.search(&second, "pull requests", 1)),
        ["list_pull_requests"]
    );
    index.set(&Arc::from("github"), None, &Naming::OnCollision, None);
    let third = index.publish(&second, true).expect("a change");
    assert!(search.search(&third, "pull requests", 5).is_empty());
    assert_eq!(
        found(&search.search(&third, "write content", 1)),
        ["write_file"]
    );
    let state = (search.state.lock()).unwrap_or_else(std::sync::PoisonError::into_inner);
    assert_eq!(
        state.0.tools().count(),
        3,
        "github's tools are gone from the index"
    );
}

/// A ranker of the application's own: here one that finds a synonym BM25
/// cannot and blends with the lexical score.
#[test]
fn a_ranker_scores_every_tool_when_it_asks_to() {
    struct Synonyms;
    impl Ranker for Synonyms {
        fn score(&self, query: &str, tool: &Named<Tool>, lexical: f32) -> f32 {
            let boost = (query.contains("concern") && tool.name == "create_issue") as u8;
            lexical + f32::from(boost) * 10.0
        }
        fn scores_every_tool(&self) -> bool {
            true
        }
    }
    let mut index = CatalogueIndex::default();
    let catalogue = catalogue(
        &mut index,
        &Catalogue::default(),
        vec![("github", github())],
    );
    let search = Search::new(Some(Arc::new(Synonyms)));
    assert_eq!(
        found(&search.search(&catalogue, "raise a concern", 5)),
        ["create_issue"]
    );
    assert!(Search::new(None)
        .search(&catalogue, "raise a concern", 5)
        .is_empty());
}

#[test]
fn a_summary_is_one_sentence_of_at_most_160_characters() {
    let long = tool("x", &"word ".repeat(100), json!({}));
    let summary = summary(&long);
    assert_eq!(summary.chars().count(), 161);
    assert!(summary.ends_with('…'));
    let two = tool("y", "First one. Second one.\nMore.", json!({}));
    assert_eq!(super::summary(&two), "First one.");
}
