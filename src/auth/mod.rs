//! OAuth 2.1 authorization as an establishment stage (MCP authorization,
//! 2025-11-25 and 2026-07-28).
//!
//! A server that answers an establishment with 401 (or 403
//! `insufficient_scope`) is authorized in one named stage,
//! [`AUTHORIZE`], under the establishment's clock (deadline, cancellation,
//! stage events), then the establishment runs again with the token:
//!
//! 1. discovery: the `WWW-Authenticate` challenge, Protected
//!    Resource Metadata, Authorization Server Metadata, with the resource
//!    and issuer checks;
//! 2. a stored refresh token, when there is one, before anything else;
//! 3. the client's identity: pre-registered credentials, a Client ID
//!    Metadata Document URL, or Dynamic Client Registration;
//! 4. the grant: authorization code with PKCE (S256), `state` and
//!    `resource`, the person's part done by the application's
//!    [`Authorize`]; or `client_credentials` for services without a person.
//!
//! The token reaches requests through a tower layer on the transport's HTTP
//! client, only for the protected resource's origin. Tokens,
//! codes, verifiers, secrets and `state` live in typed fields whose `Debug`
//! and `Display` never show them.
//!
//! Where this differs from the `oauth2` crate and the SDKs: the flow is one
//! establishment stage with the same bounds and classification as the
//! others (an authorization failure is `FailureKind::Auth`, never a reason
//! for a fresh session or an older era), and the person's wait has its own
//! limit.

mod authorizer;
mod bearer;
mod challenge;
mod discovery;
mod dpop;
mod endpoint;
mod error;
mod flow;
mod http;
mod jwt_bearer;
mod once;
mod pkce;
mod refresh;
#[cfg(feature = "signing")]
mod signing;
#[cfg(not(feature = "signing"))]
#[path = "signing_off.rs"]
mod signing;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_connect_layers::{Phase, Stage, StageInfo};

use crate::store::{Lease, LeaseKind, MemoryTokenStore, StoreError, TokenKey, TokenStore, Tokens};
pub(crate) use authorizer::{server_url, Authorized, Authorizer, Reauthorization};
pub(crate) use bearer::AuthState;
pub use bearer::{Bearer, BearerLayer};
pub use dpop::{DpopKey, DpopSigner};
pub(crate) use error::known_code;
pub use error::AuthError;
pub use jwt_bearer::{AssertionSource, IdentityProvider};
#[cfg(feature = "signing")]
#[cfg_attr(docsrs, doc(cfg(feature = "signing")))]
pub use signing::{KeyError, SigningKey};

use crate::transport::error::BoxError;

/// The authorization stage.
pub const AUTHORIZE: Stage = Stage::new(&StageInfo {
    name: "authorize",
    phase: Phase::Establish,
});

/// The person's part of an authorization code flow, done by the
/// application: show `url` (print it, open a browser), and return the URL
/// the authorization server redirected back to, with its `code`, `state`
/// and `iss`.
pub trait Authorize: Send + Sync + 'static {
    /// Has the person authorize at `url`; the redirect URL back.
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<String, BoxError>>;
}

/// Which grant obtains tokens.
#[derive(Clone)]
enum Grant {
    /// Authorization code with PKCE; a person takes part.
    Code(Arc<dyn Authorize>),
    /// `client_credentials` (machine to machine); needs a client id and
    /// secret.
    ClientCredentials,
    /// The JWT bearer grant with a workload's identity token (SEP-1933).
    WorkloadIdentity(AssertionSource),
    /// A token exchange at the enterprise identity provider, then the JWT
    /// bearer grant with the ID-JAG it issued (SEP-990).
    EnterpriseManaged(IdentityProvider, AssertionSource),
    /// Token exchange (RFC 8693): the caller's access token, read from the
    /// source when needed, exchanged for one for this server, the client
    /// acting for the caller.
    TokenExchange(AssertionSource),
}

impl Grant {
    /// The `grant_types` a registration asks for.
    fn types(&self) -> &'static [&'static str] {
        match self {
            Grant::Code(_) => &["authorization_code", "refresh_token"],
            Grant::ClientCredentials => &["client_credentials"],
            Grant::WorkloadIdentity(_) | Grant::EnterpriseManaged(..) => &[jwt_bearer::JWT_BEARER],
            Grant::TokenExchange(_) => &[jwt_bearer::TOKEN_EXCHANGE],
        }
    }
}

