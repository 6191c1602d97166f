//! A loopback TLS fixture: a private CA made at run time (rcgen), a server
//! certificate for `localhost` and `127.0.0.1`, a client certificate, and
//! the demo server (both eras) over HTTPS, HTTP/1.1 or HTTP/2 by ALPN.
//!
//! Nothing here is a secret worth keeping: the keys live as long as the
//! fixture. They are still never printed (`Debug` shows none of them).

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;

use crate::demo::DemoServer;

/// A private CA and the certificates it issued.
pub struct TlsFixture {
    ca: CertifiedIssuer<'static, KeyPair>,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: Vec<u8>,
    client_pem: String,
    client_key_pem: String,
}

/// How a [`TlsFixture`] server behaves.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsServe {
    require_client_certificate: bool,
    http1_only: bool,
    tls12_only: bool,
    expired: bool,
}

impl TlsServe {
    /// Refuses clients without a certificate from the fixture's CA.
    #[must_use]
    pub fn requiring_client_certificate(mut self) -> Self {
        self.require_client_certificate = true;
        self
    }

    /// Speaks only TLS 1.2 (by default 1.2 and 1.3), where a refused client
    /// certificate fails the handshake itself rather than the first read.
    #[must_use]
    pub fn tls12_only(mut self) -> Self {
        self.tls12_only = true;
        self
    }

    /// Presents a server certificate from the fixture's CA that expired in
    /// 2001 (names and key usage as the good one).
    #[must_use]
    pub fn with_expired_certificate(mut self) -> Self {
        self.expired = true;
        self
    }

    /// Offers only HTTP/1.1 by ALPN (by default `h2` and `http/1.1`).
    #[must_use]
    pub fn http1_only(mut self) -> Self {
        self.http1_only = true;
        self
    }
}

/// The demo server over TLS, with what its handshakes negotiated.
pub struct TlsServer {
    server: DemoServer,
    handshakes: Arc<AtomicU64>,
    alpn: Arc<Mutex<Vec<Option<Vec<u8>>>>>,
}

impl TlsFixture {
    /// A new CA, a server certificate for `localhost` and `127.0.0.1`, and
    /// a client certificate, all signed by the CA.
    pub fn new() -> Self {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("no names to check");
        ca.distinguished_name
            .push(DnType::CommonName, "mcp-connect testkit CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("a key"))
            .expect("a CA certificate");

        let server_key = KeyPair::generate().expect("a key");
        let server_cert = server_params()
            .signed_by(&server_key, &ca)
            .expect("a server certificate");

        let mut client = CertificateParams::new(Vec::<String>::new()).expect("no names");
        client
            .distinguished_name
            .push(DnType::CommonName, "mcp-connect testkit client");
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate().expect("a key");
        let client_cert = client
            .signed_by(&client_key, &ca)
            .expect("a client certificate");

        TlsFixture {
            server_chain: vec![server_cert.der().clone(), ca.der().clone()],
            server_key: server_key.serialize_der(),
            client_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
            ca,
        }
    }

    /// The CA certificate, PEM: what a client must trust.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// The client certificate, PEM.
    pub fn client_certificate_pem(&self) -> &str {
        &self.client_pem
    }

    /// The client certificate's private key, PEM (PKCS #8).
    pub fn client_key_pem(&self) -> &str {
        &self.client_key_pem
    }

    /// The server side's TLS settings for `options` (ring, as the client's:
    /// see `transport::tls_config`'s provider).
    #[allow(deprecated)]
    fn server_config(&self, options: &TlsServe) -> rustls::ServerConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: &[&rustls::SupportedProtocolVersion] = if options.tls12_only {
            &[&rustls::version::TLS12]
        } else {
            rustls::DEFAULT_VERSIONS
        };
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(versions)
            .expect("ring supports TLS 1.2 and 1.3");
        let builder = if options.require_client_certificate {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(self.ca.der().clone()).expect("the CA parses");
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("a client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let (chain, key) = if options.expired {
            let mut params = server_params();
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
            let key = KeyPair::generate().expect("a key");
            let cert = params.signed_by(&key, &self.ca).expect("a certificate");
            (
                vec![cert.der().clone(), self.ca.der().clone()],
                key.serialize_der(),
            )
        } else {
            (self.server_chain.clone(), self.server_key.clone())
        };
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key));
        let mut config = builder
            .with_single_cert(chain, key)
            .expect("the server certificate and key match");
        config.alpn_protocols = if options.http1_only {
            vec![b"http/1.1".to_vec()]
        } else {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        };
        config
    }

    /// Starts the demo server over TLS on `127.0.0.1`, an ephemeral port.
    pub async fn serve(&self, options: TlsServe) -> std::io::Result<TlsServer> {
        let config = self.server_config(&options);
        let handshakes = Arc::new(AtomicU64::new(0));
        let alpn = Arc::new(Mutex::new(Vec::new()));
        let on_handshake = {
            let (handshakes, alpn) = (Arc::clone(&handshakes), Arc::clone(&alpn));
            Arc::new(move |protocol: Option<&[u8]>| {
                handshakes.fetch_add(1, Ordering::Relaxed);
                alpn.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(protocol.map(<[u8]>::to_vec));
            })
        };
        let server = crate::demo::start_tls(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            on_handshake,
        )
        .await?;
        Ok(TlsServer {
            server,
            handshakes,
            alpn,
        })
    }
}

