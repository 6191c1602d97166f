//! Every Rust example of README.md and docs/LIBRARY.md, run. Each module
//! below holds one example's lines as the document shows them (CI checks
//! that the document's visible lines are in this file, whitespace aside:
//! `.ci/doc-examples.py`), and `main` runs each against loopback servers of
//! the testkit, so an example that no longer compiles or no longer works
//! fails CI, not a reader.
//!
//! Run: `cargo run --example docs --features redis,otel`.

use std::time::Duration;

use mcp_connect::testkit::{Script, ScriptServer};

#[rustfmt::skip]
mod long_lived {
    use mcp_connect::layers::recovery::RecoveryPolicy;
    use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
    use serde_json::json;

    pub async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
        // The establishment stack: one deadline, diagnostics, opt-in recovery on
        // fresh sessions, classification, over the connector.
        let stack = EstablishBuilder::new(Connector::new())
            .with_recovery(RecoveryPolicy::new().with_max_attempts(3))
            .build();
        let request = ConnectRequest::http(url)?;
        let client = McpClient::builder(stack, request).connect().await?;
        // Each call runs on the current session; a session that died is replaced
        // for the next call, and a failed call is never sent again.
        let result = client.call_tool("add", &json!({ "a": 2, "b": 3 })).await?;
        println!("{} (session {})", result.text(), client.generation());
        // A failure prints whole with `report()` (every cause, none of the
        // server's text; `{:#}` puts a cause a line); what the server itself said,
        // for a model to fix its call, is `server_message()`.
        if let Err(error) = client.call_tool("add", &json!({ "a": "two" })).await {
            eprintln!("{}", error.report());
            let _for_the_model: Option<&str> = error.server_message();
        }
        client.close().await?;
        Ok(())
    }
}

#[rustfmt::skip]
mod policies {
    use mcp_connect::client::ClientError;
    use mcp_connect::layers::policy::{BreakerConfig, CircuitBreakerLayer};
    use tower::limit::GlobalConcurrencyLimitLayer;

    pub fn run(builder: mcp_connect::client::McpClientBuilder) -> mcp_connect::McpClient {
        builder
            // Opens on transport failures, timeouts and 5xx, never on tool errors.
            .with_call_layer(CircuitBreakerLayer::<ClientError>::new(BreakerConfig::default()))
            .with_call_layer(GlobalConcurrencyLimitLayer::new(4))
            .build()
    }
}

#[rustfmt::skip]
mod group {
    use mcp_connect::config::ServersConfig;
    use mcp_connect::group::{HealthState, ServerGroup};
    use mcp_connect::{Connector, EstablishBuilder};
    use serde_json::json;

    pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
        // The `mcpServers` file Claude Desktop, Cursor and VS Code use.
        let config = ServersConfig::read("mcp.json")?;
        let stack = EstablishBuilder::new(Connector::new()).build();
        let group = ServerGroup::new();
        // Subscribed before any server starts, so no change is missed.
        let mut changes = group.health_changes();
        group.add_config(&config, &stack);
        // Every server ready or failed, a stalled one at its own deadline
        // (`first_usable()` returns with the first ready one).
        group.settled().await;
        tokio::spawn(async move {
            while let Some(change) = changes.recv().await {
                if let HealthState::NeedsAuthorization(_) = change.health.state {
                    eprintln!("{} needs a person to authorize", change.server);
                }
            }
        });
        for tool in group.catalogue().tools() {
            println!("{} -> {} on {}", tool.name, tool.item.name, tool.server);
        }
        // Routed by catalogue name: a name two servers share is `server__name`.
        let result = group
            .call_tool("files__add", &json!({ "a": 2, "b": 3 }))
            .await?;
        println!("{}", result.text());
        group.shutdown().await;
        Ok(())
    }
}

#[rustfmt::skip]
mod corporate {
    use mcp_connect::transport::{HttpClient, Proxy, RedirectPolicy};
    use mcp_connect::{ConnectRequest, Connector};

    pub fn run() -> Result<(), Box<dyn std::error::Error>> {
        let client = HttpClient::builder()
            // The default reads HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY
            // (and their lowercase forms) once, here. An explicit proxy overrides
            // them; `Proxy::none()` ignores them.
            .proxy(Proxy::url("http://user:password@proxy.corp:3128")?.with_no_proxy(".corp, 10.0.0.0/8"))
            // A private CA, beside the default roots (`native-roots` adds the
            // platform's store, `SSL_CERT_FILE` included).
            .add_root_certificates_pem(&std::fs::read("corp-ca.pem")?)?
            // Mutual TLS.
            .client_certificate_pem(&std::fs::read("client.pem")?, &std::fs::read("client.key")?)?
            // The default: 307/308 on the same origin, at most 3 hops.
            .redirects(RedirectPolicy::new())
            .build();
        let connector = Connector::with_client(client);
        // One server with settings of its own among many on the same connector.
        let own = HttpClient::builder().proxy(Proxy::none()).build();
        let request = ConnectRequest::http("https://mcp.internal/mcp")?.with_http_client(own);
        drop((connector, request));
        Ok(())
    }
}

