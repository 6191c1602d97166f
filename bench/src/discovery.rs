//! Issue 67: search over a catalogue of real tools, and what progressive
//! discovery saves a model.
//!
//! The catalogue is 169 tool definitions as eight real servers publish
//! them (`data/discovery/`, where each came from is in its README); the
//! queries (`queries.json`) were written before the ranker was tuned,
//! each with every tool that does what it asks. Measured:
//!
//! - top-1 and top-5 hit rates of `ServerGroup::search_tools` (goal:
//!   top-5 at least 0.9);
//! - p50 and p99 of one search over about 1,000 and 10,000 tools (copies
//!   of the real ones under other servers' names; goal: under 1 ms and
//!   10 ms), and the first search, which builds the index;
//! - the tokens of the tool definitions a model is sent, counted with
//!   OpenAI's o200k_base tokenizer (tiktoken-rs): the whole catalogue,
//!   the three meta-tools, and a search's and a description's answers
//!   (goal: at least 80% fewer with discovery).
//!
//! The servers are one loopback scripted server, a path per member.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- discovery [--quick] [--check]
//! ```
//!
//! `--check` (CI) fails unless the goals hold: top-5 at least 0.9, top-1 at
//! least 0.7 (0.727 when it was added), at least 80% fewer tokens, and a
//! p99 search under 1 ms over about 1,000 tools.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_connect::group::{Discovery, Server, ServerGroup, CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS};
use mcp_connect::testkit::{error, result, Recorded, Script, ScriptServer};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::stats::{ms, percentile};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/discovery");

/// Each source's tools, by server name.
fn sources() -> BTreeMap<String, Vec<Value>> {
    let mut sources = BTreeMap::new();
    for entry in std::fs::read_dir(DATA).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.extension().is_some_and(|e| e == "json") && name != "queries" {
            let file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            sources.insert(name, file["tools"].as_array().unwrap().clone());
        }
    }
    sources
}

