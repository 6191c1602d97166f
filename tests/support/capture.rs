//! A tracing layer that keeps every field of every span and event, at every
//! level, as text: canary tests search it for what must never be there.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

#[derive(Clone, Default)]
pub struct Capture(pub Arc<Mutex<String>>);

impl Capture {
    /// Everything captured so far.
    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

struct Collect<'a>(&'a mut String);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
}

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut out = self.0.lock().unwrap();
        let _ = write!(out, "\n{}", event.metadata().name());
        event.record(&mut Collect(&mut out));
    }

    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        let mut out = self.0.lock().unwrap();
        let _ = write!(out, "\nspan {}", attrs.metadata().name());
        attrs.record(&mut Collect(&mut out));
    }
}

/// A capture installed as this thread's subscriber (while the guard
/// lives), and a current-thread runtime, so everything the test body runs
/// is seen.
pub fn on_this_thread() -> (
    Capture,
    tracing::subscriber::DefaultGuard,
    tokio::runtime::Runtime,
) {
    use tracing_subscriber::layer::SubscriberExt as _;
    keep_every_call_site_open();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    (capture, guard, runtime)
}

/// tracing caches each call site's interest for the whole process. A call
/// site first reached on another test's thread while this thread's capture
/// is being installed can be cached as "never" (the registration races
/// with the rebuild of interests in tracing-core), and this capture then
/// misses it: a canary test failing about once in twenty runs. A
/// process-wide subscriber that wants everything and keeps nothing holds
/// every call site's interest at "sometimes" or more, so each thread's own
/// subscriber decides.
pub fn keep_every_call_site_open() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
    });
}
