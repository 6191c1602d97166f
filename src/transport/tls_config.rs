//! What the default client trusts and presents over TLS: the default roots
//! (Mozilla's; with `native-roots` the platform's too), extra roots from
//! PEM (a private CA) added to them or replacing them, and a client
//! certificate for mutual TLS. Built into one rustls `ClientConfig` when
//! the settings change, so a bad certificate or key is an error where it
//! is given, never later. ALPN offers `h2` and `http/1.1` (hyper-rustls
//! sets it); the server chooses.

use std::fmt;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

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
    /// TLS refused the client certificate and key (a key that does not
    /// match, or of a kind it does not support).
    #[error("the client certificate and key cannot be used together")]
    ClientIdentity,
}

/// The default client's TLS settings.
#[derive(Clone, Default)]
pub(crate) struct TlsSettings {
    extra_roots: Vec<CertificateDer<'static>>,
    only_extra: bool,
    identity: Option<Arc<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>>,
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
        self.identity = Some(Arc::new((chain, key)));
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
                .with_client_auth_cert(identity.0.clone(), identity.1.clone_key())
                .map_err(|_| TlsConfigError::ClientIdentity)?,
            None => with_roots(roots).with_no_client_auth(),
        };
        self.built = Some(Arc::new(config));
        Ok(())
    }

    /// The HTTPS connector builder for these settings.
    pub(crate) fn connector(
        &self,
    ) -> hyper_rustls::HttpsConnectorBuilder<hyper_rustls::builderstates::WantsSchemes> {
        let mut config = match &self.built {
            Some(config) => rustls::ClientConfig::clone(config),
            None => with_roots(default_roots()).with_no_client_auth(),
        };
        // So a refusal after the handshake can be told (tls_alerts.rs).
        config.client_auth_cert_resolver = Arc::new(super::tls_alerts::Noting(Arc::clone(
            &config.client_auth_cert_resolver,
        )));
        hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
    }
}

/// A config builder over `roots`. ring is named explicitly so that another
/// crate enabling a second rustls provider cannot make it ambiguous.
fn with_roots(
    roots: rustls::RootCertStore,
) -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert> {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
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
/// corporate CA lives). Certificates the platform store holds but rustls
/// cannot parse are skipped; loading happens when the client is built.
fn default_roots() -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    #[cfg(feature = "native-roots")]
    {
        let native = rustls_native_certs::load_native_certs();
        let (added, _unparsable) = roots.add_parsable_certificates(native.certs);
        tracing::debug!(added, "platform root certificates loaded");
    }
    roots
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