#[rustfmt::skip]
mod authorization {
    use mcp_connect::auth::{AssertionSource, Authorization, DpopKey, IdentityProvider};

    pub fn run() -> Result<(), Box<dyn std::error::Error>> {
        // Workload identity (SEP-1933): the platform's token, re-read on each use.
        let workload = Authorization::workload_identity(
            "billing-agent",
            AssertionSource::file("/var/run/secrets/tokens/mcp-token"),
        )
        // DPoP (RFC 9449): tokens bound to a key made in memory; a leaked token
        // is useless without a fresh proof of that key.
        .with_dpop(DpopKey::generate()?);

        // Enterprise-managed authorization (SEP-990): the person's ID token is
        // exchanged at the company's IdP for an ID-JAG, granted at the MCP server's
        // authorization server.
        let idp = IdentityProvider::new("https://idp.corp/oauth2/token", "mcp-host")?;
        let enterprise = Authorization::enterprise_managed(idp, AssertionSource::env("ID_TOKEN"))
            .with_client_id("mcp-host")
            .with_client_secret(std::env::var("MCP_CLIENT_SECRET")?);
        drop((workload, enterprise));
        Ok(())
    }
}

#[rustfmt::skip]
mod tasks {
    use mcp_connect::extensions::tasks::{Called, TaskCall};
    use mcp_connect::protocol::CallTool;
    use mcp_connect::session::RequestOptions;
    use std::time::Duration;

    pub async fn run(session: mcp_connect::Session) -> Result<(), mcp_connect::Error> {
        let args = serde_json::json!({});
        match session.send(TaskCall::new(CallTool::new("render", &args))).await? {
            Called::Result(result) => println!("{}", result.text()),
            Called::Task(task) => {
                let options = RequestOptions::new().with_timeout(Duration::from_secs(3600));
                println!("{}", session.wait_task(&task, &options).await?.text());
            }
            _ => {} // a later kind of answer
        }
        Ok(())
    }
}

#[rustfmt::skip]
mod fleet {
    use mcp_connect::auth::Authorization;
    use mcp_connect::store::redis::{RedisStores, SealingKey};

    pub fn run(key: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
        let redis = RedisStores::new(&std::env::var("REDIS_URL")?, "billing", SealingKey::from_bytes(key)?)?;
        let auth = Authorization::client_credentials("billing", std::env::var("CLIENT_SECRET")?)
            .with_token_store(redis.tokens());
        drop(auth);
        Ok(())
    }
}

#[rustfmt::skip]
mod round_trips {
    use mcp_connect::{era_cache::EraCache, response_cache::ResponseCache, ConnectRequest};

    pub fn run(
        url: &str,
        era_cache: EraCache,
        response_cache: ResponseCache,
    ) -> Result<(), mcp_connect::Error> {
        let request = ConnectRequest::http(url)?
            .with_era_cache(era_cache.clone()) // EraCache::from_json to persist
            .with_response_cache(response_cache.clone());
        drop(request);
        Ok(())
    }
}

#[rustfmt::skip]
mod telemetry {
    use mcp_connect::ConnectRequest;

    pub fn run(url: &str) -> Result<(), mcp_connect::Error> {
        use mcp_connect::telemetry::Telemetry;
        // The global providers, or Telemetry::new(&tracer_provider, &meter_provider).
        let request = ConnectRequest::http(url)?.with_telemetry(Telemetry::global());
        drop(request);
        Ok(())
    }
}

#[rustfmt::skip]
mod one_session {
    use std::time::Duration;
    use mcp_connect::{ConnectRequest, Connector};
    use tower::{ServiceBuilder, ServiceExt};

    pub async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
        // Connector is a tower Service<ConnectRequest, Response = Session>:
        // every call builds a fresh transport and runs the handshake on it.
        let connect = ServiceBuilder::new()
            .concurrency_limit(8)
            .service(Connector::new());

        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let request = ConnectRequest::http(url)?
            .with_header("authorization", "Bearer ...")?
            .with_deadline(deadline);
        let session = connect.oneshot(request).await?;
        let result = session
            .call_tool("add", &serde_json::json!({ "a": 2, "b": 3 }))
            .await?;
        println!("{}", result.text());
        session.close().await?;
        Ok(())
    }
}

#[rustfmt::skip]
mod http_layers {
    use std::time::Duration;

