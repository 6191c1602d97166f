//! The four layers over plain HTTP clients (`hyper_util` and reqwest), with
//! no adapter, request type or error type of the test's own, against a
//! loopback server that answers each path in a scripted way.
#![cfg(feature = "http")]

use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_connect_layers::classify::FailureClassifierLayer;
use mcp_connect_layers::deadline::DeadlineLayer;
use mcp_connect_layers::diagnostics::{
    AttemptDiagnosticsLayer, LifecycleDiagnosticsLayer, LifecycleMetrics, OutcomeRecord,
    StageRecord,
};
use mcp_connect_layers::http::ReplaySafe;
use mcp_connect_layers::recovery::{Backoff, FreshSessionRecoveryLayer, RecoveryPolicy, Stop};
use mcp_connect_layers::{CancelSource, Classify, FailureKind, StageOutcome};
use tokio_util::sync::CancellationToken;
use tower::{ServiceBuilder, ServiceExt};

/// What the server saw: arrivals per path.
#[derive(Default)]
struct Seen {
    arrivals: Mutex<Vec<(String, Instant)>>,
    flaky: AtomicU32,
}

impl Seen {
    fn count(&self, path: &str) -> usize {
        let arrivals = self.arrivals.lock().unwrap();
        arrivals.iter().filter(|(p, _)| p == path).count()
    }

    fn gaps(&self, path: &str) -> Vec<Duration> {
        let arrivals = self.arrivals.lock().unwrap();
        let times: Vec<Instant> = arrivals
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, t)| *t)
            .collect();
        times.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

fn status(code: u16) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .body(Full::new(Bytes::from_static(b"body")))
        .unwrap()
}

/// `/flaky`: 503, 503, then 200 (cycling); `/auth`: 401; `/throttle`: 429
/// with `Retry-After: 1`; `/busy`: 503; `/stall`: never answers; else 200.
async fn answer(request: Request<hyper::body::Incoming>, seen: Arc<Seen>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    seen.arrivals
        .lock()
        .unwrap()
        .push((path.clone(), Instant::now()));
    match path.as_str() {
        "/flaky" => match seen.flaky.fetch_add(1, Ordering::SeqCst) % 3 {
            2 => status(200),
            _ => status(503),
        },
        "/auth" => status(401),
        "/throttle" => {
            let mut response = status(429);
            response
                .headers_mut()
                .insert("retry-after", "1".parse().unwrap());
            response
        }
        "/busy" => status(503),
        "/stall" => std::future::pending().await,
        _ => status(200),
    }
}

