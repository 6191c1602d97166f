//! Which request bodies can be sent again, and how.
//!
//! Rust cannot ask "is `B: Clone`?" of a generic body, so the body types
//! that are plain values (a full buffer, nothing) are recognised by their
//! type, and any other body is replayable when the caller put a
//! [`ReplayBody`] that makes a new one in the request's extensions. A
//! streaming body is neither, and is never sent twice.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{Empty, Full};

/// Makes a fresh copy of a request's body, for bodies the layers cannot
/// clone themselves.
///
/// ```
/// use mcp_connect_layers::http::ReplayBody;
///
/// let payload = String::from("{\"ping\":true}");
/// let mut request = http::Request::post("http://127.0.0.1/").body(payload.clone()).unwrap();
/// request.extensions_mut().insert(ReplayBody::new(move || payload.clone()));
/// ```
pub struct ReplayBody<B>(Arc<dyn Fn() -> B + Send + Sync>);

impl<B> ReplayBody<B> {
    /// A body maker.
    pub fn new(make: impl Fn() -> B + Send + Sync + 'static) -> Self {
        ReplayBody(Arc::new(make))
    }

    /// A new body.
    pub fn make(&self) -> B {
        (self.0)()
    }
}

impl<B> Clone for ReplayBody<B> {
    fn clone(&self) -> Self {
        ReplayBody(Arc::clone(&self.0))
    }
}

impl<B> fmt::Debug for ReplayBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReplayBody")
    }
}

/// A copy of `request`'s body, when there is a way to make one.
pub(crate) fn clone_body<B: Any>(request: &http::Request<B>) -> Option<B> {
    if let Some(maker) = request.extensions().get::<ReplayBody<B>>() {
        return Some(maker.make());
    }
    let body = request.body();
    as_clone::<Full<Bytes>, B>(body)
        .or_else(|| as_clone::<Empty<Bytes>, B>(body))
        .or_else(|| as_clone::<String, B>(body))
        .or_else(|| as_clone::<Vec<u8>, B>(body))
        .or_else(|| as_clone::<Bytes, B>(body))
        .or_else(|| as_clone::<(), B>(body))
}

/// `body.clone()` when `B` is the cloneable type `T`.
fn as_clone<T: Clone + Any, B: Any>(body: &B) -> Option<B> {
    let value: &T = (body as &dyn Any).downcast_ref::<T>()?;
    let copy: Box<dyn Any> = Box::new(value.clone());
    copy.downcast::<B>().ok().map(|b| *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_bodies_clone_and_a_maker_wins() {
        let full = http::Request::new(Full::new(Bytes::from_static(b"x")));
        assert!(clone_body(&full).is_some());
        assert!(clone_body(&http::Request::new(String::from("x"))).is_some());
        assert!(clone_body(&http::Request::new(Empty::<Bytes>::new())).is_some());

        struct Stream;
        let stream = http::Request::new(Stream);
        assert!(
            clone_body(&stream).is_none(),
            "an unknown body is not replayed"
        );

        let mut made = http::Request::new(Stream);
        made.extensions_mut().insert(ReplayBody::new(|| Stream));
        assert!(clone_body(&made).is_some());
    }
}
