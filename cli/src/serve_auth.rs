//! `serve --issuer URL [--audience URI] [--required-scope S]`: the gateway
//! as an OAuth resource server, checking JWT access tokens from one
//! issuer. The audience is the gateway's own URL (`http://ADDR/mcp`, the
//! address it got) unless said otherwise: a token for another resource is
//! refused (RFC 8707).

use mcp_connect::transport::HttpClient;
use mcp_connect_gateway::ResourceServer;

use super::args::Args;

/// The options, checked before anything starts.
pub(super) struct Issuer {
    issuer: url::Url,
    audience: Option<String>,
    scopes: Vec<String>,
}

impl Issuer {
    /// The issuer the options name, if any, or the usage error.
    pub(super) fn from_args(args: &Args) -> Result<Option<Issuer>, String> {
        let Some(issuer) = &args.issuer else {
            return Ok(None);
        };
        let issuer = url::Url::parse(issuer).map_err(|_| "--issuer: not a URL".to_owned())?;
        let loopback = matches!(issuer.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        if issuer.scheme() != "https" && !(issuer.scheme() == "http" && loopback) {
            return Err("--issuer: needs https:// (or a loopback address)".into());
        }
        if let Some(audience) = &args.audience {
            url::Url::parse(audience).map_err(|_| "--audience: not a URI".to_owned())?;
        }
        Ok(Some(Issuer {
            issuer,
            audience: args.audience.clone(),
            scopes: args.required_scope.clone(),
        }))
    }

    /// The resource server of the gateway listening at `addr`, asking the
    /// issuer through `client`.
    pub(super) fn server(self, addr: std::net::SocketAddr, client: &HttpClient) -> ResourceServer {
        let audience = (self.audience).unwrap_or_else(|| format!("http://{addr}/mcp"));
        ResourceServer::jwt(self.issuer, audience, client.clone()).required_scopes(self.scopes)
    }
}