/// How a connection authorizes: the grant, the client's identity, and where
/// tokens are kept. Cheap to clone; clones share their tokens, so every
/// session of an [`McpClient`](crate::McpClient) uses (and refreshes) the
/// same ones.
///
/// ```no_run
/// use mcp_connect::auth::Authorization;
///
/// let auth = Authorization::client_credentials("my-service", "secret-from-env");
/// # let _ = auth;
/// ```
#[derive(Clone)]
pub struct Authorization {
    settings: Arc<Settings>,
    pub(crate) state: Arc<AuthState>,
}

#[derive(Clone)]
struct Settings {
    grant: Grant,
    client_id: Option<String>,
    client_secret: Option<String>,
    client_key: Option<signing::SigningKey>,
    client_metadata_url: Option<String>,
    client_name: String,
    redirect_uri: String,
    scope: Option<String>,
    store: Arc<dyn TokenStore>,
    principal: Option<String>,
    person_timeout: Duration,
    dpop: Option<DpopKey>,
}

impl Authorization {
    fn with_grant(grant: Grant) -> Self {
        Authorization {
            settings: Arc::new(Settings {
                grant,
                client_id: None,
                client_secret: None,
                client_key: None,
                client_metadata_url: None,
                client_name: "mcp-connect".into(),
                redirect_uri: "http://127.0.0.1/callback".into(),
                scope: None,
                store: Arc::new(MemoryTokenStore::new()),
                principal: None,
                person_timeout: Duration::from_secs(300),
                dpop: None,
            }),
            state: Arc::default(),
        }
    }

    /// The authorization code grant; `person` does the person's part.
    pub fn authorization_code(person: impl Authorize) -> Self {
        Self::with_grant(Grant::Code(Arc::new(person)))
    }

    /// The `client_credentials` grant with a client id and secret
    /// (`client_secret_basic`, or `client_secret_post` when the server only
    /// takes that).
    pub fn client_credentials(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self::with_grant(Grant::ClientCredentials)
            .with_client_id(client_id)
            .with_client_secret(secret)
    }

    /// Token exchange (RFC 8693) for a service acting for its caller, as a
    /// gateway does: the caller's access token, read from `subject` each
    /// time a token is needed, is exchanged at this server's authorization
    /// server for a token for this server, the client (`client_id`,
    /// `secret`) authenticating as itself. The caller's own token never
    /// reaches the server (the MCP authorization specification forbids
    /// passing it through). Give each caller its own `Authorization`,
    /// named with [`for_principal`](Self::for_principal), so that a store
    /// never hands one caller's tokens to another.
    ///
    /// ```
    /// use mcp_connect::auth::{AssertionSource, Authorization};
    ///
    /// # fn callers_token() -> String { String::new() }
    /// let auth = Authorization::token_exchange(
    ///     "gateway",
    ///     "client-secret",
    ///     AssertionSource::from_fn(|| async { Ok(callers_token()) }),
    /// )
    /// .for_principal("https://issuer.example|alice");
    /// # let _ = auth;
    /// ```
    pub fn token_exchange(
        client_id: impl Into<String>,
        secret: impl Into<String>,
        subject: AssertionSource,
    ) -> Self {
        Self::with_grant(Grant::TokenExchange(subject))
            .with_client_id(client_id)
            .with_client_secret(secret)
    }

    /// Workload identity federation (SEP-1933): the JWT bearer grant
    /// (RFC 7523) with the token the platform gives this workload, read
    /// from `token` each time a token is needed. No person, no secret of
    /// the client's own; `client_id` is how the authorization server knows
    /// this workload.
    ///
    /// ```
    /// use mcp_connect::auth::{AssertionSource, Authorization};
    ///
    /// let auth = Authorization::workload_identity(
    ///     "billing-agent",
    ///     AssertionSource::file("/var/run/secrets/tokens/mcp-token"),
    /// );
    /// # let _ = auth;
    /// ```
    pub fn workload_identity(client_id: impl Into<String>, token: AssertionSource) -> Self {
        Self::with_grant(Grant::WorkloadIdentity(token)).with_client_id(client_id)
    }

