//! The two clients behind one small interface.

use crate::floor::{Floor, FloorSession};
use mcp_connect::era_cache::EraCache;
use mcp_connect::inbound::{notification_channel, ClientHandler};
use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::protocol::server_requests::{CreateMessageResult, ElicitResult};
use mcp_connect::protocol::ProtocolVersion as OurVersion;
use mcp_connect::transport::ServerStream;
use mcp_connect::{ConnectRequest, Connector, Establish, EstablishBuilder, Session};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};

/// Which era to establish: legacy pinned to 2025-11-25, or unpinned (which
/// probes `server/discover` first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// How rmcp gets its HTTP client: the configurations a user would pick.
#[derive(Clone)]
pub enum RmcpVariant {
    /// `from_config(with_uri(url))`, rmcp's documented default: a new
    /// reqwest client (rustls, the system CA store, no pooling) built for
    /// every connection, inside the timed window.
    PerConnection,
    /// One reqwest client built once and shared, pooling off
    /// (`pool_max_idle_per_host(0)`, rmcp's own default policy).
    SharedUnpooled(reqwest::Client),
    /// One reqwest client built once and shared, reqwest's default pooling
    /// (what a performance-aware user would pick for `http://`).
    SharedPooled(reqwest::Client),
}

impl RmcpVariant {
    /// Every variant, shared clients built now (outside any timer).
    pub fn all() -> Vec<RmcpVariant> {
        vec![
            RmcpVariant::PerConnection,
            RmcpVariant::SharedUnpooled(
                reqwest::Client::builder()
                    .pool_max_idle_per_host(0)
                    .build()
                    .expect("reqwest client"),
            ),
            RmcpVariant::SharedPooled(reqwest::Client::new()),
        ]
    }

    /// This variant's position in [`all`](Self::all), which is how a child
    /// process is told which one to build.
    pub fn index(&self) -> usize {
        match self {
            RmcpVariant::PerConnection => 0,
            RmcpVariant::SharedUnpooled(_) => 1,
            RmcpVariant::SharedPooled(_) => 2,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            RmcpVariant::PerConnection => "rmcp per-connection client",
            RmcpVariant::SharedUnpooled(_) => "rmcp shared client, unpooled",
            RmcpVariant::SharedPooled(_) => "rmcp shared client, pooled",
        }
    }

    fn transport(&self, url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
        let config = StreamableHttpClientTransportConfig::with_uri(url);
        match self {
            RmcpVariant::PerConnection => StreamableHttpClientTransport::from_config(config),
            RmcpVariant::SharedUnpooled(client) | RmcpVariant::SharedPooled(client) => {
                StreamableHttpClientTransport::with_client(client.clone(), config)
            }
        }
    }
}

/// A client under test. (Cloned per task; the size of a variant is noise.)
#[derive(Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Client {
    /// mcp-connect's bare make-service.
    Ours(Connector),
    /// mcp-connect's full four-layer stack (recovery on).
    OursStack(Establish),
    /// mcp-connect with a warm era cache.
    OursCached(Connector, EraCache),
    /// mcp-connect with a server-request handler and a notification
    /// listener attached (on the 2025 era that holds the GET stream).
    OursListening(Connector),
    /// Ours with OpenTelemetry on: the SDK, every span sampled, batched to
    /// an in-memory exporter, metrics aggregated.
    OursTraced(Connector, mcp_connect::telemetry::Telemetry),
    /// rmcp 3.11 in one of its configurations.
    Rmcp(RmcpVariant),
    /// rmcp 3.11's client over mcp-connect's session (the `mcp-connect-rmcp`
    /// bridge), established through the bare make-service.
    Bridged(Establish),
    /// The raw-hyper floor: the same HTTP requests, no MCP logic.
    Floor(Floor),
}

impl Client {
    pub fn ours() -> Client {
        Client::Ours(Connector::new())
    }

    pub fn stack() -> Client {
        Client::OursStack(
            EstablishBuilder::new(Connector::new())
                .with_recovery(RecoveryPolicy::new())
                .build(),
        )
    }

    pub fn bridged() -> Client {
        Client::Bridged(EstablishBuilder::new(Connector::new()).build())
    }

    pub fn listening() -> Client {
        Client::OursListening(Connector::new())
    }

    pub fn traced() -> Client {
        use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
        use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
        // The batch processor, as a service runs it: export off the call path.
        let tracers = SdkTracerProvider::builder()
            .with_batch_exporter(InMemorySpanExporter::default())
            .build();
        let meters = SdkMeterProvider::builder()
            .with_periodic_exporter(InMemoryMetricExporter::default())
            .build();
        let telemetry = mcp_connect::telemetry::Telemetry::new(&tracers, &meters)
            .with_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
        Client::OursTraced(Connector::new(), telemetry)
    }

    pub fn cached() -> Client {
        Client::OursCached(Connector::new(), EraCache::new())
    }

