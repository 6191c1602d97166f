//! One run of the authorization stage: discovery, a refresh when possible,
//! the client's identity, then the grant.

use mcp_connect_layers::deadline::DeadlinePause;
use serde::Deserialize;
use serde_json::json;
use url::Url;

use super::discovery::{self, canonical, Discovered};
use super::dpop::{self, DpopKey, Nonces, Party};
use super::http::{Answer, AuthHttp};
use super::tokens::{TokenResponse, Tokens};
use super::{known_code, pkce, AuthError, Authorization, Grant, Settings};

/// What one run of the stage did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Authorized {
    /// A refresh token obtained a new access token.
    Refreshed,
    /// A new authorization (a grant, possibly with the person).
    New,
}

/// The client as the authorization server knows it.
struct Client {
    id: String,
    secret: Option<String>,
    key: Option<super::SigningKey>,
    /// `client_secret_basic`, `client_secret_post` or `none`, when the
    /// registration said.
    method: Option<String>,
}

/// Authorizes `auth` for the MCP server at `server`: on success the token
/// is in force for the bearer layer and saved in the store.
pub(crate) async fn authorize(
    auth: &Authorization,
    server: &Url,
    http: AuthHttp,
    pause: Option<&DeadlinePause>,
    allow_new: bool,
) -> Result<Authorized, AuthError> {
    let settings = &*auth.settings;
    let challenge = auth.state.take_challenge();
    let step_up = challenge.as_ref().is_some_and(|(status, c)| {
        status.as_u16() == 403 && c.error.as_deref() == Some("insufficient_scope")
    });
    let challenge = challenge.map(|(_, c)| c);
    let discovered = discovery::discover(&http, server, challenge.as_ref()).await?;
    let resource = discovered
        .resource
        .as_ref()
        .and_then(|r| r.resource.clone())
        .unwrap_or_else(|| canonical(server));
    let token = TokenEndpoint {
        http: &http,
        url: endpoint(discovered.server.token_endpoint.as_deref(), "token")?,
        discovered: &discovered,
        dpop: settings.dpop.as_ref().map(|key| (key, &auth.state.nonces)),
    };

    // A refresh token first, unless more scope is needed: it is refused
    // once at most, then forgotten.
    let current = auth
        .state
        .tokens()
        .or_else(|| settings.store.load(&resource));
    if let Some(previous) = current.as_ref().filter(|_| !step_up) {
        if let Some(refresh) = previous.refresh_token() {
            let client = identity(auth, &http, &discovered).await?;
            let form = vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
                ("resource", resource.as_str()),
            ];
            match token.request(form, &client).await {
                Ok(response) => {
                    keep(auth, &resource, response.into_tokens(Some(previous)));
                    return Ok(Authorized::Refreshed);
                }
                Err(_) => {
                    let kept = previous.clone().without_refresh();
                    stored(settings.store.save(&resource, &kept));
                }
            }
        }
    }
    auth.state.set_tokens(None);
    // A server that refuses a token this stage has just obtained gets a
    // refresh, or more scope, never another new authorization (for the
    // authorization code grant that would ask the person again, in a loop).
    if !allow_new && !step_up {
        return Err(AuthError::TokenRefused);
    }

    let scope = settings
        .scope
        .clone()
        .or_else(|| choose_scope(challenge.as_ref(), &discovered));
    let client = identity(auth, &http, &discovered).await?;
    let tokens = match &settings.grant {
        Grant::ClientCredentials => {
            let mut form = vec![
                ("grant_type", "client_credentials"),
                ("resource", resource.as_str()),
            ];
            if let Some(scope) = &scope {
                form.push(("scope", scope));
            }
            token.request(form, &client).await?.into_tokens(None)
        }
        Grant::WorkloadIdentity(source) => {
            let assertion = source.read().await?;
            token
                .request(
                    jwt_bearer_form(&assertion, &resource, scope.as_deref()),
                    &client,
                )
                .await?
                .into_tokens(None)
        }
        Grant::EnterpriseManaged(idp, source) => {
            let assertion = source.read().await?;
            let id_jag = idp
                .exchange(
                    &http,
                    &assertion,
                    &discovered.issuer,
                    &resource,
                    scope.as_deref(),
                )
                .await?;
            token
                .request(
                    jwt_bearer_form(&id_jag, &resource, scope.as_deref()),
                    &client,
                )
                .await?
                .into_tokens(None)
        }
        Grant::Code(person) => {
            code_flow(
                settings,
                person.as_ref(),
                pause,
                &token,
                &client,
                &resource,
                scope.as_deref(),
            )
            .await?
        }
    };
    keep(auth, &resource, tokens);
    Ok(Authorized::New)
}