    /// Enterprise-managed authorization (SEP-990, cross-app access): the
    /// person's identity assertion (an ID token from the enterprise's
    /// identity provider, read from `assertion` when needed) is exchanged
    /// at `idp` for an ID-JAG (RFC 8693), which the MCP server's
    /// authorization server takes in the JWT bearer grant (RFC 7523). Give
    /// this client's credentials there with
    /// [`with_client_id`](Self::with_client_id) and
    /// [`with_client_secret`](Self::with_client_secret).
    pub fn enterprise_managed(idp: IdentityProvider, assertion: AssertionSource) -> Self {
        Self::with_grant(Grant::EnterpriseManaged(idp, assertion))
    }

    fn settings(&mut self) -> &mut Settings {
        Arc::make_mut(&mut self.settings)
    }

    /// A pre-registered client id (no registration).
    #[must_use]
    pub fn with_client_id(mut self, id: impl Into<String>) -> Self {
        self.settings().client_id = Some(id.into());
        self
    }

    /// The pre-registered client's secret.
    #[must_use]
    pub fn with_client_secret(mut self, secret: impl Into<String>) -> Self {
        self.settings().client_secret = Some(secret.into());
        self
    }

    /// The URL of this client's Client ID Metadata Document, used as its
    /// client id where the authorization server supports them.
    #[must_use]
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.settings().client_metadata_url = Some(url.into());
        self
    }

    /// The name given at Dynamic Client Registration.
    #[must_use]
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.settings().client_name = name.into();
        self
    }

    /// Where the authorization server sends the person back.
    #[must_use]
    pub fn with_redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.settings().redirect_uri = uri.into();
        self
    }

    /// The scope to ask for, instead of the one the server suggests.
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.settings().scope = Some(scope.into());
        self
    }

    /// Where tokens are kept (in memory by default).
    #[must_use]
    pub fn with_token_store(mut self, store: impl TokenStore) -> Self {
        self.settings().store = Arc::new(store);
        self
    }

    /// Whom the tokens act for (a person, a tenant), when one service
    /// authorizes for many: the store keeps each principal's tokens, leases
    /// and refreshes apart from every other's.
    #[must_use]
    pub fn for_principal(mut self, principal: impl Into<String>) -> Self {
        self.settings().principal = Some(principal.into());
        self
    }

    /// Asks for DPoP-bound tokens (RFC 9449): every token request carries a
    /// proof of `key`, and a token the server binds to it goes to the
    /// resource as `Authorization: DPoP` with a fresh proof per request. A
    /// server that issues a plain bearer token anyway gets it as one.
    ///
    /// ```
    /// use mcp_connect::auth::{Authorization, DpopKey};
    ///
    /// # fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let auth = Authorization::client_credentials("my-service", "secret-from-env")
    ///     .with_dpop(DpopKey::generate()?);
    /// # let _ = auth; Ok(()) }
    /// ```
    #[must_use]
    pub fn with_dpop(mut self, key: DpopKey) -> Self {
        self.settings().dpop = Some(key);
        self
    }

    /// How long the person may take (5 minutes by default).
    #[must_use]
    pub fn with_person_timeout(mut self, limit: Duration) -> Self {
        self.settings().person_timeout = limit;
        self
    }
}

impl Authorization {
    /// `result` of a store `operation`. A store that is down or slow is
    /// passed over (`Ok(None)`: authorization goes on with what this
    /// process holds) and said once per outage; one that cannot work as
    /// configured fails the authorization ([`AuthError::Store`]): going on
    /// alone would cost the fleet its one refresh.
    fn store_said<T>(
        &self,
        operation: &'static str,
        result: Result<T, StoreError>,
    ) -> Result<Option<T>, AuthError> {
        match result {
            Err(error) if error.is_configuration() => Err(AuthError::Store(error)),
            result => Ok(self.state.store_health.observe(operation, result)),
        }
    }

