//! What the default client trusts and presents over TLS: the default roots
//! (Mozilla's; with `native-roots` the platform's too), extra roots from
//! PEM (a private CA) added to them or replacing them, and a client
//! certificate for mutual TLS. Built into one rustls `ClientConfig` when
//! the settings change, so a bad certificate or key is an error where it
//! is given, never later. ALPN offers `h2` and `http/1.1` (hyper-rustls
//! sets it); the server chooses.

use std::fmt;
use std::sync::{Arc, OnceLock};

use rustls::client::ResolvesClientCert;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

/// A PEM input the TLS settings could not use. Never shows the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// The PEM holds no certificate.
    #[error("no certificate in the PEM input")]
    NoCertificate,
    /// A certificate block is not valid PEM or DER, or is not one a root
    /// store accepts.
    #[error("a certificate in the PEM input cannot be used")]
    BadCertificate,
    /// The key PEM holds no private key (PKCS #8, PKCS #1 or SEC1).
    #[error("no private key in the PEM input")]
    NoKey,
    /// The client certificate's public key is not the private key's.
    #[error("the client certificate and key cannot be used together")]
    ClientIdentity,
    /// The private key is of a kind TLS cannot sign with here (ring's RSA,
    /// ECDSA P-256/P-384 and Ed25519 keys can).
    #[error("the private key is of a kind that cannot sign a TLS handshake")]
    UnsupportedKey,
}

/// The default client's TLS settings.
#[derive(Clone, Default)]
pub(crate) struct TlsSettings {
    extra_roots: Vec<CertificateDer<'static>>,
    only_extra: bool,
    identity: Option<Arc<CertifiedKey>>,
    /// The settings, built; `None` until one is changed (the defaults).
    built: Option<Arc<rustls::ClientConfig>>,
}

impl TlsSettings {
    pub(crate) fn add_roots(&mut self, pem: &[u8], replace: bool) -> Result<(), TlsConfigError> {
        let certificates = certificates(pem)?;
        if replace && !self.only_extra {
            self.extra_roots.clear();
        }
        self.only_extra |= replace;
        self.extra_roots.extend(certificates);
        self.rebuild()
    }

    pub(crate) fn set_identity(&mut self, chain: &[u8], key: &[u8]) -> Result<(), TlsConfigError> {
        let chain = certificates(chain)?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|_| TlsConfigError::NoKey)?;
        self.identity = Some(Arc::new(client_identity(chain, key)?));
        self.rebuild()
    }

    fn rebuild(&mut self) -> Result<(), TlsConfigError> {
        let mut roots = if self.only_extra {
            rustls::RootCertStore::empty()
        } else {
            default_roots()
        };
        for root in &self.extra_roots {
            roots
                .add(root.clone())
                .map_err(|_| TlsConfigError::BadCertificate)?;
        }
        let config = match &self.identity {
            Some(identity) => with_roots(roots)
                .with_client_cert_resolver(Arc::new(Presents(Arc::clone(identity)))),
            None => with_roots(roots).with_no_client_auth(),
        };
        self.built = Some(Arc::new(config));
        Ok(())
    }

    /// These settings as a rustls client config, with no ALPN: what a
    /// `rediss://` connection uses as it is.
    pub(crate) fn client_config(&self) -> rustls::ClientConfig {
        match &self.built {
            Some(config) => rustls::ClientConfig::clone(config),
            None => with_roots(default_roots()).with_no_client_auth(),
        }
    }

    /// The HTTPS connector builder for these settings.
    pub(crate) fn connector(
        &self,
    ) -> hyper_rustls::HttpsConnectorBuilder<hyper_rustls::builderstates::WantsSchemes> {
        let mut config = self.client_config();
        // So a refusal after the handshake can be told (tls_alerts.rs).
        config.client_auth_cert_resolver = Arc::new(super::tls_alerts::Noting(Arc::clone(
            &config.client_auth_cert_resolver,
        )));
        hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
    }
}

/// The client certificate `chain` (leaf first) signing with `key`.
///
/// rustls's own `with_client_auth_cert` parses the leaf with webpki to
/// check that it holds the key's public half, and webpki parses only X.509
/// v3: a v1 certificate (what `openssl x509 -req` without extensions makes,
/// and what servers such as OpenSSL's accept) was refused as a key that
/// does not match. Here a leaf webpki cannot read is presented as it is
/// (the server decides); a leaf it can read must hold the key.
fn client_identity(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<CertifiedKey, TlsConfigError> {
    let signing = provider()
        .key_provider
        .load_private_key(key)
        .map_err(|_| TlsConfigError::UnsupportedKey)?;
    let identity = CertifiedKey::new(chain, signing);
    match identity.keys_match() {
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(TlsConfigError::ClientIdentity)
        }
        // Matching, or not checkable (a v1 leaf; a key that cannot tell its
        // public half).
        _ => Ok(identity),
    }
}

/// Presents one certificate to every server that asks, when it can sign
/// with a scheme the server accepts (what rustls's own resolver does).
#[derive(Debug)]
struct Presents(Arc<CertifiedKey>);

impl ResolvesClientCert for Presents {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        schemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.0
            .key
            .choose_scheme(schemes)
            .is_some()
            .then(|| Arc::clone(&self.0))
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// ring, named explicitly so that another crate enabling a second rustls
/// provider cannot make the choice ambiguous.
///
/// rustls 0.23.48 marks ring's provider deprecated because ring has no
/// post-quantum key exchange; aws-lc-rs has, at the price of a C and
/// assembly build (cmake on some targets) in every user's build. This
/// crate stays on ring, chosen here on purpose; an application that wants
/// post-quantum key exchange gives its own client
/// ([`HttpClient::new`](crate::transport::HttpClient::new)) built on
/// the provider it chooses.
#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    static RING: OnceLock<Arc<rustls::crypto::CryptoProvider>> = OnceLock::new();
    Arc::clone(RING.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider())))
}

/// A config builder over `roots`, with ring.
fn with_roots(
    roots: rustls::RootCertStore,
) -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert> {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| TlsConfigError::BadCertificate)?;
    if certificates.is_empty() {
        return Err(TlsConfigError::NoCertificate);
    }
    Ok(certificates)
}

/// Mozilla's roots; with `native-roots` the platform's store too (where a
/// corporate CA lives; `SSL_CERT_FILE` and `SSL_CERT_DIR` replace it, as
/// with OpenSSL and curl). Certificates the platform store holds but rustls
/// cannot parse are skipped. Loaded once per process, when the first
/// client is built: reading the platform store takes milliseconds, and a
/// service builds a client per server.
fn default_roots() -> rustls::RootCertStore {
    static ROOTS: OnceLock<rustls::RootCertStore> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            #[cfg(feature = "native-roots")]
            {
                let native = rustls_native_certs::load_native_certs();
                let (added, _unparsable) = roots.add_parsable_certificates(native.certs);
                tracing::debug!(added, "platform root certificates loaded");
            }
            roots
        })
        .clone()
}

/// Counts only: certificates and keys are never shown.
impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("extra_roots", &self.extra_roots.len())
            .field("only_extra", &self.only_extra)
            .field("client_certificate", &self.identity.is_some())
            .finish()
    }
}
