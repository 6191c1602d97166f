//! Which requests the cache may answer, their keys, and what a result's
//! `ttlMs` and `cacheScope` say.

use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::Value;

use super::CacheScope;

use crate::protocol::{EncodedRequest, RequestKind};
use crate::store::canonical;

/// The key params of a request the cache may answer, or `None` when it
/// may not: another kind than a listing or `resources/read` (whose results
/// carry caching hints; `server/discover` is the era cache's), params that
/// are not an object, or params with a `_meta`, `inputResponses` or
/// `requestState` (the answer would depend on what is not in the key).
pub(crate) fn cacheable(request: &EncodedRequest) -> Option<String> {
    let kind = request.kind();
    if !kind.is_listing() && kind != RequestKind::ReadResource {
        return None;
    }
    canonical(request.params_value().as_ref())
}

/// A result's caching hints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hints {
    /// How long it stays fresh.
    ttl: Duration,
    /// Its scope (private when absent or unknown).
    pub(crate) scope: CacheScope,
}

impl Hints {
    /// The hints of a complete result; `None` for one that must not be
    /// stored (not an object, `input_required`, no positive `ttlMs`).
    pub(crate) fn of(result: &str) -> Option<Hints> {
        #[derive(Deserialize)]
        struct Wire<'a> {
            #[serde(rename = "ttlMs", default)]
            ttl: Option<Value>,
            #[serde(rename = "cacheScope", default, borrow)]
            scope: Option<std::borrow::Cow<'a, str>>,
            #[serde(rename = "resultType", default, borrow)]
            result_type: Option<std::borrow::Cow<'a, str>>,
        }
        // Results are objects (a struct would also take an array).
        if !result.trim_start().starts_with('{') {
            return None;
        }
        let wire: Wire<'_> = serde_json::from_str(result).ok()?;
        if wire.result_type.as_deref().is_some_and(|t| t != "complete") {
            return None;
        }
        let ttl = wire
            .ttl
            .as_ref()
            .and_then(Value::as_u64)
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)?;
        let scope = match wire.scope.as_deref() {
            Some("public") => CacheScope::Public,
            _ => CacheScope::Private,
        };
        Some(Hints { ttl, scope })
    }

    /// When a result received now stops being fresh: `ttlMs` from now, at most
    /// [`MAX_TTL`](super::MAX_TTL) (a server's "ten years" is a day).
    pub(crate) fn expires(&self) -> Option<SystemTime> {
        SystemTime::now().checked_add(self.ttl.min(super::MAX_TTL))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::methods;
    use serde_json::json;

    #[test]
    fn keys_are_canonical_and_exclude_what_is_not_in_them() {
        let raw = |method: &'static str, params: Option<Value>| {
            EncodedRequest::raw(method, params.as_ref())
        };
        assert_eq!(
            cacheable(&raw(methods::TOOLS_LIST, None)).as_deref(),
            Some("{}")
        );
        assert_eq!(
            cacheable(&raw(methods::TOOLS_LIST, Some(json!({})))).as_deref(),
            Some("{}")
        );
        assert_eq!(
            cacheable(&raw(
                methods::RESOURCES_READ,
                Some(json!({ "uri": "a://b" }))
            ))
            .as_deref(),
            Some(r#"{"uri":"a://b"}"#)
        );
        assert!(cacheable(&raw(methods::TOOLS_CALL, None)).is_none());
        assert!(cacheable(&raw(methods::SERVER_DISCOVER, None)).is_none());
        for disqualified in ["_meta", "inputResponses", "requestState"] {
            let params = json!({ disqualified: {} });
            assert!(cacheable(&raw(methods::TOOLS_LIST, Some(params.clone()))).is_none());
        }
        assert!(cacheable(&raw(methods::TOOLS_LIST, Some(json!([1])))).is_none());
    }

    #[test]
    fn hints_store_only_positive_ttls_of_complete_results() {
        let public = Hints::of(r#"{"tools":[],"ttlMs":1000,"cacheScope":"public"}"#).unwrap();
        assert_eq!(public.scope, CacheScope::Public);
        assert_eq!(public.ttl, Duration::from_secs(1));
        let unscoped = Hints::of(r#"{"ttlMs":5}"#).unwrap();
        assert_eq!(unscoped.scope, CacheScope::Private);
        let odd = Hints::of(r#"{"ttlMs":5,"cacheScope":"everyone"}"#).unwrap();
        assert_eq!(odd.scope, CacheScope::Private);
        for never in [
            r#"{"ttlMs":0}"#,
            r#"{"ttlMs":-5}"#,
            r#"{"ttlMs":"5"}"#,
            r#"{"tools":[]}"#,
            r#"{"ttlMs":5,"resultType":"input_required"}"#,
            r#"[1]"#,
        ] {
            assert!(Hints::of(never).is_none(), "{never}");
        }
        assert!(Hints::of(r#"{"ttlMs":5,"resultType":"complete"}"#).is_some());
    }
}