/// The JWT bearer grant's form (RFC 7523 §2.1).
fn jwt_bearer_form<'a>(
    assertion: &'a str,
    resource: &'a str,
    scope: Option<&'a str>,
) -> Vec<(&'a str, &'a str)> {
    let mut form = vec![
        ("grant_type", super::jwt_bearer::JWT_BEARER),
        ("assertion", assertion),
        ("resource", resource),
    ];
    if let Some(scope) = scope {
        form.push(("scope", scope));
    }
    form
}

fn keep(auth: &Authorization, resource: &str, tokens: Tokens) {
    stored(auth.settings.store.save(resource, &tokens));
    auth.state.set_tokens(Some(tokens));
}

/// A store that could not keep the tokens does not fail the
/// authorization (the tokens work for this process); it is logged, and the
/// store's owner saw the error.
fn stored(result: Result<(), super::StoreError>) {
    if result.is_err() {
        tracing::warn!(target: "mcp_connect::auth", "the token store could not be written");
    }
}

fn endpoint(url: Option<&str>, name: &'static str) -> Result<Url, AuthError> {
    let url = url.ok_or(AuthError::MissingEndpoint(name))?;
    Url::parse(url).map_err(|_| AuthError::BadUrl)
}

/// The challenge's scope, else what the resource supports, else none; plus
/// `offline_access` when the authorization server offers it (so a refresh
/// token can be issued).
fn choose_scope(
    challenge: Option<&super::challenge::Challenge>,
    discovered: &Discovered,
) -> Option<String> {
    let mut scope = challenge.and_then(|c| c.scope.clone()).or_else(|| {
        discovered
            .resource
            .as_ref()
            .and_then(|r| r.scopes_supported.as_ref())
            .filter(|s| !s.is_empty())
            .map(|s| s.join(" "))
    });
    let offered = discovered
        .server
        .scopes_supported
        .as_ref()
        .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
    if offered
        && !scope
            .as_deref()
            .unwrap_or_default()
            .split(' ')
            .any(|s| s == "offline_access")
    {
        scope = Some(match scope {
            Some(scope) => format!("{scope} offline_access"),
            None => "offline_access".into(),
        });
    }
    scope
}

