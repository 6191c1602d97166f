//! One Redis connection as the fleet's stores use it: opened lazily, every
//! operation bounded, keys under the application's prefix, values sealed.

use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::aio::MultiplexedConnection;
use sha2::{Digest as _, Sha256};

pub(super) use crate::transport::redact::hex;

use super::seal::SealingKey;
use crate::store::StoreError;

/// What the sealing check holds, sealed.
const SEALING_CHECK: &[u8] = b"mcp-connect sealing check";

/// How long one Redis operation may take by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);

pub(super) struct Connection {
    endpoint: Endpoint,
    /// The connection in use and its generation (which connect made it):
    /// locked only to take a handle or to replace a broken one, so
    /// operations run side by side on the one multiplexed connection.
    connection: tokio::sync::Mutex<Option<(u64, MultiplexedConnection)>>,
    connects: std::sync::atomic::AtomicU64,
    prefix: String,
    sealing: Option<SealingKey>,
    pub(super) timeout: Duration,
}

/// Where Redis is and how to reach it.
enum Endpoint {
    /// `redis://`: the redis crate connects.
    Plain(redis::Client),
    /// `rediss://`: this crate connects, with the same rustls settings
    /// (provider, roots, extra CAs) as its HTTP client, and hands the
    /// stream to the redis crate. The redis crate's own TLS features build
    /// a config of their own (the platform's roots or Mozilla's, not both,
    /// no extra CA beside them, a process-wide crypto provider).
    #[cfg(feature = "rustls")]
    Tls {
        host: String,
        port: u16,
        login: redis::RedisConnectionInfo,
        tls: crate::transport::tls_config::TlsSettings,
    },
}

