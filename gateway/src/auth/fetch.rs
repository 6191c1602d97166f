//! The resource server's own HTTP requests: the issuer's metadata, its key
//! set, an introspection. Each has a time bound and a body bound, and goes
//! only to `https://` or loopback.

use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request};
use http_body_util::{BodyExt, Full};
use mcp_connect::transport::HttpBody;
use mcp_connect::transport::HttpClient;
use serde::de::DeserializeOwned;
use tower_service::Service as _;
use url::Url;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Metadata, key sets and introspection answers larger than this are
/// refused.
const BODY_LIMIT: usize = 256 * 1024;

/// Why the issuer could not be asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The URL is neither `https://` nor loopback.
    #[error("not an https:// or loopback URL")]
    Insecure,
    /// No answer within the bound.
    #[error("no answer in time")]
    Timeout,
    /// The request failed before an answer.
    #[error("the request failed")]
    Transport(#[source] BoxError),
    /// An answer other than 200 with a JSON body of the expected shape.
    #[error("the answer was {status}, or not the JSON expected")]
    Answer {
        /// The answer's status.
        status: http::StatusCode,
    },
}

/// The requests, their client and their bound.
#[derive(Clone)]
pub(crate) struct Fetch {
    pub(crate) client: HttpClient,
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for Fetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetch")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Fetch {
    /// `GET url` as JSON.
    pub(crate) async fn get<T: DeserializeOwned>(&self, url: &Url) -> Result<T, FetchError> {
        let request = Request::get(url.as_str())
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()));
        self.send(url, request).await
    }

    /// `POST url` with a form, as JSON; `basic` is the client's
    /// `Authorization` value, when it authenticates.
    pub(crate) async fn post_form<T: DeserializeOwned>(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<&str>,
    ) -> Result<T, FetchError> {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(basic) = basic {
            request = request.header(header::AUTHORIZATION, basic);
        }
        self.send(url, request.body(Full::new(Bytes::from(body))))
            .await
    }

    async fn send<T: DeserializeOwned>(
        &self,
        url: &Url,
        request: Result<Request<Full<Bytes>>, http::Error>,
    ) -> Result<T, FetchError> {
        if !secure(url) {
            return Err(FetchError::Insecure);
        }
        let request = request.map_err(|e| FetchError::Transport(BoxError::from(e)))?;
        let mut client = self.client.clone();
        let exchange = async move {
            let response = match client.call(request).await {
                Ok(response) => response,
                Err(error) => return Err(FetchError::Transport(error)),
            };
            let status = response.status();
            let body = bounded(response.into_body())
                .await
                .ok_or(FetchError::Answer { status })?;
            match status.is_success() {
                true => serde_json::from_slice(&body).map_err(|_| FetchError::Answer { status }),
                false => Err(FetchError::Answer { status }),
            }
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(FetchError::Timeout),
        }
    }
}

/// The whole body, when it is within the bound and arrives whole.
async fn bounded(mut body: HttpBody) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.ok()?.into_data() {
            if bytes.len() + data.len() > BODY_LIMIT {
                return None;
            }
            bytes.extend_from_slice(&data);
        }
    }
    Some(bytes)
}

/// `https://`, or a loopback address or `localhost`, where nothing crosses
/// a network.
pub(crate) fn secure(url: &Url) -> bool {
    if url.scheme() == "https" {
        return true;
    }
    match url.host() {
        Some(url::Host::Ipv4(ip)) => url.scheme() == "http" && ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => url.scheme() == "http" && ip.is_loopback(),
        Some(url::Host::Domain(name)) => url.scheme() == "http" && name == "localhost",
        None => false,
    }
}
