//! A JWT access token checked as RFC 9068 and the MCP authorization
//! specification ask: signed by a key of the issuer's set with an
//! asymmetric algorithm (`none` and HMAC never), from that issuer, for
//! this resource, not expired, not yet valid only within the leeway.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{decode, decode_header, Validation};

use super::keys::{KeySet, ALGORITHMS};
use super::{Claims, TokenRefused};

/// What a resource server checks a token against.
pub(crate) struct Expected<'a> {
    pub(crate) issuer: &'a str,
    pub(crate) audience: &'a str,
    pub(crate) leeway: u64,
}

/// The token's claims, once everything about it holds.
pub(crate) async fn verified(
    token: &str,
    keys: &KeySet,
    expected: &Expected<'_>,
) -> Result<Claims, TokenRefused> {
    let header = decode_header(token).map_err(|_| TokenRefused::Malformed)?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(TokenRefused::Algorithm);
    }
    let key = keys.key(header.kid.as_deref()).await?;
    if key.algorithm.is_some_and(|named| named != header.alg) {
        return Err(TokenRefused::Algorithm);
    }
    let mut validation = Validation::new(header.alg);
    validation.leeway = expected.leeway;
    validation.validate_nbf = true;
    validation.set_issuer(&[expected.issuer, &with_slash(expected.issuer)]);
    validation.set_audience(&[expected.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data = decode::<Claims>(token, &key.key, &validation).map_err(|e| refused(e.kind()))?;
    Ok(data.claims)
}

/// An issuer compared with and without its trailing slash, as issuers
/// write it both ways.
fn with_slash(issuer: &str) -> String {
    match issuer.strip_suffix('/') {
        Some(bare) => bare.to_owned(),
        None => format!("{issuer}/"),
    }
}

fn refused(kind: &ErrorKind) -> TokenRefused {
    match kind {
        ErrorKind::ExpiredSignature => TokenRefused::Expired,
        ErrorKind::ImmatureSignature => TokenRefused::NotYetValid,
        ErrorKind::InvalidIssuer => TokenRefused::Issuer,
        ErrorKind::InvalidAudience => TokenRefused::Audience,
        ErrorKind::InvalidSignature => TokenRefused::Signature,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => TokenRefused::Algorithm,
        _ => TokenRefused::Malformed,
    }
}
