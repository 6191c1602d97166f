//! Trace context in `params._meta` (SEP-414): the propagator's fields as
//! string members of the `_meta` object.

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::Context;
use serde_json::{Map, Value};

use super::Telemetry;

/// Writes the propagator's fields for `cx` into `meta`, leaving every key
/// already there as the application set it.
pub(crate) fn inject(telemetry: &Telemetry, cx: &Context, meta: &mut Map<String, Value>) {
    struct Into<'a>(&'a mut Map<String, Value>);
    impl Injector for Into<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0
                .entry(key.to_owned())
                .or_insert_with(|| Value::String(value));
        }
    }
    telemetry.with_propagator_do(|propagator| propagator.inject_context(cx, &mut Into(meta)));
}

/// The context the propagator reads from `meta` (an empty one when it
/// carries none).
pub(crate) fn extract(telemetry: &Telemetry, meta: Option<&Map<String, Value>>) -> Context {
    struct From<'a>(Option<&'a Map<String, Value>>);
    impl Extractor for From<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0?.get(key)?.as_str()
        }
        fn keys(&self) -> Vec<&str> {
            self.0
                .map(|meta| meta.keys().map(String::as_str).collect())
                .unwrap_or_default()
        }
    }
    telemetry.with_propagator_do(|propagator| {
        propagator.extract_with_context(&Context::new(), &From(meta))
    })
}