    use bytes::Bytes;
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    use mcp_connect::layers::classify::FailureClassifierLayer;
    use mcp_connect::layers::deadline::DeadlineLayer;
    use mcp_connect::layers::diagnostics::{AttemptDiagnosticsLayer, LifecycleDiagnosticsLayer};
    use mcp_connect::layers::recovery::{FreshSessionRecoveryLayer, RecoveryPolicy};
    use tower::{ServiceBuilder, ServiceExt};

    pub async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let svc = ServiceBuilder::new()
            .layer(DeadlineLayer::new(Duration::from_secs(2)))
            .layer(LifecycleDiagnosticsLayer::new())
            .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::new()))
            .layer(AttemptDiagnosticsLayer::new())
            .layer(FailureClassifierLayer::new())
            .service(client);
        let response = svc
            .oneshot(http::Request::get(url).body(Full::default())?)
            .await?;
        drop(response);
        Ok(())
    }
}

#[rustfmt::skip]
mod response_cache {
    use mcp_connect::response_cache::{CacheMode, ResponseCache};
    use mcp_connect::protocol::ListTools;
    use mcp_connect::session::{Call, RequestOptions};
    use mcp_connect::{ConnectRequest, Connector};

    pub async fn run(url: &str, connector: Connector) -> Result<(), mcp_connect::Error> {
        let cache = ResponseCache::new(); // in memory; ResponseCache::with_store(your_store)
        let request = ConnectRequest::http(url)?.with_response_cache(cache.clone());
        let session = connector.connect(request).await?;
        session.list_tools().await?; // to the server: ttlMs 60000, cacheScope public
        session.list_tools().await?; // from the cache: nothing sent
        let fresh = RequestOptions::new().with_cache(CacheMode::Refresh);
        session.send(Call::new(ListTools::all()).with_options(fresh)).await?; // to the server, stored again
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use mcp_connect::demo::DemoServer;
    let place = std::env::temp_dir().join(format!("mcp-docs-{}", std::process::id()));
    std::fs::create_dir_all(&place)?;
    std::env::set_current_dir(&place)?;
    let (files, notes) = (DemoServer::start().await?, DemoServer::start().await?);
    let file = serde_json::json!({ "mcpServers": {
        "files": { "url": files.url() }, "notes": { "url": notes.url() } } });
    std::fs::write("mcp.json", file.to_string())?;
    let tls = mcp_connect::testkit::TlsFixture::new();
    std::fs::write("corp-ca.pem", tls.ca_pem())?;
    std::fs::write("client.pem", tls.client_certificate_pem())?;
    std::fs::write("client.key", tls.client_key_pem())?;
    // SAFETY of the environment: set before any other thread reads it.
    std::env::set_var("MCP_CLIENT_SECRET", "docs-secret");
    std::env::set_var("CLIENT_SECRET", "docs-secret");
    std::env::set_var("REDIS_URL", "redis://127.0.0.1:1");

    let step = |name: &str| println!("== {name}");
    step("a long-lived client");
    long_lived::run(&files.url()).await?;
    step("per-server policies");
    let builder = mcp_connect::McpClient::builder(
        mcp_connect::EstablishBuilder::new(mcp_connect::Connector::new()).build(),
        mcp_connect::ConnectRequest::http(&files.url())?,
    );
    policies::run(builder)
        .call_tool("add", &serde_json::json!({ "a": 1, "b": 1 }))
        .await?;
    step("many servers as one");
    group::run().await?;
    step("corporate networks");
    corporate::run()?;
    step("authorization for services");
    authorization::run()?;
    step("tasks");
    let tasks = mcp_connect::testkit::TasksServer::new(mcp_connect::testkit::TaskPlan::new(1));
    let task_server = ScriptServer::start(move |r| tasks.respond(r)).await;
    let session = mcp_connect::Connector::new()
        .connect(mcp_connect::ConnectRequest::http(&task_server.url())?)
        .await?;
    tasks::run(session).await?;
    step("a fleet of replicas");
    fleet::run(&[7u8; 32])?;
    step("fewer round trips");
    let caches = (
        mcp_connect::era_cache::EraCache::new(),
        mcp_connect::response_cache::ResponseCache::new(),
    );
    round_trips::run(&files.url(), caches.0, caches.1)?;
    step("observability");
    telemetry::run(&files.url())?;
    step("one session");
    one_session::run(&files.url()).await?;
    step("the layers over any HTTP client");
    let ok = ScriptServer::start(|_: &mcp_connect::testkit::Recorded| Script::Status(200)).await;
    http_layers::run(&ok.url()).await?;
    step("the response cache (docs/LIBRARY.md)");
    response_cache::run(&files.url(), mcp_connect::Connector::new()).await?;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let _ = std::fs::remove_dir_all(&place);
    println!("every example ran");
    Ok(())
}