    pub fn name(&self) -> &'static str {
        match self {
            Client::Ours(_) => "ours",
            Client::OursStack(_) => "ours, full stack",
            Client::OursCached(..) => "ours, warm era cache",
            Client::OursListening(_) => "ours, handler and listener",
            Client::OursTraced(..) => "ours, OpenTelemetry on",
            Client::Rmcp(variant) => variant.name(),
            Client::Bridged(_) => "rmcp over the bridge",
            Client::Floor(_) => "raw hyper floor",
        }
    }
}

/// An established session of either client. (One per measurement; the
/// size of a variant is noise.)
#[allow(clippy::large_enum_variant)]
pub enum Held {
    /// Our session, and its standalone GET stream when asked to hold one.
    /// (A mutex only to make the held stream `Sync`; it is never locked.)
    Ours(Session, Option<std::sync::Mutex<ServerStream>>),
    Rmcp(RunningService<RoleClient, ClientConfig>),
    Floor(FloorSession),
}

fn arguments() -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({ "a": 2, "b": 3 })
        .as_object()
        .cloned()
        .unwrap()
}

impl Client {
    pub async fn establish(&self, url: &str, era: Era) -> Held {
        let ours = |request: ConnectRequest| match era {
            Era::Legacy => request.with_pin(OurVersion::V2025_11_25),
            Era::Modern => request,
        };
        match self {
            Client::Ours(connector) => {
                let request = ours(ConnectRequest::http(url).unwrap());
                Held::Ours(
                    connector.connect(request).await.expect("ours establishes"),
                    None,
                )
            }
            Client::OursStack(stack) => {
                let request = ours(ConnectRequest::http(url).unwrap());
                Held::Ours(
                    stack.connect(request).await.expect("ours establishes"),
                    None,
                )
            }
            Client::Bridged(stack) => {
                let request = ours(ConnectRequest::http(url).unwrap());
                Held::Rmcp(
                    mcp_connect_rmcp::connect(stack, request, ClientConfig::default())
                        .await
                        .expect("the bridge establishes"),
                )
            }
            Client::OursListening(connector) => {
                let handler = ClientHandler::new()
                    .on_sampling(|_| async { Ok(CreateMessageResult::text("bench", "")) })
                    .on_elicitation(|_| async { Ok(ElicitResult::decline()) })
                    .with_roots(vec![("file:///srv".into(), None)]);
                let (listener, notifications) = notification_channel(64);
                // Drained as an application would, so nothing is dropped.
                tokio::spawn(async move {
                    let mut notifications = notifications;
                    while notifications.recv().await.is_some() {}
                });
                let request = ours(ConnectRequest::http(url).unwrap())
                    .with_handler(handler)
                    .with_notifications(listener);
                Held::Ours(
                    connector.connect(request).await.expect("ours establishes"),
                    None,
                )
            }
            Client::OursTraced(connector, telemetry) => {
                let request =
                    ours(ConnectRequest::http(url).unwrap()).with_telemetry(telemetry.clone());
                Held::Ours(
                    connector.connect(request).await.expect("ours establishes"),
                    None,
                )
            }
            Client::OursCached(connector, cache) => {
                let request =
                    ours(ConnectRequest::http(url).unwrap()).with_era_cache(cache.clone());
                Held::Ours(
                    connector.connect(request).await.expect("ours establishes"),
                    None,
                )
            }
            Client::Floor(floor) => Held::Floor(floor.establish(url, era).await),
            Client::Rmcp(variant) => {
                let transport = variant.transport(url);
                let (config, mode) = match era {
                    Era::Legacy => (
                        ClientConfig::default()
                            .with_protocol_version(ProtocolVersion::V_2025_11_25),
                        ClientLifecycleMode::Initialize,
                    ),
                    Era::Modern => (
                        ClientConfig::default(),
                        ClientLifecycleMode::Auto {
                            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                            legacy_version: Some(ProtocolVersion::V_2025_11_25),
                        },
                    ),
                };
                Held::Rmcp(
                    config
                        .serve_with_lifecycle(transport, mode)
                        .await
                        .expect("rmcp establishes"),
                )
            }
        }
    }
}

impl Held {
    /// Opens and keeps the server-to-client GET stream (legacy sessions), as
    /// rmcp's client always does: equal functionality for memory figures.
    pub async fn hold_server_stream(&mut self) {
        if let Held::Ours(session, stream) = self {
            *stream = session
                .server_stream()
                .await
                .expect("GET stream")
                .map(std::sync::Mutex::new);
        }
    }

    pub async fn call(&self) {
        match self {
            Held::Ours(session, _) => {
                let result = session
                    .call_tool("add", &serde_json::json!({ "a": 2, "b": 3 }))
                    .await
                    .unwrap();
                assert_eq!(result.text(), "5");
            }
            Held::Rmcp(client) => {
                let result = client
                    .call_tool(CallToolRequestParams::new("add").with_arguments(arguments()))
                    .await
                    .unwrap();
                assert_ne!(result.is_error, Some(true));
            }
            Held::Floor(session) => session.call().await,
        }
    }

    pub async fn close(self) {
        match self {
            Held::Ours(session, stream) => {
                drop(stream);
                let _ = session.close().await;
            }
            Held::Rmcp(client) => {
                let _ = client.cancel().await;
            }
            Held::Floor(session) => session.close().await,
        }
    }
}
