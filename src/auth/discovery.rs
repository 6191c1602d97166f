//! Finding who authorizes a server: Protected Resource Metadata (RFC 9728)
//! and Authorization Server Metadata (RFC 8414, OpenID discovery), in the
//! order the MCP authorization specification gives, with the 2025-03-26
//! fallbacks for servers that publish neither.

use serde::Deserialize;
use url::Url;

use super::challenge::Challenge;
use super::http::AuthHttp;
use super::AuthError;

/// RFC 9728 metadata: the fields authorization reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ResourceMetadata {
    #[serde(default)]
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 metadata: the fields authorization reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ServerMetadata {
    #[serde(default)]
    pub(crate) issuer: Option<String>,
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: Option<bool>,
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// Everything discovery learnt.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    pub(crate) resource: Option<ResourceMetadata>,
    /// The authorization server's issuer identifier, as named.
    pub(crate) issuer: String,
    pub(crate) server: ServerMetadata,
}

/// Runs discovery for the MCP server at `server`.
pub(crate) async fn discover(
    http: &AuthHttp,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Discovered, AuthError> {
    let resource = resource_metadata(http, server, challenge).await?;
    let Some(resource) = resource else {
        return fallback(http, server).await;
    };
    if let Some(named) = &resource.resource {
        if !covers(named, server) {
            return Err(AuthError::ResourceMismatch);
        }
    }
    let issuer = resource
        .authorization_servers
        .first()
        .cloned()
        .ok_or(AuthError::NoAuthorizationServer)?;
    let issuer_url = Url::parse(&issuer).map_err(|_| AuthError::BadUrl)?;
    for url in server_metadata_urls(&issuer_url) {
        if let Some(server_metadata) = http.get(&url).await?.json::<ServerMetadata>() {
            if server_metadata.issuer.as_deref() != Some(issuer.as_str()) {
                return Err(AuthError::IssuerMismatch);
            }
            return Ok(Discovered {
                resource: Some(resource),
                issuer,
                server: server_metadata,
            });
        }
    }
    Err(AuthError::NoServerMetadata)
}

/// The PRM from the challenge's URL, else the path-aware well-known URL,
/// else the root one; `None` when the server publishes none.
async fn resource_metadata(
    http: &AuthHttp,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Option<ResourceMetadata>, AuthError> {
    let mut urls = Vec::new();
    if let Some(named) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        if let Ok(url) = server.join(named) {
            urls.push(url);
        }
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        urls.push(well_known(server, "oauth-protected-resource", path));
    }
    urls.push(well_known(server, "oauth-protected-resource", ""));
    for url in urls {
        if let Some(metadata) = http.get(&url).await?.json::<ResourceMetadata>() {
            return Ok(Some(metadata));
        }
    }
    Ok(None)
}

/// RFC 8414 §3.1 and OpenID Connect Discovery, path-aware first.
fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            well_known(issuer, "oauth-authorization-server", ""),
            well_known(issuer, "openid-configuration", ""),
        ]
    } else {
        let mut appended = issuer.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        vec![
            well_known(issuer, "oauth-authorization-server", path),
            well_known(issuer, "openid-configuration", path),
            appended,
        ]
    }
}

/// 2025-03-26: a server without Protected Resource Metadata is its own
/// authorization server, its metadata at the root, or failing that the
/// default endpoints `/authorize`, `/token` and `/register`.
async fn fallback(http: &AuthHttp, server: &Url) -> Result<Discovered, AuthError> {
    let origin = origin(server);
    let issuer = origin.as_str().trim_end_matches('/').to_owned();
    if let Some(metadata) = http
        .get(&well_known(&origin, "oauth-authorization-server", ""))
        .await?
        .json::<ServerMetadata>()
    {
        return Ok(Discovered {
            resource: None,
            issuer,
            server: metadata,
        });
    }
    let endpoint = |path: &str| origin.join(path).map(String::from).ok();
    Ok(Discovered {
        resource: None,
        issuer,
        server: ServerMetadata {
            authorization_endpoint: endpoint("/authorize"),
            token_endpoint: endpoint("/token"),
            registration_endpoint: endpoint("/register"),
            ..ServerMetadata::default()
        },
    })
}

fn origin(url: &Url) -> Url {
    let mut origin = url.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    origin
}

/// `{origin}/.well-known/{name}{path}`.
fn well_known(base: &Url, name: &str, path: &str) -> Url {
    let mut url = origin(base);
    url.set_path(&format!("/.well-known/{name}{path}"));
    url
}

/// Whether the resource a PRM names covers the server at `server`: same
/// origin, and the server's path is the resource's path or below it.
pub(crate) fn covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.scheme() != server.scheme()
        || resource.host_str() != server.host_str()
        || resource.port_or_known_default() != server.port_or_known_default()
    {
        return false;
    }
    let named = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == named || path.starts_with(&format!("{named}/"))
}

/// The canonical URI of the MCP server (RFC 8707 `resource`): no fragment,
/// no query.
pub(crate) fn canonical(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    url.set_query(None);
    let text = String::from(url);
    match text.strip_suffix('/') {
        Some(trimmed) if server.path() == "/" => trimmed.to_owned(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_in_order() {
        let server = Url::parse("https://mcp.example/api/mcp?x=1").unwrap();
        assert_eq!(
            well_known(&server, "oauth-protected-resource", "/api/mcp").as_str(),
            "https://mcp.example/.well-known/oauth-protected-resource/api/mcp"
        );
        let issuer = Url::parse("https://as.example/tenant1").unwrap();
        let urls: Vec<String> = server_metadata_urls(&issuer)
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            urls,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        let root = Url::parse("https://as.example").unwrap();
        assert_eq!(server_metadata_urls(&root).len(), 2);
    }

    #[test]
    fn resource_coverage() {
        let server = Url::parse("https://mcp.example/api/mcp").unwrap();
        assert!(covers("https://mcp.example/api/mcp", &server));
        assert!(covers("https://mcp.example/api/mcp/", &server));
        assert!(covers("https://mcp.example/", &server));
        assert!(!covers("https://mcp.example/other", &server));
        assert!(!covers("https://evil.example/api/mcp", &server));
        assert!(!covers("http://mcp.example/api/mcp", &server));
        assert_eq!(canonical(&server), "https://mcp.example/api/mcp");
        assert_eq!(
            canonical(&Url::parse("https://mcp.example/").unwrap()),
            "https://mcp.example"
        );
    }
}
