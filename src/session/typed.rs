//! The typed MCP surface of a session: listings across every page, tools,
//! prompts, resources, subscriptions, completion and the logging level.
//!
//! A listing follows `nextCursor` until the server stops sending one,
//! bounded twice: a cursor the server already sent ends it with
//! [`PaginationError::CursorRepeated`] (a loop), and more than
//! [`MAX_PAGES`] pages with [`PaginationError::TooManyPages`]. The
//! `*_page` methods fetch one page from a cursor.

use crate::protocol::methods;
use std::collections::HashSet;

use mcp_connect_layers::Stage;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{RequestOptions, Session};
use crate::error::{Error, ErrorKind, PaginationError};
use crate::protocol::{
    CallToolParams, CallToolResult, Era, GetPromptParams, ListToolsResult, Page, Prompt,
    ReadResourceParams, Resource, ResourceTemplate, Tool,
};

/// The most pages one listing reads.
pub const MAX_PAGES: usize = 1000;

/// One page of any listing, with its items under `key`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPage {
    #[serde(default)]
    next_cursor: Option<String>,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

/// A result that does not have the shape its method promises.
pub(crate) fn shape(error: serde_json::Error) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::Result(error.into()))
}

/// One page of a listing, its items under `key`.
pub(crate) fn parse_page<T: DeserializeOwned>(raw: &RawValue, key: &str) -> Result<Page<T>, Error> {
    let mut page: RawPage = serde_json::from_str(raw.get()).map_err(shape)?;
    let items = match page.rest.remove(key) {
        Some(items) => serde_json::from_value(items).map_err(shape)?,
        None => Vec::new(),
    };
    Ok(Page {
        items,
        next_cursor: page.next_cursor.filter(|c| !c.is_empty()),
    })
}

/// The params of a listing page from `cursor`.
pub(crate) fn page_params(cursor: Option<&str>) -> Option<Value> {
    cursor.map(|cursor| json!({ "cursor": cursor }))
}