async fn server() -> (String, Arc<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let shared = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let seen = Arc::clone(&shared);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let seen = Arc::clone(&seen);
                    async move { Ok::<_, Infallible>(answer(request, seen).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (base, seen)
}

fn policy() -> RecoveryPolicy {
    RecoveryPolicy::new().with_backoff(Backoff::new(
        Duration::from_millis(40),
        Duration::from_millis(200),
    ))
}

#[derive(Debug, Default)]
struct Outcomes(Mutex<Vec<(bool, u32, Option<FailureKind>)>>);

impl LifecycleMetrics for Outcomes {
    fn on_outcome(&self, record: &OutcomeRecord) {
        let kind = record.failure.map(|f| f.kind);
        self.0
            .lock()
            .unwrap()
            .push((record.succeeded, record.attempts, kind));
    }
}

#[derive(Debug, Default)]
struct Stages(Mutex<Vec<(u32, &'static str, Option<u16>)>>);

impl LifecycleMetrics for Stages {
    fn on_stage(&self, record: &StageRecord) {
        let outcome = match record.event.outcome {
            StageOutcome::Started => "started",
            StageOutcome::Succeeded => "succeeded",
            _ => "failed",
        };
        let event = (record.event.attempt, outcome, record.event.http_status);
        self.0.lock().unwrap().push(event);
    }
}

/// Issue 42, item 6: a plain request's attempts are reported by the
/// diagnostics module's attempt layer inside the recovery layer, each with
/// its decided failure; the classifier reports nothing.
#[tokio::test]
async fn each_attempt_of_a_plain_request_is_one_stage_event_pair() {
    let (base, _seen) = server().await;
    let flaky = || {
        Request::get(format!("{base}/flaky"))
            .body(Full::default())
            .unwrap()
    };
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let stages = Arc::new(Stages::default());
    let svc = ServiceBuilder::new()
        .layer(LifecycleDiagnosticsLayer::new().with_metrics(stages.clone()))
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(AttemptDiagnosticsLayer::new())
        .layer(FailureClassifierLayer::new())
        .service(client.clone());
    svc.oneshot(flaky()).await.unwrap();
    assert_eq!(
        *stages.0.lock().unwrap(),
        [
            (1, "started", None),
            (1, "failed", Some(503)),
            (2, "started", None),
            (2, "failed", Some(503)),
            (3, "started", None),
            (3, "succeeded", None),
        ]
    );

    let quiet = Arc::new(Stages::default());
    let svc = ServiceBuilder::new()
        .layer(LifecycleDiagnosticsLayer::new().with_metrics(quiet.clone()))
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(FailureClassifierLayer::new())
        .service(client);
    svc.oneshot(flaky()).await.unwrap();
    assert!(
        quiet.0.lock().unwrap().is_empty(),
        "the classifier never reports"
    );
}

/// The program of the issue, exactly: no adapter of the test's own.
#[tokio::test]
async fn the_four_layers_over_hyper_util() {
    let (base, seen) = server().await;
    let outcomes = Arc::new(Outcomes::default());
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(2)))
        .layer(LifecycleDiagnosticsLayer::new().with_metrics(outcomes.clone()))
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(AttemptDiagnosticsLayer::new())
        .layer(FailureClassifierLayer::new())
        .service(client);
    let get = |path: &str| {
        Request::get(format!("{base}{path}"))
            .body(Full::default())
            .unwrap()
    };

    // 503, 503, 200: three attempts, ending in the 200.
    let response = svc.clone().oneshot(get("/flaky")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(seen.count("/flaky"), 3);
    assert_eq!(outcomes.0.lock().unwrap().last(), Some(&(true, 3, None)));

    // 401 and 429: one attempt each, the response kept in the error.
    let error = svc.clone().oneshot(get("/auth")).await.unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Auth);
    assert_eq!(
        (error.attempts(), error.stop()),
        (1, Some(Stop::NotEligible))
    );
    assert_eq!(seen.count("/auth"), 1);
    let error = svc.clone().oneshot(get("/throttle")).await.unwrap_err();
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Throttled);
    assert_eq!(failure.retry_after, Some(Duration::from_secs(1)));
    assert_eq!(seen.count("/throttle"), 1);

    // A stall ends at the deadline, reported as the deadline.
    let started = Instant::now();
    let error = svc.clone().oneshot(get("/stall")).await.unwrap_err();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_millis(2500),
        "{waited:?}"
    );
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert_eq!(failure.cancel_source, Some(CancelSource::Deadline));
    let last = *outcomes.0.lock().unwrap().last().unwrap();
    assert_eq!(
        last,
        (false, 1, Some(FailureKind::Timeout)),
        "recorded though cut"
    );
}

/// The waits between attempts are jittered: three 503-503-200 sequences do
/// not space their attempts alike.
#[tokio::test]
async fn waits_between_attempts_are_jittered() {
    let (base, seen) = server().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(5)))
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(FailureClassifierLayer::new())
        .service(client);
    for _ in 0..3 {
        let request = Request::get(format!("{base}/flaky"))
            .body(Full::default())
            .unwrap();
        svc.clone().oneshot(request).await.unwrap();
    }
    let gaps = seen.gaps("/flaky");
    // Gaps 0-1, 1-2 (first run), 3-4, 4-5, 6-7, 7-8: the waits of a run.
    let waits: Vec<Duration> = [0, 1, 3, 4, 6, 7].iter().map(|i| gaps[*i]).collect();
    assert!(
        waits
            .iter()
            .all(|w| *w <= Duration::from_millis(200) + Duration::from_millis(100)),
        "within the cap: {waits:?}"
    );
    let first = waits[0].as_micros() / 1000;
    assert!(
        waits.iter().any(|w| w.as_micros() / 1000 != first),
        "not lock-step: {waits:?}"
    );
}

