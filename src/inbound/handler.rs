//! The application's answers to server requests: sampling, elicitation and
//! roots, each an async function of the request's params.

use crate::protocol::ServerRequestKind;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::protocol::server_requests::{
    CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitResult, ListRootsRequest,
    ListRootsResult, Root,
};
use crate::protocol::{codes, RpcError};

type Answer = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// Answers what a server asks of this client.
///
/// Each kind is an async function from the request's typed params
/// ([`protocol::server_requests`](crate::protocol::server_requests), every
/// unknown field kept) to its typed result (or a JSON-RPC error); params
/// that do not decode are answered `-32602`. [`on_raw`](Self::on_raw) and
/// [`with_service`](Self::with_service) take raw JSON instead. A kind with no function is not declared in
/// the client's capabilities, and a server that asks anyway gets `-32601`;
/// `ping` is always answered. Panics in a function become `-32603` answers,
/// never a dead session.
///
/// ```
/// use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
/// use mcp_connect::protocol::server_requests::ElicitResult;
///
/// let handler = ClientHandler::new()
///     // Accept every form with the defaults its schema declares.
///     .on_elicitation(|request| async move {
///         Ok(ElicitResult::accept(elicitation_defaults(&request)))
///     })
///     .with_roots(vec![("file:///srv/project".into(), Some("project".into()))]);
/// assert!(handler.capabilities().get("elicitation").is_some());
/// assert!(handler.capabilities().get("sampling").is_none());
/// ```
#[derive(Clone, Default)]
pub struct ClientHandler {
    sampling: Option<Answer>,
    elicitation: Option<Answer>,
    url_elicitation: bool,
    roots: Option<Answer>,
}

fn boxed<F, Fut>(f: F) -> Answer
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
{
    Arc::new(move |params| Box::pin(f(params)))
}

/// A typed answer as a raw one: params that do not decode are `-32602`
/// (invalid params), never a guess.
fn typed<Req, Res, F, Fut>(f: F) -> Answer
where
    Req: DeserializeOwned + Send + 'static,
    Res: Serialize,
    F: Fn(Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Res, RpcError>> + Send + 'static,
{
    let f = Arc::new(f);
    Arc::new(move |params| {
        let decoded = serde_json::from_value::<Req>(params);
        let f = Arc::clone(&f);
        Box::pin(async move {
            let request = decoded
                .map_err(|_| RpcError::new(codes::INVALID_PARAMS, "invalid params", None))?;
            let result = f(request).await?;
            serde_json::to_value(result)
                .map_err(|_| RpcError::new(codes::INTERNAL_ERROR, "internal error", None))
        })
    })
}

impl ClientHandler {
    /// Answers nothing but `ping`.
    pub fn new() -> Self {
        ClientHandler::default()
    }

    /// Answers `sampling/createMessage` (declares `sampling`).
    #[must_use]
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, RpcError>> + Send + 'static,
    {
        self.sampling = Some(typed(f));
        self
    }

    /// Answers `elicitation/create` (declares `elicitation` with the form
    /// mode; see [`with_url_elicitation`](Self::with_url_elicitation)).
    #[must_use]
    pub fn on_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, RpcError>> + Send + 'static,
    {
        self.elicitation = Some(typed(f));
        self
    }

    /// Declares that the elicitation function also handles the URL mode
    /// ([`ElicitRequest::is_url_mode`]: the user is sent to a URL, and the
    /// answer says whether they went).
    #[must_use]
    pub fn with_url_elicitation(mut self) -> Self {
        self.url_elicitation = true;
        self
    }

    /// Answers `roots/list` (declares `roots`).
    #[must_use]
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ListRootsRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, RpcError>> + Send + 'static,
    {
        self.roots = Some(typed(f));
        self
    }

    /// Answers one kind with a function of the raw `params` to the raw
    /// `result`, for code that has JSON types of its own (another SDK's,
    /// say). Declared like its typed equivalent.
    #[must_use]
    pub fn on_raw<F, Fut>(mut self, kind: RequestKind, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        let answer = Some(boxed(f));
        match kind {
            RequestKind::Sampling => self.sampling = answer,
            RequestKind::Elicitation => self.elicitation = answer,
            RequestKind::Roots => self.roots = answer,
        }
        self
    }

    /// Answers one kind with a tower `Service` from the request's params to
    /// its result, so `ServiceBuilder` layers (a timeout, a concurrency
    /// limit, tracing) wrap the application's handler. The kind is declared
    /// in the capabilities like its `on_*` equivalent.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_connect::inbound::{ClientHandler, RequestKind};
    /// use mcp_connect::protocol::RpcError;
    /// use serde_json::{json, Value};
    /// use tower::{service_fn, ServiceBuilder};
    ///
    /// let sampling = ServiceBuilder::new()
    ///     .concurrency_limit(4)
    ///     .service(service_fn(|_params: Value| async {
    ///         Ok::<_, RpcError>(json!({ "role": "assistant", "model": "m",
    ///                                   "content": { "type": "text", "text": "hi" } }))
    ///     }));
    /// let handler = ClientHandler::new().with_service(RequestKind::Sampling, sampling);
    /// assert!(handler.capabilities().get("sampling").is_some());
    /// ```
    #[must_use]
    pub fn with_service<S>(self, kind: RequestKind, service: S) -> Self
    where
        S: tower_service::Service<Value, Response = Value, Error = RpcError>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send,
    {
        let answer = move |params: Value| {
            let service = service.clone();
            async move {
                use tower::ServiceExt as _;
                service.oneshot(params).await
            }
        };
        self.on_raw(kind, answer)
    }

    /// Answers `roots/list` with a fixed list of `(uri, name)` roots.
    #[must_use]
    pub fn with_roots(self, roots: Vec<(String, Option<String>)>) -> Self {
        let listed = roots
            .into_iter()
            .map(|(uri, name)| Root::new(uri, name))
            .collect();
        let result = ListRootsResult::new(listed);
        self.on_roots(move |_| {
            let result = result.clone();
            async move { Ok(result) }
        })
    }

    /// Whether any kind is answered.
    pub fn is_empty(&self) -> bool {
        self.sampling.is_none() && self.elicitation.is_none() && self.roots.is_none()
    }

    /// The capabilities object this handler justifies: only what it answers.
    pub fn capabilities(&self) -> Value {
        let mut capabilities = Map::new();
        if self.sampling.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        if self.elicitation.is_some() {
            let modes = if self.url_elicitation {
                json!({ "form": {}, "url": {} })
            } else {
                json!({ "form": {} })
            };
            capabilities.insert("elicitation".into(), modes);
        }
        if self.roots.is_some() {
            capabilities.insert("roots".into(), json!({ "listChanged": false }));
        }
        Value::Object(capabilities)
    }

    /// The answer to one request.
    pub(crate) fn answer(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let answer = match ServerRequestKind::of(method) {
            ServerRequestKind::Ping => return Box::pin(async { Ok(json!({})) }),
            ServerRequestKind::CreateMessage => self.sampling.as_ref(),
            ServerRequestKind::Elicit => self.elicitation.as_ref(),
            ServerRequestKind::ListRoots => self.roots.as_ref(),
            _ => None,
        };
        match answer {
            Some(answer) => answer(params.unwrap_or(Value::Object(Map::new()))),
            None => Box::pin(async {
                Err(RpcError::new(
                    codes::METHOD_NOT_FOUND,
                    "method not supported by this client",
                    None,
                ))
            }),
        }
    }
}

impl fmt::Debug for ClientHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandler")
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("url_elicitation", &self.url_elicitation)
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

/// The kinds of request a server sends a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestKind {
    /// `sampling/createMessage`.
    Sampling,
    /// `elicitation/create`.
    Elicitation,
    /// `roots/list`.
    Roots,
}

