//! The group's meta-tools (`search_tools`, `describe_tool`, `call_tool`)
//! served: a search or a description is answered here, from the
//! catalogue, without a member; `call_tool` becomes the `tools/call` of
//! the tool it names and goes the way every call goes (the member's own
//! client, its rounds, progress and cancellation), so a lazy member is
//! connected only when one of its tools is called.

use mcp_connect::group::{is_meta_tool, DiscoveryCall, ServerGroup};
use mcp_connect::protocol::{codes, RequestKind};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::reply::RpcFailure;

/// The answer to a call of a meta-tool the group answers itself; `None`
/// for any other request, `params` rewritten when it was `call_tool`.
pub(crate) fn answered(
    group: &ServerGroup,
    kind: RequestKind,
    params: &mut Option<Value>,
) -> Option<Result<Box<RawValue>, RpcFailure>> {
    if kind != RequestKind::CallTool {
        return None;
    }
    let params = params.as_mut()?;
    let name = params.get("name")?.as_str()?;
    // Every other call pays one compare, not a look at the catalogue.
    if !is_meta_tool(name) {
        return None;
    }
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    match group.shown_tools().call(name, &arguments)? {
        DiscoveryCall::Answered(result) => {
            Some(serde_json::value::to_raw_value(&result).map_err(|_| {
                RpcFailure::new(codes::INTERNAL_ERROR, "the answer could not be written")
            }))
        }
        DiscoveryCall::Call { name, arguments } => {
            params["name"] = Value::String(name);
            params["arguments"] = arguments;
            None
        }
        _ => Some(Err(RpcFailure::new(
            codes::INTERNAL_ERROR,
            "an unknown discovery call",
        ))),
    }
}
