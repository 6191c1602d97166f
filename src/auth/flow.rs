//! One run of the authorization stage: discovery, a refresh when possible,
//! the client's identity, then the grant.

use mcp_connect_layers::deadline::DeadlinePause;
use url::Url;

use super::discovery::{self, canonical, Discovered};
use super::endpoint::{identity, Client, TokenEndpoint};
use super::http::AuthHttp;
use super::{jwt_bearer, known_code, pkce, AuthError, Authorization, Authorized, Grant, Settings};
use crate::store::TokenKey;
use crate::store::Tokens;

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
    let key = token_key(auth, server, &discovered);
    let resource = key.resource().to_owned();
    let token = token_endpoint(auth, &http, &discovered)?;

    // Tokens another holder stored, else one refresh for all holders,
    // unless more scope is needed: a refresh token is refused once at
    // most, then forgotten.
    if !step_up {
        if let Some(done) =
            super::refresh::before_new(auth, &key, &token, &http, &discovered).await?
        {
            return Ok(done);
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
    // A person's authorization takes the fleet's turn first: a holder that
    // waits for another's person uses its tokens, and registers nothing.
    let turn = match &settings.grant {
        Grant::Code(_) => match super::once::turn(auth, &key, pause).await? {
            super::once::Turn::Theirs(tokens) => {
                auth.state.set_tokens(Some(tokens));
                return Ok(Authorized::Refreshed);
            }
            super::once::Turn::Mine(lease) => Some(lease),
        },
        _ => None,
    };
    let client = match identity(auth, &http, &discovered).await {
        Ok(client) => client,
        Err(error) => {
            super::once::done(auth, &key, turn.flatten()).await;
            return Err(error);
        }
    };
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
        Grant::TokenExchange(subject) => {
            let subject = subject.read().await?;
            let mut form = vec![
                ("grant_type", jwt_bearer::TOKEN_EXCHANGE),
                ("subject_token", subject.as_str()),
                ("subject_token_type", jwt_bearer::ACCESS_TOKEN),
                ("requested_token_type", jwt_bearer::ACCESS_TOKEN),
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
            let flow = code_flow(
                settings,
                person.as_ref(),
                pause,
                &token,
                &client,
                &resource,
                scope.as_deref(),
            )
            .await;
            // Stored before the lease is given back, so the holders
            // waiting for them find them.
            let outcome = match flow {
                Ok(tokens) => {
                    keep(auth, &key, tokens).await;
                    Ok(Authorized::New)
                }
                Err(error) => Err(error),
            };
            super::once::done(auth, &key, turn.flatten()).await;
            return outcome;
        }
    };
    keep(auth, &key, tokens).await;
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

/// Refreshes the tokens in force when they expire within
/// [`REFRESH_AHEAD`](super::REFRESH_AHEAD) (or a tenth of their lifetime)
/// and a refresh token came with them, under the store's refresh lease as
/// after a refusal: the tokens another holder stored, else one refresh
/// for all. Nothing is sent otherwise. A refused refresh leaves the access
/// token in force until it expires (the refresh token is forgotten).
pub(crate) async fn refresh_ahead(
    auth: &Authorization,
    server: &Url,
    http: AuthHttp,
) -> Result<(), AuthError> {
    let now = std::time::SystemTime::now();
    let Some(current) = auth
        .state
        .tokens()
        .filter(|t| t.refresh_token().is_some() && t.expiring(now))
    else {
        return Ok(());
    };
    let discovered = discovery::discover(&http, server, None).await?;
    let key = token_key(auth, server, &discovered);
    let token = token_endpoint(auth, &http, &discovered)?;
    let refreshed = super::refresh::before_new(auth, &key, &token, &http, &discovered).await?;
    if refreshed.is_none()
        && auth.state.tokens().is_none()
        && !current.expired_at(std::time::SystemTime::now())
    {
        auth.state.set_tokens(Some(current.without_refresh()));
    }
    Ok(())
}

/// Where the store files the tokens for `server`, as discovery found it.
fn token_key(auth: &Authorization, server: &Url, discovered: &Discovered) -> TokenKey {
    let resource = discovered
        .resource
        .as_ref()
        .and_then(|r| r.resource.clone())
        .unwrap_or_else(|| canonical(server));
    auth.token_key(&resource, &discovered.issuer)
}

/// The token endpoint discovery found, with this authorization's DPoP key.
fn token_endpoint<'a>(
    auth: &'a Authorization,
    http: &'a AuthHttp,
    discovered: &'a Discovered,
) -> Result<TokenEndpoint<'a>, AuthError> {
    Ok(TokenEndpoint::new(
        http,
        endpoint(discovered.server.token_endpoint.as_deref(), "token")?,
        discovered,
        auth.settings
            .dpop
            .as_ref()
            .map(|key| (key, &auth.state.nonces)),
    ))
}

async fn keep(auth: &Authorization, key: &TokenKey, tokens: Tokens) {
    let saved = auth.settings.store.save(key, &tokens).await;
    let _ = auth.store_said("write", saved);
    auth.state.set_tokens(Some(tokens));
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
