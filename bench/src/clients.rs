//! The two clients behind one small interface.

use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::protocol::ProtocolVersion as OurVersion;
use mcp_connect::{ConnectRequest, Connector, EraCache, Establish, EstablishBuilder, Session};
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

/// A client under test.
#[derive(Clone)]
pub enum Client {
    /// mcp-connect's bare make-service.
    Ours(Connector),
    /// mcp-connect's full four-layer stack (recovery on).
    OursStack(Establish),
    /// mcp-connect with a warm era cache.
    OursCached(Connector, EraCache),
    /// rmcp 3.11's default client.
    Rmcp,
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

    pub fn cached() -> Client {
        Client::OursCached(Connector::new(), EraCache::new())
    }
}

/// An established session of either client.
pub enum Held {
    Ours(Session),
    Rmcp(RunningService<RoleClient, ClientConfig>),
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
                Held::Ours(connector.connect(request).await.expect("ours establishes"))
            }
            Client::OursStack(stack) => {
                let request = ours(ConnectRequest::http(url).unwrap());
                Held::Ours(stack.connect(request).await.expect("ours establishes"))
            }
            Client::OursCached(connector, cache) => {
                let request =
                    ours(ConnectRequest::http(url).unwrap()).with_era_cache(cache.clone());
                Held::Ours(connector.connect(request).await.expect("ours establishes"))
            }
            Client::Rmcp => {
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url),
                );
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
    pub async fn call(&self) {
        match self {
            Held::Ours(session) => {
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
        }
    }

    pub async fn close(self) {
        match self {
            Held::Ours(session) => {
                let _ = session.close().await;
            }
            Held::Rmcp(client) => {
                let _ = client.cancel().await;
            }
        }
    }
}
