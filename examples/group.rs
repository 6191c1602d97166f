//! A service's view of many servers: load an `mcpServers` config, list
//! the merged catalogue, route calls by catalogue name, and keep going
//! while one server is killed and comes back.
//!
//! ```text
//! cargo run --example group                      # three demo servers of its own
//! cargo run --example group -- mcp.json          # your config: catalogue and health
//! cargo run --example group -- mcp.json NAME '{"a":1}'   # ... and one call
//! ```
//!
//! Without a file it starts three demo servers on 127.0.0.1 (each offers
//! `add` and `echo`, so every name collides and is prefixed), writes a
//! config for them, routes a call to each, kills one, shows that calls to
//! the others keep working while it is degraded, restarts it on its port
//! and waits until the group has it back on a new session. It exits
//! non-zero if any of that does not happen.

// Lower than the compiler's default (128) on purpose: awaiting a group
// call is as deep a future as an application holds, and this example is
// built in CI, so a change that deepens the crate's futures fails here
// before it fails in an application (it needs 105; see `session::path`).
#![recursion_limit = "112"]

use std::time::Duration;

use mcp_connect::config::ServersConfig;
use mcp_connect::demo::DemoServer;
use mcp_connect::group::{HealthState, ServerGroup};
use mcp_connect::{Connector, EstablishBuilder};
use serde_json::{json, Value};

type Failure = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => demo().await,
        [path, rest @ ..] => {
            let config = ServersConfig::read(path)?;
            let group = start(&config).await?;
            if let [tool, arguments] = rest {
                let arguments: Value = serde_json::from_str(arguments)?;
                let result = group.call_tool(tool, &arguments).await?;
                println!("{tool}: {}", serde_json::to_string(&result.content)?);
            }
            group.shutdown().await;
            Ok(())
        }
    }
}

/// The group of `config`'s servers, once every one has settled; prints
/// each server's health and the catalogue.
async fn start(config: &ServersConfig) -> Result<ServerGroup, Failure> {
    for invalid in config.errors() {
        println!("{}: not usable ({})", invalid.name(), invalid.problem());
    }
    let stack = EstablishBuilder::new(Connector::new())
        .with_deadline(Duration::from_secs(10))
        .build();
    let group = ServerGroup::new();
    group.add_config(config, &stack);
    group.first_usable().await?;
    group.settled().await;
    for (name, health) in group.healths() {
        println!(
            "{name}: {} (session {})",
            health.state.as_str(),
            health.generation
        );
    }
    for tool in group.catalogue().tools() {
        println!("  {} -> {} on {}", tool.name, tool.item.name, tool.server);
    }
    Ok(group)
}

/// A server's tool under the name the catalogue gave it (`alpha__add`
/// when several servers offer `add` at once; a name handed out before
/// another server joined stays as it was).
fn tool_name(group: &ServerGroup, server: &str, tool: &str) -> Result<String, Failure> {
    let catalogue = group.catalogue();
    let found = (catalogue.tools().iter())
        .find(|entry| &*entry.server == server && entry.item.name == tool);
    match found {
        Some(entry) => Ok(entry.name.clone()),
        None => Err(format!("{server} offers no {tool}").into()),
    }
}

async fn demo() -> Result<(), Failure> {
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(DemoServer::start().await?);
    }
    let names = ["alpha", "beta", "gamma"];
    let entries: serde_json::Map<String, Value> = names
        .iter()
        .zip(&servers)
        .map(|(name, server)| {
            (
                name.to_string(),
                json!({ "type": "http", "url": server.url() }),
            )
        })
        .collect();
    let path = std::env::temp_dir().join(format!("mcp-connect-group-{}.json", std::process::id()));
    std::fs::write(&path, json!({ "mcpServers": entries }).to_string())?;
    let config = ServersConfig::read(&path);
    std::fs::remove_file(&path)?;
    let group = start(&config?).await?;

    let mut changes = group.health_changes();
    let watcher = tokio::spawn(async move {
        while let Some(change) = changes.recv().await {
            println!(
                "  health: {} is {} (session {})",
                change.server,
                change.health.state.as_str(),
                change.health.generation
            );
        }
    });

    for name in names {
        let add = tool_name(&group, name, "add")?;
        let result = group.call_tool(&add, &json!({ "a": 2, "b": 3 })).await?;
        println!("{add}(2, 3) = {}", serde_json::to_string(&result.content)?);
    }
    let echo = |name| tool_name(&group, name, "echo");
    let (alpha_echo, beta_echo, gamma_echo) = (echo("alpha")?, echo("beta")?, echo("gamma")?);

    println!("killing beta");
    let addr = servers[1].addr();
    drop(servers.remove(1));
    let failed = group
        .call_tool(&beta_echo, &json!({ "message": "hi" }))
        .await;
    println!(
        "{beta_echo}: {}",
        if failed.is_err() {
            "failed, as it must"
        } else {
            "answered?"
        }
    );
    if failed.is_ok() {
        return Err("a call to a killed server succeeded".into());
    }
    for echo in [&alpha_echo, &gamma_echo] {
        group
            .call_tool(echo, &json!({ "message": "still here" }))
            .await?;
        println!("{echo}: answered while beta is down");
    }

    println!("restarting beta on its port");
    let _beta = DemoServer::start_on(addr).await?;
    let back = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(health) = group.health("beta") {
                if health.state == HealthState::Ready && health.generation > 1 {
                    return health.generation;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| "beta did not come back within 30 s")?;
    let result = group
        .call_tool(&beta_echo, &json!({ "message": "back" }))
        .await?;
    println!(
        "{beta_echo} on session {back}: {}",
        serde_json::to_string(&result.content)?
    );
    group.shutdown().await;
    watcher.abort();
    Ok(())
}