/// Pre-registered credentials, else a Client ID Metadata Document the
/// server accepts, else Dynamic Client Registration.
async fn identity(
    auth: &Authorization,
    http: &AuthHttp,
    discovered: &Discovered,
) -> Result<Client, AuthError> {
    let settings = &*auth.settings;
    if let Some(id) = &settings.client_id {
        return Ok(Client {
            id: id.clone(),
            secret: settings.client_secret.clone(),
            key: settings.client_key.clone(),
            method: None,
        });
    }
    if let Some(url) = &settings.client_metadata_url {
        if discovered.server.client_id_metadata_document_supported == Some(true) {
            return Ok(Client {
                id: url.clone(),
                secret: None,
                key: None,
                method: Some("none".into()),
            });
        }
    }
    if let Some(registered) = auth.state.registered_at(&discovered.issuer) {
        return Ok(Client {
            id: registered.id,
            secret: registered.secret,
            key: None,
            method: registered.method,
        });
    }
    let Some(registration) = discovered.server.registration_endpoint.as_deref() else {
        return Err(AuthError::NoClientIdentity);
    };
    let registration = Url::parse(registration).map_err(|_| AuthError::BadUrl)?;
    let grant_types = settings.grant.types();
    let body = json!({
        "client_name": settings.client_name,
        "redirect_uris": [settings.redirect_uri],
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    let answer = http.post_json(&registration, &body).await?;
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    let registered: Registered = answer.json().ok_or(AuthError::Registration {
        status: answer.status.as_u16(),
    })?;
    auth.state.set_registered(super::bearer::Registered {
        issuer: discovered.issuer.clone(),
        id: registered.client_id.clone(),
        secret: registered.client_secret.clone(),
        method: registered.token_endpoint_auth_method.clone(),
    });
    Ok(Client {
        id: registered.client_id,
        secret: registered.client_secret,
        key: None,
        method: registered.token_endpoint_auth_method,
    })
}

/// Authorization code with PKCE: the person authorizes at the server, the
/// redirect back is checked (`state`, `iss`), the code is exchanged.
#[allow(clippy::too_many_arguments)]
async fn code_flow(
    settings: &Settings,
    person: &dyn super::Authorize,
    pause: Option<&DeadlinePause>,
    token: &TokenEndpoint<'_>,
    client: &Client,
    resource: &str,
    scope: Option<&str>,
) -> Result<Tokens, AuthError> {
    let discovered = token.discovered;
    if let Some(methods) = &discovered.server.code_challenge_methods_supported {
        if !methods.iter().any(|m| m == "S256") {
            return Err(AuthError::NoPkce);
        }
    }
    let mut url = endpoint(
        discovered.server.authorization_endpoint.as_deref(),
        "authorization",
    )?;
    let verifier = pkce::random_token();
    let state = pkce::random_token();
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.id)
            .append_pair("redirect_uri", &settings.redirect_uri)
            .append_pair("code_challenge", &pkce::challenge(&verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", resource);
        if let Some(scope) = scope {
            query.append_pair("scope", scope);
        }
    }
    // The person's wait has its own limit and does not count against the
    // establishment deadline.
    let paused = pause.map(DeadlinePause::pause);
    let waited = tokio::time::timeout(settings.person_timeout, person.authorize(url.into())).await;
    drop(paused);
    let back = match waited {
        Err(_) => return Err(AuthError::PersonTimeout(settings.person_timeout)),
        Ok(Err(error)) => return Err(AuthError::Person(error)),
        Ok(Ok(back)) => Url::parse(&back).map_err(|_| AuthError::BadUrl)?,
    };
    let param = |name: &str| {
        back.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = param("error") {
        return Err(AuthError::Refused(known_code(Some(&error))));
    }
    if param("state").as_deref() != Some(state.as_str()) {
        return Err(AuthError::StateMismatch);
    }
    // RFC 9207: an `iss` must name this issuer; a server that says it
    // sends one must.
    match param("iss") {
        Some(iss) if iss != discovered.issuer => return Err(AuthError::IssuerNotConfirmed),
        None if discovered
            .server
            .authorization_response_iss_parameter_supported
            == Some(true) =>
        {
            return Err(AuthError::IssuerNotConfirmed)
        }
        _ => {}
    }
    let code = param("code").ok_or(AuthError::NoCode)?;
    let form = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", settings.redirect_uri.as_str()),
        ("code_verifier", verifier.as_str()),
        ("resource", resource),
    ];
    Ok(token.request(form, client).await?.into_tokens(None))
}

/// The authorization server's token endpoint, as one run of the stage
/// reaches it: with the DPoP key and the nonces it gave, when DPoP is on.
struct TokenEndpoint<'a> {
    http: &'a AuthHttp,
    url: Url,
    discovered: &'a Discovered,
    dpop: Option<(&'a DpopKey, &'a Nonces)>,
}

impl TokenEndpoint<'_> {
    /// A token request with the client's authentication. With DPoP, each
    /// sending carries a fresh proof, and a `use_dpop_nonce` refusal
    /// (RFC 9449 §8) is answered by sending once more with the server's
    /// nonce; refused again, it is [`AuthError::DpopNonceAtToken`].
    async fn request(
        &self,
        form: Vec<(&str, &str)>,
        client: &Client,
    ) -> Result<TokenResponse, AuthError> {
        let Some((key, nonces)) = self.dpop else {
            return token_response(self.send(form, client, None).await?);
        };
        let accepted = &self.discovered.server.dpop_signing_alg_values_supported;
        if accepted
            .as_ref()
            .is_some_and(|algs| !algs.iter().any(|a| a == key.algorithm()))
        {
            return Err(AuthError::DpopAlgorithm);
        }
        let origin = dpop::origin_of(self.url.as_str());
        let mut with_its_nonce = false;
        loop {
            let proof = key
                .proof(
                    "POST",
                    self.url.as_str(),
                    None,
                    nonces.get(Party::AuthorizationServer, &origin).as_deref(),
                )
                .map_err(|_| AuthError::Unsupported("the DPoP proof could not be signed"))?;
            let answer = self.send(form.clone(), client, Some(proof)).await?;
            nonces.keep(Party::AuthorizationServer, &origin, &answer.headers);
            if !asks_for_nonce(&answer) {
                return token_response(answer);
            }
            if with_its_nonce {
                return Err(AuthError::DpopNonceAtToken);
            }
            with_its_nonce = true;
        }
    }

    /// One sending: HTTP Basic or form fields for a client with a secret
    /// (as registered, else as the server supports, Basic first), a fresh
    /// signed assertion for a client with a key, `client_id` alone for a
    /// public client.
    async fn send(
        &self,
        mut form: Vec<(&str, &str)>,
        client: &Client,
        proof: Option<http::HeaderValue>,
    ) -> Result<Answer, AuthError> {
        let (http, url, discovered) = (self.http, &self.url, self.discovered);
        let supported = discovered
            .server
            .token_endpoint_auth_methods_supported
            .as_deref();
        let assertion;
        if let Some(key) = &client.key {
            assertion =
                key.assertion(&client.id, &discovered.issuer)
                    .ok_or(AuthError::Unsupported(
                        "the client assertion could not be signed",
                    ))?;
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ));
            form.push(("client_assertion", &assertion));
            form.push(("client_id", &client.id));
            return http.post_form(url, &form, None, proof).await;
        }
        let basic = match (&client.secret, client.method.as_deref()) {
            (None, _) | (Some(_), Some("none")) => None,
            (Some(secret), Some("client_secret_post")) => {
                form.push(("client_secret", secret));
                None
            }
            (Some(secret), Some("client_secret_basic")) => Some(secret),
            (Some(secret), _) => {
                let takes = |m: &str| supported.is_some_and(|s| s.iter().any(|x| x == m));
                if takes("client_secret_post") && !takes("client_secret_basic") {
                    form.push(("client_secret", secret));
                    None
                } else {
                    Some(secret)
                }
            }
        };
        match basic {
            Some(secret) => {
                http.post_form(url, &form, Some((&client.id, secret)), proof)
                    .await
            }
            None => {
                form.push(("client_id", &client.id));
                http.post_form(url, &form, None, proof).await
            }
        }
    }
}

/// Whether a token endpoint's answer asks for a DPoP nonce: 400
/// `use_dpop_nonce` with a `DPoP-Nonce` header (RFC 9449 §8).
fn asks_for_nonce(answer: &Answer) -> bool {
    answer.status == http::StatusCode::BAD_REQUEST
        && answer.headers.contains_key(dpop::DPOP_NONCE)
        && answer.oauth_error().as_deref() == Some("use_dpop_nonce")
}

/// A token response, or the refusal with its status and known error code.
fn token_response(answer: Answer) -> Result<TokenResponse, AuthError> {
    if let Some(response) = answer.json::<TokenResponse>() {
        return Ok(response);
    }
    let error = answer.oauth_error();
    Err(AuthError::Token {
        status: answer.status.as_u16(),
        error: known_code(error.as_deref()),
    })
}
