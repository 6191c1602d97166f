//! The requests whose result says nothing but "done" (`ping`, the
//! subscriptions, the log level), and [`RawRequest`], the escape hatch for
//! a method this crate has no type for.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{EncodedRequest, McpRequest, RequestKind};

/// `ping`: the liveness check. A 2026-07-28 session has no `ping` and
/// sends `server/discover` instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ping;

impl McpRequest for Ping {
    type Output = ();

    fn kind(&self) -> RequestKind {
        RequestKind::Ping
    }

    fn encode(&self) -> EncodedRequest {
        EncodedRequest::new::<()>(RequestKind::Ping, None, None)
    }

    fn read(_: Box<RawValue>) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

#[derive(Serialize)]
struct Uri<'a> {
    uri: &'a str,
}

macro_rules! uri_request {
    ($(#[$doc:meta])* $name:ident, $kind:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name<'a> {
            uri: Cow<'a, str>,
        }

        impl<'a> $name<'a> {
            /// For the resource at `uri`.
            pub fn new(uri: impl Into<Cow<'a, str>>) -> Self {
                $name { uri: uri.into() }
            }
        }

        impl McpRequest for $name<'_> {
            type Output = ();

            fn kind(&self) -> RequestKind {
                RequestKind::$kind
            }

            fn target(&self) -> Option<&str> {
                Some(&self.uri)
            }

            fn retarget(&mut self, uri: &str) {
                self.uri = Cow::Owned(uri.to_owned());
            }

            fn encode(&self) -> EncodedRequest {
                let params = Uri { uri: &self.uri };
                EncodedRequest::new(RequestKind::$kind, Some(&params), Some(&self.uri))
            }

            fn read(_: Box<RawValue>) -> Result<(), serde_json::Error> {
                Ok(())
            }
        }
    };
}

uri_request!(
    /// `resources/subscribe` as sent on the legacy era. A session's
    /// [`subscribe`](crate::Session::subscribe) also works on the
    /// 2026-07-28 era (where a subscription is the session's stream) and
    /// is what applications call.
    Subscribe,
    Subscribe
);
uri_request!(
    /// `resources/unsubscribe` as sent on the legacy era (see
    /// [`Subscribe`]).
    Unsubscribe,
    Unsubscribe
);

/// `logging/setLevel`: `"debug"`, `"info"`, ..., `"emergency"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetLoggingLevel<'a> {
    level: Cow<'a, str>,
}

impl<'a> SetLoggingLevel<'a> {
    /// The server's log level from now on.
    pub fn new(level: impl Into<Cow<'a, str>>) -> Self {
        SetLoggingLevel {
            level: level.into(),
        }
    }
}

impl McpRequest for SetLoggingLevel<'_> {
    type Output = ();

    fn kind(&self) -> RequestKind {
        RequestKind::SetLoggingLevel
    }

    fn encode(&self) -> EncodedRequest {
        #[derive(Serialize)]
        struct Level<'a> {
            level: &'a str,
        }
        let params = Level { level: &self.level };
        EncodedRequest::new(RequestKind::SetLoggingLevel, Some(&params), None)
    }

    fn read(_: Box<RawValue>) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

/// Any method with any params; the raw result. For a method this crate has
/// no type for (an extension's, a newer specification's): its kind is read
/// from the method, so a raw `tools/call` is still a call (never hedged,
/// routed by its tool's name).
///
/// ```
/// use mcp_connect::protocol::{McpRequest, RawRequest, RequestKind};
/// use serde_json::json;
///
/// let request = RawRequest::new("tools/call", Some(json!({ "name": "add", "arguments": {} })));
/// assert_eq!(request.encode().kind(), RequestKind::CallTool);
/// assert_eq!(request.target(), Some("add"));
/// ```
#[derive(Clone, PartialEq)]
pub struct RawRequest {
    method: Cow<'static, str>,
    params: Option<Value>,
}

impl RawRequest {
    /// `method` with `params`.
    pub fn new(method: impl Into<Cow<'static, str>>, params: Option<Value>) -> Self {
        RawRequest {
            method: method.into(),
            params,
        }
    }

    fn target_key(&self) -> Option<&'static str> {
        RequestKind::of(&self.method).target_key()
    }
}

impl McpRequest for RawRequest {
    type Output = Box<RawValue>;

    fn kind(&self) -> RequestKind {
        RequestKind::of(&self.method)
    }

    fn target(&self) -> Option<&str> {
        self.params.as_ref()?.get(self.target_key()?)?.as_str()
    }

    fn retarget(&mut self, name: &str) {
        let Some(key) = self.target_key() else {
            return;
        };
        if let Some(Value::Object(params)) = &mut self.params {
            params.insert(key.to_owned(), Value::String(name.to_owned()));
        }
    }

    fn encode(&self) -> EncodedRequest {
        EncodedRequest::raw(self.method.clone(), self.params.as_ref())
    }

    fn read(raw: Box<RawValue>) -> Result<Box<RawValue>, serde_json::Error> {
        Ok(raw)
    }
}

impl std::fmt::Debug for RawRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names and arguments are the application's data: never shown.
        f.debug_struct("RawRequest").finish_non_exhaustive()
    }
}