impl TlsFixture {
    /// TLS in front of another loopback server: each connection's
    /// handshake here, then its bytes relayed to `upstream` as they are
    /// (HTTP/1.1 only, since the upstream's protocol is not known). Puts
    /// any testkit server, the legacy SSE one say, behind HTTPS.
    pub async fn front(
        &self,
        upstream: SocketAddr,
        options: TlsServe,
    ) -> std::io::Result<TlsFront> {
        let acceptor =
            tokio_rustls::TlsAcceptor::from(Arc::new(self.server_config(&options.http1_only())));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let handshakes = Arc::new(AtomicU64::new(0));
        let stopped = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn({
            let (handshakes, stopped) = (Arc::clone(&handshakes), stopped.clone());
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (acceptor, handshakes, stopped) =
                        (acceptor.clone(), Arc::clone(&handshakes), stopped.clone());
                    tokio::spawn(async move {
                        // Small records go out at once, as the demo
                        // server's do: no Nagle stall in a relay.
                        let _ = stream.set_nodelay(true);
                        let Ok(mut tls) = acceptor.accept(stream).await else {
                            return;
                        };
                        handshakes.fetch_add(1, Ordering::Relaxed);
                        let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await else {
                            return;
                        };
                        let _ = plain.set_nodelay(true);
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut tls, &mut plain) => {}
                            () = stopped.cancelled() => {}
                        }
                    });
                }
            }
        });
        Ok(TlsFront {
            addr,
            handshakes,
            task,
            stopped,
        })
    }
}

/// TLS in front of another server ([`TlsFixture::front`]). Dropping it
/// closes its port and every connection through it.
pub struct TlsFront {
    addr: SocketAddr,
    handshakes: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
    stopped: tokio_util::sync::CancellationToken,
}

impl TlsFront {
    /// Where it listens (127.0.0.1, an ephemeral port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT{path}`.
    pub fn url_for(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Handshakes that completed.
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::Relaxed)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
        self.stopped.cancel();
    }
}

impl fmt::Debug for TlsFront {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsFront")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// The server certificate's names (`localhost`, 127.0.0.1) and usage.
fn server_params() -> CertificateParams {
    let mut server = CertificateParams::new(vec!["localhost".to_owned()]).expect("a name");
    server
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    server
}

impl Default for TlsFixture {
    fn default() -> Self {
        Self::new()
    }
}

impl TlsServer {
    /// `https://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("https://{}/mcp", self.server.addr())
    }

    /// `https://localhost:PORT/mcp` (the certificate's DNS name).
    pub fn localhost_url(&self) -> String {
        format!("https://localhost:{}/mcp", self.server.addr().port())
    }

    /// Handshakes that completed.
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::Relaxed)
    }

    /// The ALPN protocol of each completed handshake, in order.
    pub fn negotiated(&self) -> Vec<Option<Vec<u8>>> {
        self.alpn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// MCP requests served.
    pub fn requests(&self) -> u64 {
        self.server.requests()
    }

    /// Whether any request carried the header `name`
    /// ([`DemoServer::saw_header`]).
    pub fn saw_header(&self, name: &str) -> bool {
        self.server.saw_header(name)
    }
}

impl fmt::Debug for TlsFixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsFixture").finish_non_exhaustive()
    }
}

impl fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsServer")
            .field("addr", &self.server.addr())
            .field("handshakes", &self.handshakes())
            .finish_non_exhaustive()
    }
}
