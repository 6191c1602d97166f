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

use mcp_connect::auth::{AssertionSource, Authorization, DpopKey, IdentityProvider, SigningKey};
use mcp_connect::extensions::skills::ListSkills;
use mcp_connect::extensions::skills::SkillError;
use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
use mcp_connect::protocol::server_requests::ElicitResult;
use mcp_connect::testkit::AutoApprove;
use mcp_connect::{ConnectRequest, Connector, ErrorKind, Session};
use serde_json::{json, Value};

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
    let handler = ClientHandler::new().on_elicitation(|request| async move {
        Ok(ElicitResult::accept(elicitation_defaults(&request)))
    });
    let mut request = ConnectRequest::http(url)?.with_handler(handler);
    if scenario.starts_with("auth/") {
        let mut auth = authorization(scenario)?;
        // DPoP (SEP-1932): tokens bound to a key made for this run.
        if scenario.starts_with("auth/dpop") {
            auth = auth.with_dpop(DpopKey::generate()?);
        }
        request = request.with_authorization(auth);
    }
    let session = Connector::new().connect(request).await?;
    match scenario {
        // Authorized: list the tools and call each.
        auth if auth.starts_with("auth/") => {
            for tool in session.list_tools().await?.tools {
                call(&session, &tool.name, &json!({})).await?;
            }
        }
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
        // `sse-retry`: the server cuts the call's reply stream after its
        // priming event; the reply comes on the resumed stream (GET with
        // Last-Event-ID after the server's `retry:`).
        "sep-2322-client-request-state"
        | "request-metadata"
        | "http-standard-headers"
        | "sse-retry" => {
            for tool in session.list_tools().await?.tools {
                call(&session, &tool.name, &json!({})).await?;
            }
        }
        // The calls the scenario names in its context, after a listing (the
        // listing is where the client learns which arguments go in
        // `Mcp-Param-*` headers).
        "http-custom-headers" => {
            let calls = context_tool_calls()?;
            if calls.is_empty() {
                return Err("the scenario context names no tool calls".into());
            }
            session.list_tools().await?;
            for (name, arguments) in calls {
                call(&session, &name, &arguments).await?;
            }
        }
        // Tools with invalid `x-mcp-header` declarations are left out of
        // the listing; every tool kept is called.
        "http-invalid-tool-headers" => {
            let listed = session.list_tools().await?;
            if listed.excluded.is_empty() {
                return Err("no tool was excluded".into());
            }
            for tool in &listed.tools {
                call(&session, &tool.name, &sample_arguments(&tool.input_schema)).await?;
            }
        }
        // Skills (SEP-2640): listing reads no skill file.
        "sep-2640-client-no-prefetch" => {
            if session
                .send(ListSkills::all())
                .await
                .map(|page| page.items)?
                .is_empty()
            {
                return Err("the server lists no skills".into());
            }
        }
        // Each serves a SKILL.md that fails one check against its entry:
        // loading must refuse it (typed), and no other file of the skill
        // is read. A tampered skill that loads is this client's failure.
        "sep-2640-client-verify-digest"
        | "sep-2640-client-verify-size"
        | "sep-2640-client-verify-frontmatter" => {
            let skills = session
                .send(ListSkills::all())
                .await
                .map(|page| page.items)?;
            let skill = skills.first().ok_or("the server lists no skills")?;
            match skill.load(&session).await {
                Err(error) => match (scenario, error.kind()) {
                    (
                        "sep-2640-client-verify-digest",
                        ErrorKind::Skill(SkillError::DigestMismatch),
                    )
                    | (
                        "sep-2640-client-verify-size",
                        ErrorKind::Skill(SkillError::SizeMismatch { .. }),
                    )
                    | (
                        "sep-2640-client-verify-frontmatter",
                        ErrorKind::Skill(SkillError::FrontmatterMismatch),
                    ) => eprintln!("refused the tampered skill: {error}"),
                    _ => return Err(error.into()),
                },
                Ok(_) => return Err("a skill that fails verification was loaded".into()),
            }
        }
        other => return Err(format!("scenario {other:?} is not supported by this client").into()),
    }
    session.close().await?;
    Ok(())
}

/// How an `auth/` scenario authorizes: `client_credentials` for the
/// machine-to-machine ones, else the authorization code flow approved at
/// once (the suite's authorization server asks no person), with the
/// pre-registered credentials the context gives, or this client's metadata
/// document URL.
fn authorization(scenario: &str) -> Result<Authorization, Box<dyn std::error::Error>> {
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text)?,
        Err(_) => Value::Null,
    };
    let id = context["client_id"].as_str();
    let secret = context["client_secret"].as_str();
    let text = |name: &str| {
        context[name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("the scenario context has no {name}"))
    };
    // Workload identity (SEP-1933): the platform's token is the assertion.
    if scenario == "auth/wif-jwt-bearer" {
        let token = text("valid_jwt")?;
        let source = AssertionSource::from_fn(move || std::future::ready(Ok(token.clone())));
        return Ok(Authorization::workload_identity(text("client_id")?, source));
    }
    // Enterprise-managed authorization (SEP-990): the IdP's ID token is
    // exchanged there for an ID-JAG, then granted at the MCP server's
    // authorization server with this client's credentials.
    if scenario == "auth/enterprise-managed-authorization"
        || scenario == "auth/cross-app-access-complete-flow"
    {
        let idp = IdentityProvider::new(&text("idp_token_endpoint")?, text("idp_client_id")?)?;
        let id_token = text("idp_id_token")?;
        let source = AssertionSource::from_fn(move || std::future::ready(Ok(id_token.clone())));
        return Ok(Authorization::enterprise_managed(idp, source)
            .with_client_id(text("client_id")?)
            .with_client_secret(text("client_secret")?));
    }
    if let (Some(id), Some(pem)) = (id, context["private_key_pem"].as_str()) {
        let algorithm = context["signing_algorithm"].as_str().unwrap_or("ES256");
        let key = SigningKey::from_pem(algorithm, pem.as_bytes())?;
        return Ok(Authorization::client_credentials_with_key(id, key));
    }
    if scenario.starts_with("auth/client-credentials") {
        let (Some(id), Some(secret)) = (id, secret) else {
            return Err("the scenario context has no client credentials".into());
        };
        return Ok(Authorization::client_credentials(id, secret));
    }
    let mut auth = Authorization::authorization_code(AutoApprove::new())
        .with_client_metadata_url("https://conformance-test.local/client-metadata.json");
    if let Some(id) = id {
        auth = auth.with_client_id(id);
    }
    if let Some(secret) = secret {
        auth = auth.with_client_secret(secret);
    }
    Ok(auth)
}

/// Calls a tool and fails on a tool error.
async fn call(
    session: &Session,
    name: &str,
    arguments: &Value,
) -> Result<(), Box<dyn std::error::Error>> {
    let result = session.call_tool(name, arguments).await?;
    if result.is_error {
        return Err(format!("{name} reported a tool error").into());
    }
    Ok(())
}

/// The `toolCalls` of `MCP_CONFORMANCE_CONTEXT`, as (name, arguments).
fn context_tool_calls() -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text)?,
        Err(_) => return Ok(Vec::new()),
    };
    let calls = context["toolCalls"].as_array().cloned().unwrap_or_default();
    calls
        .into_iter()
        .map(|call| {
            let name = call["name"].as_str().ok_or("a tool call without a name")?;
            Ok((name.to_owned(), call["arguments"].clone()))
        })
        .collect()
}

/// Arguments for a tool's required properties, one plain value per type.
fn sample_arguments(schema: &Value) -> Value {
    let mut arguments = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("conformance"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
