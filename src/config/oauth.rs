//! An entry's `oauth` block, as the draft standard `mcp.json` (SEP-2633)
//! writes it: how to start the OAuth flow for a remote server, never a
//! secret.
//!
//! ```json
//! "oauth": { "clientId": "1601185624273.8899143856786",
//!            "scopes": ["channels:read"],
//!            "redirectUri": "http://localhost:3118/callback" }
//! ```
//!
//! Every field is optional (without `clientId` the client registers
//! itself). The block is refused on a stdio entry, and beside an
//! `Authorization` header: one way to authorize, not two. Nothing here
//! asks a person: [`OAuthSettings::authorization`] makes the
//! [`Authorization`] with the application's way of asking.

use serde_json::{Map, Value};

use super::{expand, list, text, EntryProblem, Variables};
use crate::auth::{Authorization, Authorize};
use crate::ConnectRequest;

/// The block's field in an entry.
pub(super) const FIELD: &str = "oauth";

/// The fields of the block.
const KNOWN: &[&str] = &["clientId", "scopes", "redirectUri"];

/// How to start the OAuth flow for one server (the entry's `oauth` block).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// A client id registered beforehand (none: register dynamically).
    pub client_id: Option<String>,
    /// The scopes to ask for (none: the server's suggestion).
    pub scopes: Vec<String>,
    /// Where the authorization server sends the person back.
    pub redirect_uri: Option<String>,
}

impl OAuthSettings {
    /// The authorization-code flow with these settings, `person` asked
    /// for consent (a browser and a loopback redirect in the command).
    pub fn authorization(&self, person: impl Authorize) -> Authorization {
        let mut authorization = Authorization::authorization_code(person);
        if let Some(id) = &self.client_id {
            authorization = authorization.with_client_id(id);
        }
        if !self.scopes.is_empty() {
            authorization = authorization.with_scope(self.scopes.join(" "));
        }
        if let Some(uri) = &self.redirect_uri {
            authorization = authorization.with_redirect_uri(uri);
        }
        authorization
    }
}

/// The entry's block (none without one), for the server `request` reaches.
pub(super) fn read(
    entry: &Map<String, Value>,
    request: &ConnectRequest,
    variables: &Variables<'_>,
) -> Result<Option<OAuthSettings>, EntryProblem> {
    let Some(block) = entry.get(FIELD) else {
        return Ok(None);
    };
    let Value::Object(block) = block else {
        return Err(EntryProblem::WrongType { field: FIELD });
    };
    if request.target().http_url().is_none() {
        return Err(EntryProblem::OAuthWithoutUrl);
    }
    let has_authorization_header =
        (entry.get("headers").and_then(Value::as_object)).is_some_and(|headers| {
            headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization"))
        });
    if has_authorization_header {
        return Err(EntryProblem::OAuthAndAuthorizationHeader);
    }
    if let Some(unknown) = block.keys().find(|key| !KNOWN.contains(&key.as_str())) {
        return Err(EntryProblem::UnknownOAuthField(unknown.clone()));
    }
    let expanded = |field| -> Result<Option<String>, EntryProblem> {
        text(block, field)?
            .map(|v| expand(v, variables))
            .transpose()
    };
    Ok(Some(OAuthSettings {
        client_id: expanded("clientId")?,
        scopes: list(block, "scopes")?
            .into_iter()
            .map(str::to_owned)
            .collect(),
        redirect_uri: expanded("redirectUri")?,
    }))
}

impl super::ServerConfig {
    /// The entry's `oauth` block: how to start the OAuth flow for it.
    pub fn oauth(&self) -> Option<&OAuthSettings> {
        self.settings.oauth.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{EntryProblem, OAuthSettings, ServersConfig};

    #[test]
    fn the_block_is_read_and_refused_where_it_cannot_apply() {
        let env = |name: &str| (name == "CLIENT").then(|| "from-env".to_owned());
        let text = r#"{ "mcpServers": {
            "slack": { "type": "streamable-http", "url": "https://mcp.slack.com/mcp",
                       "oauth": { "clientId": "${env:CLIENT}", "scopes": ["a", "b"],
                                  "redirectUri": "http://localhost:3118/callback" } },
            "bare": { "url": "https://mcp.linear.app/mcp", "oauth": {} },
            "local": { "command": "srv", "oauth": { "clientId": "x" } },
            "both": { "url": "https://a.example.com/mcp", "oauth": {},
                      "headers": { "authorization": "Bearer t" } },
            "typo": { "url": "https://a.example.com/mcp", "oauth": { "clientID": "x" } }
        } }"#;
        let config = ServersConfig::parse_with(text, &env).unwrap();
        let slack = config.get("slack").unwrap().oauth().unwrap();
        assert_eq!(
            slack,
            &OAuthSettings {
                client_id: Some("from-env".into()),
                scopes: vec!["a".into(), "b".into()],
                redirect_uri: Some("http://localhost:3118/callback".into()),
            }
        );
        assert_eq!(
            config.get("bare").unwrap().oauth(),
            Some(&OAuthSettings::default())
        );
        let problem = |name: &str| {
            config
                .errors()
                .find(|e| e.name() == name)
                .unwrap()
                .problem()
        };
        assert!(matches!(problem("local"), EntryProblem::OAuthWithoutUrl));
        assert!(matches!(
            problem("both"),
            EntryProblem::OAuthAndAuthorizationHeader
        ));
        assert!(matches!(problem("typo"), EntryProblem::UnknownOAuthField(f) if f == "clientID"));
    }
}
