//! How the default client's connector fails, typed per layer (the
//! resolver, TCP, TLS), and what TLS refused ([`tls_problem`]): the
//! classifier and the command read these, never a message.

#[cfg(feature = "rustls")]
use super::chain::{chain_find, chain_has};
use super::error::BoxError;
#[cfg(feature = "rustls")]
use super::proxy::ProxyError;

/// The resolver of the default client failed.
#[derive(Debug, thiserror::Error)]
#[error("DNS resolution failed")]
pub struct DnsError(#[source] pub BoxError);

/// The default client could not open a TCP connection.
#[derive(Debug, thiserror::Error)]
#[error("TCP connection failed")]
pub struct TcpConnectError(#[source] pub BoxError);

/// The default client's TLS handshake failed.
#[derive(Debug, thiserror::Error)]
#[error("TLS handshake failed")]
pub struct TlsError(#[source] pub BoxError);

/// What TLS failed on, as rustls said it (see [`tls_problem`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsProblem {
    /// The server's certificate chains to no trusted root (a private CA
    /// that was not added, an interception proxy).
    UnknownIssuer,
    /// The certificate is not for the host that was asked for.
    NameMismatch,
    /// The certificate has expired (or is not valid yet).
    Expired,
    /// The server requires a client certificate and got none it accepts.
    ClientCertificateRequired,
    /// Anything else TLS refused.
    Other,
}

impl TlsProblem {
    /// A stable, lower-case name for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsProblem::UnknownIssuer => "unknown-issuer",
            TlsProblem::NameMismatch => "name-mismatch",
            TlsProblem::Expired => "expired",
            TlsProblem::ClientCertificateRequired => "client-certificate-required",
            TlsProblem::Other => "other",
        }
    }
}

/// What TLS failed on, when `error`'s chain holds a rustls error (a
/// handshake failure, or, with TLS 1.3, the server's refusal of a client
/// certificate, which arrives with the first response).
#[cfg(feature = "rustls")]
pub fn tls_problem(error: &(dyn std::error::Error + 'static)) -> Option<TlsProblem> {
    use rustls::{AlertDescription, CertificateError, Error as Tls};
    chain_find::<rustls::Error>(error)
        .map(|tls| match tls {
            Tls::InvalidCertificate(CertificateError::UnknownIssuer) => TlsProblem::UnknownIssuer,
            Tls::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => TlsProblem::NameMismatch,
            Tls::InvalidCertificate(
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. },
            ) => TlsProblem::Expired,
            Tls::AlertReceived(
                AlertDescription::CertificateRequired | AlertDescription::BadCertificate,
            )
            | Tls::NoCertificatesPresented => TlsProblem::ClientCertificateRequired,
            _ => TlsProblem::Other,
        })
        .or_else(|| {
            chain_has::<super::tls_alerts::ClientCertificateRefused>(error)
                .then_some(TlsProblem::ClientCertificateRequired)
        })
}

pub(super) fn tag_tcp<E: Into<BoxError>>(error: E) -> TcpConnectError {
    TcpConnectError(error.into())
}

/// Everything the HTTPS connector fails with that the resolver, the TCP
/// connector and the proxy connector did not tag is the TLS layer's.
#[cfg(feature = "rustls")]
pub(super) fn tag_tls(error: BoxError) -> BoxError {
    if chain_has::<DnsError>(error.as_ref())
        || chain_has::<TcpConnectError>(error.as_ref())
        || chain_has::<ProxyError>(error.as_ref())
    {
        error
    } else {
        Box::new(TlsError(error))
    }
}