/// A legacy server per path `/NAME/COPY/mcp`, listing NAME's tools.
async fn servers(sources: Arc<BTreeMap<String, Vec<Value>>>) -> ScriptServer {
    ScriptServer::start(move |request: &Recorded| {
        let source = request.route().split('/').nth(1).unwrap_or_default();
        match request.rpc_method() {
            "server/discover" => Script::Json(400, error(request, -32000, None)),
            "initialize" => Script::Json(
                200,
                result(
                    request,
                    json!({ "protocolVersion": request.body["params"]["protocolVersion"],
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": source, "version": "1" } }),
                ),
            ),
            "notifications/initialized" => Script::Status(202),
            "tools/list" => {
                let tools = sources.get(source).cloned().unwrap_or_default();
                Script::Json(200, result(request, json!({ "tools": tools })))
            }
            "" => Script::Status(405),
            _ => Script::Json(200, error(request, -32601, None)),
        }
    })
    .await
}

/// A group of `copies` of every source, each copy a member of its own,
/// shown as `discovery` says; settled.
async fn group(server: &ScriptServer, copies: usize, discovery: Discovery) -> ServerGroup {
    let group = ServerGroup::builder().with_discovery(discovery).build();
    let stack = EstablishBuilder::new(Connector::new()).build();
    for source in sources().keys() {
        for copy in 0..copies {
            let name = match copy {
                0 => source.clone(),
                n => format!("{source}{n}"),
            };
            let url = server.url_for(&format!("/{source}/{copy}/mcp"));
            let request = ConnectRequest::http(&url).unwrap().with_name(name);
            group.add(Server::new(stack.clone(), request)).unwrap();
        }
    }
    group.settled().await;
    group
}

struct Query {
    query: String,
    expected: Vec<String>,
}

fn queries() -> Vec<Query> {
    let file: Value =
        serde_json::from_slice(&std::fs::read(format!("{DATA}/queries.json")).unwrap()).unwrap();
    (file["queries"].as_array().unwrap().iter())
        .map(|q| Query {
            query: q["query"].as_str().unwrap().to_owned(),
            expected: (q["expected"].as_array().unwrap().iter())
                .map(|e| e.as_str().unwrap().to_owned())
                .collect(),
        })
        .collect()
}

/// `discovery [--quick]`: the figures as one JSON line, written to
/// `bench/discovery.jsonl` unless quick (which skips 10,000 tools).
pub async fn run(args: &[String]) {
    let quick = args.iter().any(|a| a == "--quick");
    let check = args.iter().any(|a| a == "--check");
    let server = servers(Arc::new(sources())).await;
    let group = group(&server, 1, Discovery::Never).await;
    let catalogue = group.catalogue();
    let tools = catalogue.tools().len();
    assert!(tools >= 150, "the catalogue has {tools} tools");

    let queries = queries();
    let (mut top1, mut top5, mut misses) = (0, 0, Vec::new());
    for query in &queries {
        let hits = group.search_tools(&query.query, 5);
        let found =
            |hit: &mcp_connect::group::ToolHit| query.expected.contains(&hit.tool.item.name);
        top1 += usize::from(hits.first().is_some_and(found));
        if hits.iter().any(found) {
            top5 += 1;
        } else {
            let names: Vec<&str> = hits.iter().map(|h| h.tool.name.as_str()).collect();
            misses.push(json!({ "query": query.query, "got": names }));
        }
    }
    let n = queries.len() as f64;

    let tokens = Tokens::new();
    let full = tokens.count(&json!(group.shown_tools().openai_tools()));
    let shown = discovery_tokens(&server, &tokens, &queries).await;

    let mut times = BTreeMap::new();
    let sizes: &[usize] = if quick { &[6] } else { &[6, 60] };
    for &copies in sizes {
        let big = self::group(&server, copies, Discovery::Never).await;
        let size = big.catalogue().tools().len();
        let first = Instant::now();
        big.search_tools(&queries[0].query, 5);
        let build_ms = ms(first.elapsed());
        let mut samples = Vec::new();
        for round in 0..1_000 {
            let query = &queries[round % queries.len()].query;
            let started = Instant::now();
            std::hint::black_box(big.search_tools(query, 5));
            samples.push(ms(started.elapsed()));
        }
        times.insert(
            size.to_string(),
            json!({ "p50_ms": percentile(&samples, 0.5), "p99_ms": percentile(&samples, 0.99),
                    "first_search_ms": build_ms }),
        );
        big.shutdown().await;
    }
    let line = json!({
        "metric": "search over the catalogue and progressive discovery",
        "tools": tools, "queries": queries.len(),
        "top1": top1 as f64 / n, "top5": top5 as f64 / n, "misses": misses,
        "search": times,
        "tokens": { "tokenizer": "o200k_base", "full_catalogue": full,
            "estimated_full": catalogue.estimated_tokens(),
            "meta_tools": shown.meta, "saved": 1.0 - shown.meta as f64 / full as f64,
            "search_answer_mean": shown.search, "describe_answer_mean": shown.describe },
    });
    println!("{line}");
    group.shutdown().await;
    if check {
        let p99 = line["search"]["1014"]["p99_ms"].as_f64().unwrap();
        let (top1, top5) = (top1 as f64 / n, top5 as f64 / n);
        let saved = line["tokens"]["saved"].as_f64().unwrap();
        let held = top5 >= 0.9 && top1 >= 0.7 && saved >= 0.8 && p99 < 1.0;
        assert!(
            held,
            "a discovery goal is missed: top-5 {top5}, top-1 {top1}, saved {saved}, p99 {p99} ms"
        );
        println!("discovery goals hold: top-5 {top5:.3}, top-1 {top1:.3}, {:.1}% fewer tokens, p99 {p99:.3} ms", saved * 100.0);
    }
    if !quick && !check {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/discovery.jsonl");
        std::fs::write(path, format!("{line}\n")).unwrap();
    }
}

struct Tokens(tiktoken_rs::CoreBPE);

impl Tokens {
    fn new() -> Self {
        Tokens(tiktoken_rs::o200k_base().expect("the o200k_base tokenizer"))
    }

    fn count(&self, value: &Value) -> usize {
        self.0.encode_with_special_tokens(&value.to_string()).len()
    }
}

struct Shown {
    meta: usize,
    search: usize,
    describe: usize,
}

/// The tokens a model is sent with discovery on: the meta-tools'
/// definitions, and the mean answer of a search and of a description.
async fn discovery_tokens(server: &ScriptServer, tokens: &Tokens, queries: &[Query]) -> Shown {
    let group = group(server, 1, Discovery::Always).await;
    let shown = group.shown_tools();
    let names: Vec<&str> = shown.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, [SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL]);
    let meta = tokens.count(&json!(shown.openai_tools()));
    let (mut search, mut describe) = (0, 0);
    for query in queries {
        let found = (shown.call(SEARCH_TOOLS, &json!({ "query": query.query })))
            .and_then(|call| answered(call))
            .unwrap();
        search += tokens.count(&found);
        let described = (shown.call(DESCRIBE_TOOL, &json!({ "name": query.expected[0] })))
            .and_then(|call| answered(call))
            .unwrap();
        describe += tokens.count(&described);
    }
    group.shutdown().await;
    Shown {
        meta,
        search: search / queries.len(),
        describe: describe / queries.len(),
    }
}

/// A meta-tool's answer as the model reads it: its text.
fn answered(call: mcp_connect::group::DiscoveryCall) -> Option<Value> {
    match call {
        mcp_connect::group::DiscoveryCall::Answered(result) => Some(Value::String(result.text())),
        _ => None,
    }
}
