//! What a modern-era session remembers of each tool's `x-mcp-header`
//! declarations (SEP-2243), so that `tools/call` sends the `Mcp-Param-*`
//! headers the server checks.
//!
//! The declarations come from `tools/list`: a listing records them and
//! leaves out the tools whose declarations are invalid (see
//! [`header_params`](crate::protocol::header_params)); calling such a tool
//! fails before anything is sent. A tool called before any listing has no
//! recorded declarations and goes without headers; if the server answers
//! `HeaderMismatch` the session lists the tools once and sends the call
//! again (the server refused it before running it).
//!
//! Only tools that declare something (or declare it wrongly) are kept, so
//! a server without declarations costs a lookup in an empty map per call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::protocol::header_params::{ExcludedTool, HeaderParamError, HeaderParams};
use crate::protocol::{EncodedRequest, Tool};

type Declared = Result<Arc<HeaderParams>, HeaderParamError>;

#[derive(Default)]
pub(super) struct ToolHeaders {
    tools: Mutex<HashMap<String, Declared>>,
    /// Whether a complete listing was recorded.
    listed: AtomicBool,
}

impl ToolHeaders {
    /// Records the declarations of listed tools and splits off the invalid
    /// ones. `complete` says the listing covered every page: tools it did
    /// not name are forgotten.
    pub(super) fn record(
        &self,
        tools: Vec<Tool>,
        complete: bool,
    ) -> (Vec<Tool>, Vec<ExcludedTool>) {
        let mut kept = Vec::with_capacity(tools.len());
        let mut excluded = Vec::new();
        let mut map = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if complete {
            map.clear();
            self.listed.store(true, Ordering::Relaxed);
        }
        for tool in tools {
            match HeaderParams::from_input_schema(&tool.input_schema) {
                Ok(None) => {
                    map.remove(&tool.name);
                    kept.push(tool);
                }
                Ok(Some(params)) => {
                    map.insert(tool.name.clone(), Ok(Arc::new(params)));
                    kept.push(tool);
                }
                Err(reason) => {
                    // The reason only: tool names are the server's words.
                    tracing::warn!(
                        target: "mcp_connect::tools",
                        reason = %reason,
                        "a tool was left out of the listing"
                    );
                    map.insert(tool.name.clone(), Err(reason));
                    excluded.push(ExcludedTool::new(tool.name, reason));
                }
            }
        }
        (kept, excluded)
    }

    /// Whether a complete listing was recorded.
    pub(super) fn listed(&self) -> bool {
        self.listed.load(Ordering::Relaxed)
    }

    /// The `Mcp-Param-*` pairs for a `tools/call` with these params, or why
    /// the tool must not be called.
    /// Only a tool that declares headers has its arguments read back.
    pub(super) fn for_call(
        &self,
        call: &EncodedRequest,
    ) -> Result<Vec<(String, String)>, HeaderParamError> {
        let Some(name) = call.target() else {
            return Ok(Vec::new());
        };
        let declared = {
            let map = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
            match map.get(name) {
                None => return Ok(Vec::new()),
                Some(declared) => declared.clone(),
            }
        };
        let params_of_tool = declared?;
        let params = call.params_value();
        let arguments = params
            .as_ref()
            .and_then(|p| p.get("arguments"))
            .unwrap_or(&Value::Null);
        Ok(params_of_tool
            .values(arguments)
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect())
    }
}
