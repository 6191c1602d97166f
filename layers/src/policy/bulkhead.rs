//! At most N calls in flight to one server, a bounded queue behind them.
//!
//! tower's `ConcurrencyLimit` waits without bound in `poll_ready`, and a
//! fresh layer per connection would give every session its own limit; this
//! one is shared by every clone (the server's limit, whatever session is
//! current), queues at most `max_queued` calls for at most `max_wait`, and
//! fails a call fast with [`Refused::BulkheadFull`] when the queue is full.
//! Dropping a queued call's future leaves the queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::BoxFuture;
use tokio::sync::Semaphore;
use tower_layer::Layer;
use tower_service::Service;

use super::Refused;

/// Puts a [`Bulkhead`] around a service. Every service it makes, and their
/// clones, share one set of permits and one queue.
#[derive(Debug, Clone)]
pub struct BulkheadLayer {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    permits: Arc<Semaphore>,
    queued: AtomicUsize,
    max_queued: usize,
    max_wait: Duration,
}

impl BulkheadLayer {
    /// At most `max_in_flight` calls at once (at least one); by default up
    /// to `max_in_flight` more wait, each at most 5 s.
    pub fn new(max_in_flight: usize) -> Self {
        let max_in_flight = max_in_flight.max(1);
        BulkheadLayer {
            shared: Arc::new(Shared {
                permits: Arc::new(Semaphore::new(max_in_flight)),
                queued: AtomicUsize::new(0),
                max_queued: max_in_flight,
                max_wait: Duration::from_secs(5),
            }),
        }
    }

    /// At most `max_queued` calls wait (0: a call that finds every permit
    /// taken fails at once), each at most `max_wait`.
    #[must_use]
    pub fn with_queue(self, max_queued: usize, max_wait: Duration) -> Self {
        let permits = Arc::clone(&self.shared.permits);
        BulkheadLayer {
            shared: Arc::new(Shared {
                permits,
                queued: AtomicUsize::new(0),
                max_queued,
                max_wait,
            }),
        }
    }
}

impl<S> Layer<S> for BulkheadLayer {
    type Service = Bulkhead<S>;

    fn layer(&self, inner: S) -> Bulkhead<S> {
        Bulkhead {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service made by [`BulkheadLayer`].
#[derive(Debug, Clone)]
pub struct Bulkhead<S> {
    inner: S,
    shared: Arc<Shared>,
}

/// Leaves the queue when the wait ends, however it ends.
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<S, R> Service<R> for Bulkhead<S>
where
    S: Service<R> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: From<Refused>,
    R: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // The wait is the call's (bounded, and left when it is dropped),
        // not the caller's readiness.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        // The service that was ready is the one that is called; the clone
        // takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let permit = match Arc::clone(&shared.permits).try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    let before = shared.queued.fetch_add(1, Ordering::AcqRel);
                    let _queued = Queued(&shared.queued);
                    if before >= shared.max_queued {
                        return Err(Refused::BulkheadFull.into());
                    }
                    let acquire = Arc::clone(&shared.permits).acquire_owned();
                    match tokio::time::timeout(shared.max_wait, acquire).await {
                        Ok(Ok(permit)) => permit,
                        _ => return Err(Refused::BulkheadFull.into()),
                    }
                }
            };
            std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
            let response = inner.call(request).await;
            drop(permit);
            response
        })
    }
}