    /// Gives back a lease of `kind`. A store that fails is passed over:
    /// the lease ends on its own when its time is up.
    async fn give_back(&self, key: &TokenKey, kind: LeaseKind, lease: &Lease) {
        let released = self.settings.store.release(key, kind, lease).await;
        let _ = self.store_said("release", released);
    }

    /// The stored tokens, read again by the holder of `lease`: another
    /// holder may have stored its own and given its lease back since the
    /// last read. A store that cannot work as configured gets the lease
    /// back, and the authorization fails.
    async fn read_holding(
        &self,
        key: &TokenKey,
        kind: LeaseKind,
        lease: &Lease,
    ) -> Result<Option<Tokens>, AuthError> {
        match self.store_said("read", self.settings.store.load(key).await) {
            Ok(stored) => Ok(stored.flatten()),
            Err(error) => {
                self.give_back(key, kind, lease).await;
                Err(error)
            }
        }
    }

    /// Where the store files the tokens `issuer` gives for `resource`.
    fn token_key(&self, resource: &str, issuer: &str) -> TokenKey {
        let settings = &self.settings;
        let client = settings
            .client_id
            .as_deref()
            .or(settings.client_metadata_url.as_deref())
            .unwrap_or("");
        let key = TokenKey::new(resource, issuer, client);
        match &settings.principal {
            Some(principal) => key.for_principal(principal.as_str()),
            None => key,
        }
    }

    /// This authorization's token on any tower HTTP client, for requests
    /// to `server`'s origin (see [`BearerLayer`]). The connector puts it
    /// on its own client itself; the token it carries is the one this
    /// authorization holds, so a client of the application's that shares
    /// an authorization with a connection sends what that connection got.
    pub fn bearer_layer(&self, server: &url::Url) -> BearerLayer {
        BearerLayer::new(bearer::BearerCredentials::new(
            server,
            Arc::clone(&self.state),
            self.settings.dpop.clone(),
        ))
    }

    /// Whether a refusal is one the authorization stage can answer: 401
    /// (unless it refused a DPoP nonce the bearer layer already sent once:
    /// the token is not what it refused), or 403 asking for more scope.
    pub(crate) fn can_answer(&self, status: Option<u16>) -> bool {
        match status {
            Some(401) => !self.state.refused_dpop_nonce(),
            Some(403) => self.state.wants_more_scope(),
            _ => false,
        }
    }

    /// Runs the authorization stage for the server at `server`.
    pub(crate) async fn run(
        &self,
        server: &url::Url,
        client: crate::transport::HttpClient,
        request_limit: Duration,
        pause: Option<&mcp_connect_layers::deadline::DeadlinePause>,
        allow_new: bool,
    ) -> Result<Authorized, AuthError> {
        let http = http::AuthHttp {
            client,
            timeout: request_limit,
        };
        flow::authorize(self, server, http, pause, allow_new).await
    }

    /// Refreshes the tokens in force for `server` when they are about to
    /// expire ([`REFRESH_AHEAD`]); sends nothing otherwise.
    pub(crate) async fn refresh_ahead(
        &self,
        server: &url::Url,
        client: crate::transport::HttpClient,
        request_limit: Duration,
    ) -> Result<(), AuthError> {
        let http = http::AuthHttp {
            client,
            timeout: request_limit,
        };
        flow::refresh_ahead(self, server, http).await
    }
}

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match self.settings.grant {
            Grant::Code(_) => "authorization_code",
            Grant::ClientCredentials => "client_credentials",
            Grant::WorkloadIdentity(_) => "workload_identity",
            Grant::EnterpriseManaged(..) => "enterprise_managed",
            Grant::TokenExchange(_) => "token_exchange",
        };
        f.debug_struct("Authorization")
            .field("grant", &grant)
            .field("client_id", &self.settings.client_id.is_some())
            .field("client_secret", &self.settings.client_secret.is_some())
            .field("dpop", &self.settings.dpop.is_some())
            .finish_non_exhaustive()
    }
}

/// What the `WWW-Authenticate` parser keeps of a header (for the fuzz
/// targets): the `resource_metadata`, `scope` and `error` parameters.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn fuzz_challenge(header: &str) -> Option<[Option<String>; 3]> {
    challenge::Challenge::parse(header).map(|c| [c.resource_metadata, c.scope, c.error])
}
