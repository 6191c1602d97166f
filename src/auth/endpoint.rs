//! The authorization server as the stage reaches it: who this client is
//! there (pre-registered, a metadata document, or registered now) and its
//! token endpoint, where every token request is made (client
//! authentication, DPoP proofs and the nonce retry).

use serde::Deserialize;
use serde_json::json;
use url::Url;

use super::discovery::Discovered;
use super::dpop::{self, DpopKey, Nonces, Party};
use super::http::{Answer, AuthHttp};
use super::{known_code, AuthError, Authorization};
use crate::store::TokenResponse;

/// The client as the authorization server knows it.
pub(super) struct Client {
    pub(super) id: String,
    secret: Option<String>,
    key: Option<super::signing::SigningKey>,
    /// `client_secret_basic`, `client_secret_post` or `none`, when the
    /// registration said.
    method: Option<String>,
}

/// Pre-registered credentials, else a Client ID Metadata Document the
/// server accepts, else Dynamic Client Registration.
pub(super) async fn identity(
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
    // Another holder of the store registered here: the tokens it stored
    // were issued to that client, so refreshes must come from it too.
    let kept = settings.store.load_registration(&discovered.issuer).await;
    if let Some(Some(kept)) = auth.store_said("read", kept)? {
        auth.state.set_registered(super::bearer::Registered {
            issuer: discovered.issuer.clone(),
            id: kept.client_id.clone(),
            secret: kept.client_secret.clone(),
            method: kept.token_endpoint_auth_method.clone(),
        });
        return Ok(Client {
            id: kept.client_id,
            secret: kept.client_secret,
            key: None,
            method: kept.token_endpoint_auth_method,
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
    let kept = crate::store::Registration {
        client_id: registered.client_id.clone(),
        client_secret: registered.client_secret.clone(),
        token_endpoint_auth_method: registered.token_endpoint_auth_method.clone(),
    };
    let saved = settings
        .store
        .save_registration(&discovered.issuer, &kept)
        .await;
    let _ = auth.store_said("write", saved);
    Ok(Client {
        id: registered.client_id,
        secret: registered.client_secret,
        key: None,
        method: registered.token_endpoint_auth_method,
    })
}

/// The authorization server's token endpoint, as one run of the stage
/// reaches it: with the DPoP key and the nonces it gave, when DPoP is on.
pub(super) struct TokenEndpoint<'a> {
    http: &'a AuthHttp,
    url: Url,
    pub(super) discovered: &'a Discovered,
    dpop: Option<(&'a DpopKey, &'a Nonces)>,
}

impl<'a> TokenEndpoint<'a> {
    pub(super) fn new(
        http: &'a AuthHttp,
        url: Url,
        discovered: &'a Discovered,
        dpop: Option<(&'a DpopKey, &'a Nonces)>,
    ) -> Self {
        TokenEndpoint {
            http,
            url,
            discovered,
            dpop,
        }
    }

    /// A token request with the client's authentication. With DPoP, each
    /// sending carries a fresh proof, and a `use_dpop_nonce` refusal
    /// (RFC 9449 §8) is answered by sending once more with the server's
    /// nonce; refused again, it is [`AuthError::DpopNonceAtToken`].
    pub(super) async fn request(
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