impl Connection {
    pub(super) fn open(
        url: &str,
        prefix: String,
        sealing: Option<SealingKey>,
    ) -> Result<Self, StoreError> {
        Ok(Connection {
            endpoint: Endpoint::parse(url)?,
            connection: tokio::sync::Mutex::new(None),
            connects: std::sync::atomic::AtomicU64::new(0),
            prefix,
            sealing,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// Also trusts the CAs in `pem` for `rediss://` (beside the default
    /// roots, as the HTTP client's option of the same name).
    #[cfg(feature = "rustls")]
    pub(super) fn add_root_certificates_pem(
        &mut self,
        pem: &[u8],
    ) -> Result<(), crate::transport::TlsConfigError> {
        match &mut self.endpoint {
            Endpoint::Tls { tls, .. } => tls.add_roots(pem, false),
            // A plain connection has no use for them; they are checked all
            // the same, so a bad file is found where it is given.
            Endpoint::Plain(_) => {
                crate::transport::tls_config::TlsSettings::default().add_roots(pem, false)
            }
        }
    }

    /// `PREFIX:KIND:SHA256(name)`: no name (a URL, a resource) in clear.
    pub(super) fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{}", self.prefix, hex(&Sha256::digest(name)))
    }

    /// `PREFIX:KIND:H1:H2:...`: one hashed segment (128 bits of SHA-256)
    /// per part, outermost first, so keys group by their leading parts
    /// (`SCAN PREFIX:tokens:H1:*` lists one issuer's) and name nothing in
    /// clear.
    pub(super) fn key_of(&self, kind: &str, parts: &[&str]) -> String {
        let mut key = format!("{}:{kind}", self.prefix);
        for part in parts {
            key.push(':');
            key.push_str(&hex(&Sha256::digest(part)[..16]));
        }
        key
    }

    /// Runs `operation` on the shared connection within the timeout,
    /// connecting first when there is none yet. A connection that broke
    /// (Redis restarted, the socket dropped) is replaced and the operation
    /// run once more on the new one, within the same bound: the first
    /// operation after a restart would otherwise fail for nothing.
    pub(super) async fn run<T, F>(&self, operation: F) -> Result<T, StoreError>
    where
        F: for<'c> Fn(&'c mut MultiplexedConnection) -> BoxFuture<'c, redis::RedisResult<T>>,
    {
        let work = async {
            for fresh in [false, true] {
                let (generation, mut connection) = self.connection_in_use().await?;
                match operation(&mut connection).await {
                    Err(e) if !fresh && (e.is_io_error() || e.is_connection_dropped()) => {
                        // Replaced, unless another operation already has.
                        let mut held = self.connection.lock().await;
                        if held.as_ref().is_some_and(|(g, _)| *g == generation) {
                            *held = None;
                        }
                    }
                    Err(e) if refuses_configuration(&e) => {
                        return Err(StoreError::configuration(e))
                    }
                    outcome => return outcome.map_err(StoreError::new),
                }
            }
            unreachable!("the second pass returns")
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(elapsed) => Err(StoreError::new(elapsed)),
        }
    }

    /// Connects (logging in, checking the sealing key) and pings: a store
    /// that cannot work as configured says so here, before anything needs
    /// it.
    pub(super) async fn check(&self) -> Result<(), StoreError> {
        let _: String = self.query(redis::cmd("PING")).await?;
        Ok(())
    }

    /// A handle on the connection in use, connecting first when there is
    /// none (under the lock, so concurrent operations share one connect).
    /// A refusal (a wrong password, an unknown user, a bad database, a
    /// certificate TLS does not trust, a sealing key the fleet does not
    /// use) is a configuration error; a broken connection is replaced by
    /// `run`.
    async fn connection_in_use(&self) -> Result<(u64, MultiplexedConnection), StoreError> {
        let mut held = self.connection.lock().await;
        if let Some(in_use) = held.as_ref() {
            return Ok(in_use.clone());
        }
        let generation = self
            .connects
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut connection = self.endpoint.connect().await?;
        self.check_sealing_key(&mut connection).await?;
        *held = Some((generation, connection.clone()));
        Ok((generation, connection))
    }

    /// The first replica to connect under this prefix leaves a value
    /// sealed with its key; every later connection must open it. A
    /// replica given another key would otherwise read every entry as
    /// garbage and write entries the others cannot read: one round trip per
    /// connect finds it at once.
    async fn check_sealing_key(
        &self,
        connection: &mut MultiplexedConnection,
    ) -> Result<(), StoreError> {
        if self.sealing.is_none() {
            return Ok(());
        }
        let place = format!("{}:sealing-check", self.prefix);
        let (held,): (Option<Vec<u8>>,) = redis::pipe()
            .cmd("SET")
            .arg(&place)
            .arg(self.seal(&place, SEALING_CHECK))
            .arg("NX")
            .ignore()
            .cmd("GET")
            .arg(&place)
            .query_async(connection)
            .await
            .map_err(|e| match refuses_configuration(&e) {
                true => StoreError::configuration(e),
                false => StoreError::new(e),
            })?;
        let Some(held) = held else {
            return Ok(()); // Evicted just now: nothing to compare with.
        };
        match self.unseal(&place, &held) {
            Ok(opened) if opened == SEALING_CHECK => Ok(()),
            _ => Err(StoreError::configuration(
                StoreConfigError::AnotherSealingKey,
            )),
        }
    }

    /// One command.
    pub(super) async fn query<T: redis::FromRedisValue + Send>(
        &self,
        command: redis::Cmd,
    ) -> Result<T, StoreError> {
        self.run(move |c| {
            let command = command.clone();
            Box::pin(async move { command.query_async(c).await })
        })
        .await
    }

    /// A Lua script on one key, with its arguments.
    pub(super) async fn script<T: redis::FromRedisValue + Send>(
        &self,
        source: &'static str,
        key: &str,
        args: &[&[u8]],
    ) -> Result<T, StoreError> {
        let script = redis::Script::new(source);
        let key = key.to_owned();
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        self.run(move |c| {
            let (script, key, args) = (script.clone(), key.clone(), args.clone());
            Box::pin(async move {
                let mut invocation = script.key(key);
                for arg in &args {
                    invocation.arg(arg.as_slice());
                }
                invocation.invoke_async(c).await
            })
        })
        .await
    }

    /// The JSON value sealed at `place`, if any: the one read every
    /// plain-value store here does.
    pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        place: &str,
    ) -> Result<Option<T>, StoreError> {
        let value: Option<Vec<u8>> = self.query(redis::cmd("GET").arg(place).clone()).await?;
        value
            .map(|v| serde_json::from_slice(&self.unseal(place, &v)?).map_err(StoreError::new))
            .transpose()
    }

    /// Seals `value` as JSON at `place`, expiring at `expires_ms` (Unix
    /// milliseconds) when given.
    pub(super) async fn set_json<T: serde::Serialize>(
        &self,
        place: &str,
        value: &T,
        expires_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_vec(value).map_err(StoreError::new)?;
        let mut set = redis::cmd("SET");
        set.arg(place).arg(self.seal(place, &json));
        if let Some(at) = expires_ms {
            set.arg("PXAT").arg(at);
        }
        self.query(set).await
    }

    /// `plaintext` as it is kept at `place`.
    pub(super) fn seal(&self, place: &str, plaintext: &[u8]) -> Vec<u8> {
        match &self.sealing {
            Some(key) => key.seal(place.as_bytes(), plaintext),
            None => plaintext.to_vec(),
        }
    }