/// A POST is not idempotent: a 503 is not re-attempted unless the caller
/// marks it replay-safe; a body that cannot be cloned is never re-sent.
#[tokio::test]
async fn only_replayable_requests_are_sent_again() {
    let (base, seen) = server().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(5)))
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(FailureClassifierLayer::new())
        .service(client);
    let post = || {
        Request::post(format!("{base}/busy"))
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap()
    };
    let error = svc.clone().oneshot(post()).await.unwrap_err();
    assert_eq!(error.attempts(), 1);
    assert_eq!(seen.count("/busy"), 1);

    let mut marked = post();
    marked.extensions_mut().insert(ReplaySafe);
    let error = svc.clone().oneshot(marked).await.unwrap_err();
    assert_eq!(
        (error.attempts(), error.stop()),
        (3, Some(Stop::MaxAttempts))
    );
    assert_eq!(seen.count("/busy"), 4);

    // A boxed (streaming) body: the first attempt goes, nothing is re-sent.
    let streaming =
        Client::builder(TokioExecutor::new()).build_http::<BoxBody<Bytes, Infallible>>();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(5)))
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(FailureClassifierLayer::new())
        .service(streaming);
    let request = Request::get(format!("{base}/busy"))
        .body(Full::new(Bytes::from_static(b"x")).boxed())
        .unwrap();
    let error = svc.oneshot(request).await.unwrap_err();
    assert_eq!(
        (error.attempts(), error.stop()),
        (1, Some(Stop::NotReplayable))
    );
    assert_eq!(seen.count("/busy"), 5);
}

/// The caller's cancellation, put in the request's extensions, ends the
/// exchange at once.
#[tokio::test]
async fn caller_cancellation_ends_at_once() {
    let (base, _) = server().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(30)))
        .layer(LifecycleDiagnosticsLayer::new())
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(FailureClassifierLayer::new())
        .service(client);
    let token = CancellationToken::new();
    let mut request = Request::get(format!("{base}/stall"))
        .body(Full::default())
        .unwrap();
    request
        .extensions_mut()
        .insert(mcp_connect_layers::http::Cancellation(token.clone()));
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let started = Instant::now();
    let error = svc.oneshot(request).await.unwrap_err();
    cancel.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Cancelled);
    assert_eq!(failure.cancel_source, Some(CancelSource::Caller));
}

/// A refused connection is a connect failure, re-attempted even for a POST
/// (nothing was sent).
#[tokio::test]
async fn a_refused_connection_is_a_connect_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(5)))
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(FailureClassifierLayer::new())
        .service(client);
    let request = Request::post(closed).body(Full::default()).unwrap();
    let error = svc.oneshot(request).await.unwrap_err();
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Connect, "{failure}");
    assert_eq!(
        (error.attempts(), error.stop()),
        (3, Some(Stop::MaxAttempts))
    );
}

/// The same four layers over reqwest, behind a `service_fn` that converts
/// the request (a conversion that fails is reqwest's own error, never a
/// panic) and the response: reqwest's errors are classified through their
/// source chain.
#[tokio::test]
async fn the_same_layers_over_reqwest() {
    let (base, seen) = server().await;
    let client = reqwest::Client::new();
    let reqwest = tower::service_fn(move |request: Request<Full<Bytes>>| {
        let client = client.clone();
        async move {
            let request = reqwest::Request::try_from(request.map(reqwest::Body::wrap))?;
            let response = client.execute(request).await?;
            Ok::<_, reqwest::Error>(http::Response::<reqwest::Body>::from(response))
        }
    });
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(2)))
        .layer(LifecycleDiagnosticsLayer::new())
        .layer(FreshSessionRecoveryLayer::new(policy()))
        .layer(AttemptDiagnosticsLayer::new())
        .layer(FailureClassifierLayer::new())
        .service(reqwest);
    let get = |path: &str| {
        Request::get(format!("{base}{path}"))
            .body(Full::default())
            .unwrap()
    };
    let response = svc.clone().oneshot(get("/flaky")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(seen.count("/flaky"), 3);
    let error = svc.clone().oneshot(get("/auth")).await.unwrap_err();
    assert_eq!(
        (error.failure().kind, error.attempts()),
        (FailureKind::Auth, 1)
    );
    let error = svc.clone().oneshot(get("/stall")).await.unwrap_err();
    assert_eq!(error.failure().cancel_source, Some(CancelSource::Deadline));

    // reqwest's connect error is found through its source chain.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let request = Request::get(closed).body(Full::default()).unwrap();
    let error = svc.oneshot(request).await.unwrap_err();
    assert_eq!(
        error.failure().kind,
        FailureKind::Connect,
        "{}",
        error.failure()
    );
    assert_eq!(error.attempts(), 3);
}