/// The content an elicitation form gets when every field takes the default
/// its `requestedSchema` declares (SEP-1034): a field with no default is left
/// out.
pub fn elicitation_defaults(request: &ElicitRequest) -> Map<String, Value> {
    let mut content = Map::new();
    let properties = request
        .requested_schema
        .as_ref()
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        if let Some(default) = schema.get("default") {
            content.insert(name.clone(), default.clone());
        }
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::methods;

    #[tokio::test]
    async fn a_tower_service_answers_its_kind() {
        let service = tower::service_fn(|params: Value| async move {
            Ok::<_, RpcError>(json!({ "echo": params["x"] }))
        });
        let handler = ClientHandler::new().with_service(RequestKind::Roots, service);
        assert_eq!(
            handler.capabilities(),
            json!({ "roots": { "listChanged": false } })
        );
        let answer = handler
            .answer(methods::ROOTS_LIST, Some(json!({ "x": 1 })))
            .await
            .unwrap();
        assert_eq!(answer, json!({ "echo": 1 }));
    }

    #[test]
    fn defaults_come_from_the_schema() {
        let params = json!({
            "message": "m",
            "requestedSchema": { "type": "object", "properties": {
                "name": { "type": "string", "default": "John Doe" },
                "age": { "type": "integer", "default": 30 },
                "note": { "type": "string" }
            }}
        });
        let request: ElicitRequest = serde_json::from_value(params).unwrap();
        let content = elicitation_defaults(&request);
        assert_eq!(
            Value::Object(content),
            json!({ "name": "John Doe", "age": 30 })
        );
        let bare: ElicitRequest = serde_json::from_value(json!({ "message": "m" })).unwrap();
        assert!(elicitation_defaults(&bare).is_empty());
    }

    #[tokio::test]
    async fn only_what_is_answered_is_declared() {
        let empty = ClientHandler::new();
        assert_eq!(empty.capabilities(), json!({}));
        assert!(empty.answer(methods::PING, None).await.is_ok());
        let missing = empty
            .answer(methods::SAMPLING_CREATE_MESSAGE, None)
            .await
            .unwrap_err();
        assert_eq!(missing.code(), codes::METHOD_NOT_FOUND);
        let roots = ClientHandler::new().with_roots(vec![("file:///a".into(), None)]);
        assert_eq!(
            roots.capabilities(),
            json!({ "roots": { "listChanged": false } })
        );
        let url = ClientHandler::new()
            .on_elicitation(|_| async { Ok(ElicitResult::cancel()) })
            .with_url_elicitation();
        assert_eq!(
            url.capabilities(),
            json!({ "elicitation": { "form": {}, "url": {} } })
        );
        let listed = roots.answer(methods::ROOTS_LIST, None).await.unwrap();
        assert_eq!(listed, json!({ "roots": [{ "uri": "file:///a" }] }));
    }

    #[tokio::test]
    async fn params_that_do_not_decode_are_invalid_params() {
        let handler = ClientHandler::new().on_sampling(|request| async move {
            Ok(CreateMessageResult::text(
                "m",
                format!("{}", request.max_tokens),
            ))
        });
        let refused = handler
            .answer(
                methods::SAMPLING_CREATE_MESSAGE,
                Some(json!({ "messages": 3 })),
            )
            .await
            .unwrap_err();
        assert_eq!(refused.code(), codes::INVALID_PARAMS);
        let answered = handler
            .answer(
                methods::SAMPLING_CREATE_MESSAGE,
                Some(json!({ "messages": [], "maxTokens": 7 })),
            )
            .await
            .unwrap();
        assert_eq!(answered["content"]["text"], "7");
        assert_eq!(answered["model"], "m");
    }
}