    /// What `value`, kept at `place`, holds.
    pub(super) fn unseal(&self, place: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
        match &self.sealing {
            Some(key) => key.open(place.as_bytes(), value).map_err(StoreError::new),
            None => Ok(value.to_vec()),
        }
    }
}

/// `at` in Unix milliseconds (0 before the epoch), as Redis expiries and
/// the token writes' `ts` count time.
pub(super) fn unix_ms(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Endpoint {
    fn parse(url: &str) -> Result<Self, StoreError> {
        let scheme_end = url.find("://").unwrap_or(0);
        if !url[..scheme_end].eq_ignore_ascii_case("rediss") {
            return redis::Client::open(url)
                .map(Endpoint::Plain)
                .map_err(StoreError::configuration);
        }
        Self::tls(&url[scheme_end..])
    }

    /// `rediss` and `rest` (`://…`): the redis crate reads the rest as a
    /// `redis://` URL (login, database), this crate connects.
    #[cfg(feature = "rustls")]
    fn tls(rest: &str) -> Result<Self, StoreError> {
        use redis::IntoConnectionInfo as _;
        let info = format!("redis{rest}")
            .as_str()
            .into_connection_info()
            .map_err(StoreError::configuration)?;
        let redis::ConnectionAddr::Tcp(host, port) = info.addr else {
            unreachable!("a redis:// URL is a TCP address")
        };
        Ok(Endpoint::Tls {
            host,
            port,
            login: info.redis,
            tls: Default::default(),
        })
    }

    #[cfg(not(feature = "rustls"))]
    fn tls(_: &str) -> Result<Self, StoreError> {
        Err(StoreError::configuration(StoreConfigError::TlsNotBuilt))
    }

    /// A new connection, logged in; a failure that is Redis's or TLS's
    /// answer (not the network's) is a configuration error.
    async fn connect(&self) -> Result<MultiplexedConnection, StoreError> {
        let config = redis::AsyncConnectionConfig::new();
        let connected = match self {
            Endpoint::Plain(client) => {
                client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
            }
            #[cfg(feature = "rustls")]
            Endpoint::Tls {
                host,
                port,
                login,
                tls,
            } => {
                let stream = tls_stream(host, *port, tls).await?;
                MultiplexedConnection::new_with_config(login, stream, config)
                    .await
                    .map(|(connection, driver)| {
                        tokio::spawn(driver);
                        connection
                    })
            }
        };
        connected.map_err(|e| {
            if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
                StoreError::new(e)
            } else {
                StoreError::configuration(e)
            }
        })
    }
}

/// Whether Redis refused what this store was configured with (its login,
/// or a command its ACL denies): errors Redis names with these codes.
fn refuses_configuration(error: &redis::RedisError) -> bool {
    error.kind() == redis::ErrorKind::AuthenticationFailed
        || matches!(error.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"))
}

/// A TLS stream to `host:port` under `tls`, its refusal typed as the HTTP
/// client's is: a configuration error holding a
/// [`TlsError`](crate::transport::TlsError) with what rustls said, so
/// [`tls_problem`](crate::transport::tls_problem) reads it. The network
/// failing is an outage like any other.
#[cfg(feature = "rustls")]
async fn tls_stream(
    host: &str,
    port: u16,
    tls: &crate::transport::tls_config::TlsSettings,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, StoreError> {
    let tcp = tokio::net::TcpStream::connect((host, port)).await?;
    tcp.set_nodelay(true)?;
    let name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']).to_owned())
        .map_err(StoreError::configuration)?;
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(tls.client_config()));
    connector.connect(name, tcp).await.map_err(|e| {
        // io::Error hides what it wraps from `source()`: unwrap it.
        if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) {
            let said = e.into_inner().expect("checked");
            StoreError::configuration(crate::transport::TlsError(said))
        } else {
            StoreError::new(e)
        }
    })
}

/// A store that cannot work as configured, whatever Redis does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreConfigError {
    /// A `rediss://` URL in a build without the `rustls` feature.
    #[error("rediss:// needs the rustls feature")]
    TlsNotBuilt,
    /// The sealing key opens nothing the replicas under this prefix wrote
    /// with theirs (another key; rotating one takes another prefix).
    #[error("the sealing key is not the one the other replicas use under this prefix")]
    AnotherSealingKey,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("prefix", &self.prefix)
            .field("sealed", &self.sealing.is_some())
            .finish_non_exhaustive()
    }
}