/// Every page of a listing, `fetch` getting one from a cursor (bounded
/// twice: a repeated cursor and [`MAX_PAGES`]); `local` makes this
/// function's own errors the caller's type.
pub(crate) async fn collect_pages<T, E, Fut>(
    key: &str,
    mut fetch: impl FnMut(Option<String>) -> Fut,
    local: impl Fn(Error) -> E,
) -> Result<Vec<T>, E>
where
    T: DeserializeOwned,
    Fut: std::future::Future<Output = Result<Box<RawValue>, E>>,
{
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let raw = fetch(cursor.take()).await?;
        let page = parse_page::<T>(&raw, key).map_err(&local)?;
        items.extend(page.items);
        match page.next_cursor {
            None => return Ok(items),
            Some(next) if !seen.insert(next.clone()) => {
                return Err(local(Error::new(
                    Stage::REQUEST,
                    ErrorKind::Pagination(PaginationError::CursorRepeated),
                )))
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(local(Error::new(
        Stage::REQUEST,
        ErrorKind::Pagination(PaginationError::TooManyPages { limit: MAX_PAGES }),
    )))
}

impl Session {
    async fn page<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
        cursor: Option<&str>,
        options: &RequestOptions,
    ) -> Result<Page<T>, Error> {
        let raw = self
            .request_with(method, page_params(cursor), options)
            .await?;
        parse_page(&raw, key)
    }

    pub(super) async fn all_pages<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
        options: &RequestOptions,
    ) -> Result<Vec<T>, Error> {
        collect_pages(
            key,
            |cursor| self.request_with(method, page_params(cursor.as_deref()), options),
            |error| error,
        )
        .await
    }

    /// `tools/list`, every page.
    ///
    /// On the 2026-07-28 era a tool whose `x-mcp-header` declarations are
    /// invalid is left out (it is in [`ListToolsResult::excluded`], and
    /// calling it fails with [`ErrorKind::InvalidTool`]); the valid ones'
    /// declarations are remembered so that calls send their `Mcp-Param-*`
    /// headers.
    ///
    /// With a [response cache](crate::response_cache) on a modern session,
    /// fresh pages come from it.
    pub async fn list_tools(&self) -> Result<ListToolsResult, Error> {
        self.list_tools_with(&RequestOptions::default()).await
    }

    /// [`list_tools`](Self::list_tools) with its own [`RequestOptions`]
    /// (for example [`CacheMode::Refresh`](crate::response_cache::CacheMode)),
    /// for every page.
    pub async fn list_tools_with(
        &self,
        options: &RequestOptions,
    ) -> Result<ListToolsResult, Error> {
        let tools = self
            .all_pages::<Tool>(methods::TOOLS_LIST, "tools", options)
            .await?;
        Ok(self.tools_listed(tools, None, true))
    }

    /// One page of `tools/list`, with the same exclusions as
    /// [`list_tools`](Self::list_tools).
    pub async fn list_tools_page(&self, cursor: Option<&str>) -> Result<ListToolsResult, Error> {
        let options = RequestOptions::default();
        let page = self
            .page::<Tool>(methods::TOOLS_LIST, "tools", cursor, &options)
            .await?;
        Ok(self.tools_listed(page.items, page.next_cursor, false))
    }

    pub(crate) fn tools_listed(
        &self,
        tools: Vec<Tool>,
        next_cursor: Option<String>,
        complete: bool,
    ) -> ListToolsResult {
        let (tools, excluded) = match self.era() {
            Era::Modern => self.tool_headers.record(tools, complete),
            Era::Legacy => (tools, Vec::new()),
        };
        ListToolsResult {
            tools,
            next_cursor,
            extra: Default::default(),
            excluded,
        }
    }

    /// `prompts/list`, every page.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_prompts_with(&RequestOptions::default()).await
    }

    /// [`list_prompts`](Self::list_prompts) with its own [`RequestOptions`].
    pub async fn list_prompts_with(&self, options: &RequestOptions) -> Result<Vec<Prompt>, Error> {
        self.all_pages(methods::PROMPTS_LIST, "prompts", options)
            .await
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts_page(&self, cursor: Option<&str>) -> Result<Page<Prompt>, Error> {
        self.page(
            methods::PROMPTS_LIST,
            "prompts",
            cursor,
            &RequestOptions::default(),
        )
        .await
    }

    /// `resources/list`, every page.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_resources_with(&RequestOptions::default()).await
    }

    /// [`list_resources`](Self::list_resources) with its own
    /// [`RequestOptions`].
    pub async fn list_resources_with(
        &self,
        options: &RequestOptions,
    ) -> Result<Vec<Resource>, Error> {
        self.all_pages(methods::RESOURCES_LIST, "resources", options)
            .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources_page(&self, cursor: Option<&str>) -> Result<Page<Resource>, Error> {
        self.page(
            methods::RESOURCES_LIST,
            "resources",
            cursor,
            &RequestOptions::default(),
        )
        .await
    }

    /// `resources/templates/list`, every page.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_resource_templates_with(&RequestOptions::default())
            .await
    }

    /// [`list_resource_templates`](Self::list_resource_templates) with its
    /// own [`RequestOptions`].
    pub async fn list_resource_templates_with(
        &self,
        options: &RequestOptions,
    ) -> Result<Vec<ResourceTemplate>, Error> {
        self.all_pages(
            methods::RESOURCES_TEMPLATES_LIST,
            "resourceTemplates",
            options,
        )
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<Page<ResourceTemplate>, Error> {
        self.page(
            methods::RESOURCES_TEMPLATES_LIST,
            "resourceTemplates",
            cursor,
            &RequestOptions::default(),
        )
        .await
    }

    /// `tools/call`.
    pub async fn call_tool(&self, name: &str, arguments: &Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, &RequestOptions::default())
            .await
    }

    /// `tools/call` with its own [`RequestOptions`]
    /// (cancellation, timeout, progress).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: &Value,
        options: &RequestOptions,
    ) -> Result<CallToolResult, Error> {
        // A `&str` and a `Value` always serialize to a `Value`.
        let params =
            serde_json::to_value(CallToolParams { name, arguments }).expect("params serialize");
        self.request_as_with(methods::TOOLS_CALL, Some(params), options)
            .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(&self, name: &str, arguments: Option<&Value>) -> Result<Value, Error> {
        // A `&str` and a `Value` always serialize to a `Value`.
        let params =
            serde_json::to_value(GetPromptParams { name, arguments }).expect("params serialize");
        self.request_as(methods::PROMPTS_GET, Some(params)).await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, Error> {
        self.read_resource_with(uri, &RequestOptions::default())
            .await
    }

    /// [`read_resource`](Self::read_resource) with its own
    /// [`RequestOptions`].
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: &RequestOptions,
    ) -> Result<Value, Error> {
        // A `&str` always serializes to a `Value`.
        let params = serde_json::to_value(ReadResourceParams { uri }).expect("params serialize");
        self.request_as_with(methods::RESOURCES_READ, Some(params), options)
            .await
    }

    /// Subscribes to a resource: the server then sends
    /// `notifications/resources/updated` for `uri` to the listener.
    ///
    /// `resources/subscribe` on the legacy era; on the 2026-07-28 era the
    /// session's `subscriptions/listen` again with `uri` added, failing
    /// with [`SubscriptionError::NotAcknowledged`](crate::error::SubscriptionError)
    /// when the server does not take it.
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        match self.era() {
            Era::Modern => self.subscribe_modern(uri).await,
            Era::Legacy => self
                .request(methods::RESOURCES_SUBSCRIBE, Some(json!({ "uri": uri })))
                .await
                .map(drop),
        }
    }

    /// Unsubscribes from a resource (`resources/unsubscribe`, or the
    /// modern era's subscription again without it).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        match self.era() {
            Era::Modern => self.unsubscribe_modern(uri).await,
            Era::Legacy => self
                .request(methods::RESOURCES_UNSUBSCRIBE, Some(json!({ "uri": uri })))
                .await
                .map(drop),
        }
    }

    /// `completion/complete` for `reference` (`{"type": "ref/prompt",
    /// "name": ...}` or `{"type": "ref/resource", "uri": ...}`) and one
    /// argument's partial value; the raw result.
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Value, Error> {
        let params = json!({ "ref": reference, "argument": { "name": argument, "value": value } });
        self.request_as(methods::COMPLETION_COMPLETE, Some(params))
            .await
    }

    /// `logging/setLevel` (`"debug"`, `"info"`, ..., `"emergency"`).
    pub async fn set_logging_level(&self, level: &str) -> Result<(), Error> {
        self.request(methods::LOGGING_SET_LEVEL, Some(json!({ "level": level })))
            .await
            .map(drop)
    }
}
