//! One warning per store outage, not one per operation.
//!
//! A store shared by replicas (Redis) that stops answering fails every
//! operation until it returns. Each failure is passed over (the caller goes
//! on with what its process holds), and an operator needs to know that it
//! happened and when it ended, not a warning per token read. So the first
//! failure after a success is one warning, the failures after it are debug
//! events, and the first success after them is one info event: two lines
//! per outage for each store. Events name the store and the operation,
//! never a key or a value.

use std::sync::atomic::{AtomicBool, Ordering};

/// A store's failure, as far as its health goes: one that lasts until the
/// configuration changes, or one that may pass. (`auth::StoreError`; a
/// trait so that this module depends on no store.)
pub(crate) trait StoreFailure {
    fn is_configuration(&self) -> bool;
}

/// Whether a store was failing when last used, and the events that say
/// when that changes.
#[derive(Debug)]
pub(crate) struct StoreHealth {
    store: &'static str,
    failing: AtomicBool,
}

impl StoreHealth {
    /// The health of the store named `store` in events ("tokens", "eras",
    /// "responses").
    pub(crate) const fn new(store: &'static str) -> Self {
        StoreHealth {
            store,
            failing: AtomicBool::new(false),
        }
    }

    /// `result` of `operation`, with its failure passed over: `None`.
    pub(crate) fn observe<T, E: StoreFailure>(
        &self,
        operation: &'static str,
        result: Result<T, E>,
    ) -> Option<T> {
        match result {
            Ok(value) => {
                self.answered();
                Some(value)
            }
            Err(error) => {
                self.failed(operation, error.is_configuration());
                None
            }
        }
    }

    /// An operation failed; `configuration` when the store cannot work as
    /// configured, which is an error, not a warning: it will not pass.
    fn failed(&self, operation: &'static str, configuration: bool) {
        let store = self.store;
        if self.failing.swap(true, Ordering::AcqRel) {
            tracing::debug!(target: "mcp_connect::store", store, operation, "the store failed again");
        } else if configuration {
            tracing::error!(
                target: "mcp_connect::store",
                store,
                operation,
                "the store cannot be used as configured (a refused login, another sealing key, an untrusted certificate); going on without it"
            );
        } else {
            tracing::warn!(
                target: "mcp_connect::store",
                store,
                operation,
                "the store failed; going on with this process's own copy until it answers"
            );
        }
    }

    /// An operation went through.
    pub(crate) fn answered(&self) {
        if self.failing.swap(false, Ordering::AcqRel) {
            let store = self.store;
            tracing::info!(target: "mcp_connect::store", store, "the store answers again");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;
    use crate::store::StoreError;

    /// The level of every event, in order.
    #[derive(Clone, Default)]
    struct Levels(Arc<Mutex<Vec<tracing::Level>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Levels {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            self.0.lock().unwrap().push(*event.metadata().level());
        }
    }

    #[test]
    fn an_outage_is_one_warning_and_its_end_one_event() {
        let levels = Levels::default();
        let subscriber = tracing_subscriber::registry().with(levels.clone());
        tracing::subscriber::with_default(subscriber, || {
            let health = StoreHealth::new("tokens");
            let down = || StoreError::new(std::io::Error::other("down"));
            let refused = || StoreError::configuration(std::io::Error::other("refused"));
            assert_eq!(health.observe("read", Ok::<_, StoreError>(1)), Some(1));
            for _ in 0..3 {
                assert_eq!(health.observe("read", Err::<u8, _>(down())), None);
            }
            assert_eq!(health.observe("write", Ok::<_, StoreError>(())), Some(()));
            assert_eq!(health.observe("write", Ok::<_, StoreError>(())), Some(()));
            assert_eq!(health.observe("lease", Err::<u8, _>(down())), None);
            assert_eq!(health.observe("write", Ok::<_, StoreError>(())), Some(()));
            assert_eq!(health.observe("read", Err::<u8, _>(refused())), None);
        });
        use tracing::Level;
        assert_eq!(
            *levels.0.lock().unwrap(),
            [
                Level::WARN,
                Level::DEBUG,
                Level::DEBUG,
                Level::INFO,
                Level::WARN,
                Level::INFO,
                Level::ERROR
            ]
        );
    }
}
