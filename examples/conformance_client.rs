//! A client for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`).
//!
//! The suite starts a mock server, then runs this program with the server
//! URL as the last argument and the scenario name in
//! `MCP_CONFORMANCE_SCENARIO`. The program exits 0 when the scenario's
//! client side succeeded.
//!
//! ```text
//! npx conformance client --command "target/debug/examples/conformance_client" --scenario initialize
//! ```

use std::process::ExitCode;

use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
    else {
        eprintln!("usage: conformance_client URL (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scenario {scenario} failed: {error}");
            let mut source = std::error::Error::source(&*error);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str) -> Result<(), Box<dyn std::error::Error>> {
    // Every scenario gets the same handler: elicitation forms are accepted
    // with the defaults their schema declares (SEP-1034).
    let handler = ClientHandler::new().on_elicitation(|params| async move {
        let content = elicitation_defaults(&params);
        Ok(json!({ "action": "accept", "content": content }))
    });
    let request = ConnectRequest::http(url)?.with_handler(handler);
    let session = Connector::new().connect(request).await?;
    match scenario {
        "initialize" => {}
        "elicitation-sep1034-client-defaults" => {
            let tools = session.list_tools().await?;
            let name = "test_client_elicitation_defaults";
            if !tools.tools.iter().any(|tool| tool.name == name) {
                return Err(format!("the server does not list {name}").into());
            }
            let result = session.call_tool(name, &json!({})).await?;
            if result.is_error {
                return Err(format!("{name} reported a tool error").into());
            }
        }
        "tools_call" => {
            let result = session
                .call_tool("add_numbers", &json!({ "a": 2, "b": 3 }))
                .await?;
            if result.is_error {
                return Err("add_numbers reported a tool error".into());
            }
        }
        // Multi-round-trip requests (SEP-2322): every tool the server lists
        // is called; the handler above answers the input it asks for.
        // The focal tool's schema goes back exactly as listed (2020-12
        // keywords, `$defs`, `$schema`) through the echo tool, which checks it.
        "json-schema-2020-12-preservation" => {
            let tools = session.list_tools().await?.tools;
            let focal = tools
                .iter()
                .find(|tool| tool.name == "json_schema_2020_12_tool")
                .ok_or("the server does not list json_schema_2020_12_tool")?;
            let arguments = json!({ "schema": focal.input_schema });
            let result = session.call_tool("json_schema_echo", &arguments).await?;
            if result.is_error {
                return Err("json_schema_echo reported a tool error".into());
            }
        }
        // Listing must not dereference (or fetch) a `$ref`: the suite
        // watches for the fetch; the schema is kept as sent.
        "json-schema-ref-no-deref" => {
            let tools = session.list_tools().await?.tools;
            if !tools
                .iter()
                .any(|tool| tool.input_schema.to_string().contains("$ref"))
            {
                return Err("no tool with a $ref was listed".into());
            }
        }
        "sep-2322-client-request-state" | "request-metadata" | "http-standard-headers" => {
            for tool in session.list_tools().await?.tools {
                let result = session.call_tool(&tool.name, &json!({})).await?;
                if result.is_error {
                    return Err(format!("{} reported a tool error", tool.name).into());
                }
            }
        }
        other => return Err(format!("scenario {other:?} is not supported by this client").into()),
    }
    session.close().await?;
    Ok(())
}
