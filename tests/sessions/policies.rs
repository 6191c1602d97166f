//! Issue 43: a client's call path as tower middleware, and the per-server
//! policies on it. Each test fails without its policy: the server sees
//! more than the bulkhead allows, a failing server keeps being called, a
//! throttled call is not sent again.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::support::{legacy, result, watchdog, Recorded, Script, ScriptServer};
use mcp_connect::client::{ClientError, McpClientBuilder};
use mcp_connect::layers::policy::{
    BreakerConfig, BulkheadLayer, CircuitBreakerLayer, CircuitState, RateLimitRetryLayer, Refused,
};
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::protocol::{CallTool, McpRequest};
use mcp_connect::session::Call;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(30);

fn client(server: &ScriptServer) -> McpClientBuilder {
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request)
}

/// A legacy server whose `tools/call` answers take `delay`, recording when
/// each arrived; it lists no tools.
fn slow_tools(delay: Duration, arrivals: Arc<Mutex<Vec<Instant>>>) -> impl Fn(&Recorded) -> Script {
    move |request: &Recorded| match request.rpc_method() {
        "tools/call" => {
            arrivals.lock().unwrap().push(Instant::now());
            Script::Delayed(delay, Box::new(legacy(request)))
        }
        "tools/list" => Script::Json(200, result(request, json!({ "tools": [] }))),
        _ => legacy(request),
    }
}

/// The most arrivals within any `window`.
fn most_within(arrivals: &[Instant], window: Duration) -> usize {
    let mut sorted = arrivals.to_vec();
    sorted.sort();
    (0..sorted.len())
        .map(|i| {
            sorted[i..]
                .iter()
                .take_while(|t| **t - sorted[i] < window)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_of_four_keeps_twenty_calls_to_four_at_the_server() {
    watchdog(LIMIT, async {
        for bulkhead in [true, false] {
            let arrivals = Arc::new(Mutex::new(Vec::new()));
            let server =
                ScriptServer::start(slow_tools(Duration::from_millis(300), arrivals.clone())).await;
            let mut client = client(&server);
            if bulkhead {
                client = client
                    .with_call_layer(BulkheadLayer::new(4).with_queue(16, Duration::from_secs(10)));
            }
            let client = client.build();
            client.session().await.unwrap();
            let calls = (0..20).map(|_| {
                let client = client.clone();
                async move { client.call_tool("x", &json!({})).await }
            });
            let outcomes = futures_util::future::join_all(calls).await;
            assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
            let most = most_within(&arrivals.lock().unwrap(), Duration::from_millis(250));
            if bulkhead {
                assert!(most <= 4, "{most} calls at the server at once");
            } else {
                assert!(most > 4, "without a bulkhead all arrive together: {most}");
            }
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_full_bulkhead_queue_fails_fast_and_typed() {
    watchdog(LIMIT, async {
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let server =
            ScriptServer::start(slow_tools(Duration::from_millis(500), arrivals.clone())).await;
        let client = client(&server)
            .with_call_layer(BulkheadLayer::new(4).with_queue(2, Duration::from_secs(10)))
            .build();
        client.session().await.unwrap();
        let started = Instant::now();
        let calls = (0..10).map(|_| {
            let client = client.clone();
            async move {
                let outcome = client.call_tool("x", &json!({})).await;
                (outcome, started.elapsed())
            }
        });
        let outcomes = futures_util::future::join_all(calls).await;
        let refused: Vec<_> = outcomes
            .iter()
            .filter(|(outcome, _)| {
                matches!(outcome, Err(ClientError::Refused(Refused::BulkheadFull)))
            })
            .collect();
        assert_eq!(refused.len(), 4, "{outcomes:?}");
        for (outcome, took) in &refused {
            assert!(*took < Duration::from_millis(200), "fails fast: {took:?}");
            let error = outcome.as_ref().unwrap_err();
            assert_eq!(error.failure().kind, FailureKind::Unavailable);
        }
        assert_eq!(outcomes.iter().filter(|(o, _)| o.is_ok()).count(), 6);
        assert_eq!(arrivals.lock().unwrap().len(), 6);
    })
    .await;
}

/// A legacy server whose `tools/call` answers 503 while `failing`, and
/// otherwise a result with `isError` when the tool is "broken".
fn flaky(failing: Arc<AtomicBool>, calls: Arc<AtomicUsize>) -> impl Fn(&Recorded) -> Script {
    move |request: &Recorded| match request.rpc_method() {
        "tools/call" => {
            calls.fetch_add(1, Ordering::SeqCst);
            if failing.load(Ordering::SeqCst) {
                Script::Status(503)
            } else if request.body["params"]["name"] == "broken" {
                Script::Json(
                    200,
                    result(
                        request,
                        json!({ "content": [{ "type": "text", "text": "no" }], "isError": true }),
                    ),
                )
            } else {
                legacy(request)
            }
        }
        "tools/list" => Script::Json(
            200,
            result(
                request,
                json!({ "tools": [
                    { "name": "x", "inputSchema": { "type": "object" } },
                    { "name": "broken", "inputSchema": { "type": "object" } }
                ] }),
            ),
        ),
        _ => legacy(request),
    }
}

#[tokio::test(start_paused = true)]
async fn a_breaker_opens_on_503s_fails_fast_and_closes_after_one_probe() {
    watchdog(LIMIT, async {
        let failing = Arc::new(AtomicBool::new(true));
        let calls = Arc::new(AtomicUsize::new(0));
        let server = ScriptServer::start(flaky(failing.clone(), calls.clone())).await;
        let breaker = CircuitBreakerLayer::<ClientError>::new(
            BreakerConfig::default()
                .with_threshold(3)
                .with_open_for(Duration::from_millis(300), Duration::from_secs(2)),
        );
        let client = client(&server).with_call_layer(breaker.clone()).build();
        for _ in 0..3 {
            let error = client.call_tool("x", &json!({})).await.unwrap_err();
            assert_eq!(error.http_status(), Some(503), "{error:?}");
        }
        assert!(matches!(breaker.state(), CircuitState::Open { .. }));
        // Open: later calls do not reach the server.
        for _ in 0..5 {
            let error = client.call_tool("x", &json!({})).await.unwrap_err();
            assert!(
                matches!(error, ClientError::Refused(Refused::CircuitOpen { .. })),
                "{error:?}"
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        // The server recovers; after the wait one probe closes the breaker.
        failing.store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(350)).await;
        client.call_tool("x", &json!({})).await.unwrap();
        assert_eq!(breaker.state(), CircuitState::Closed { failures: 0 });
        for _ in 0..3 {
            client.call_tool("x", &json!({})).await.unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 7);
    })
    .await;
}

/// Issue 43: the half-open probe is the era's liveness check (`ping` on
/// 2025). While the server is still down the probe fails and the call is
/// refused unsent; once it is back the server sees `ping`, then the call.
#[tokio::test(start_paused = true)]
async fn a_half_open_breaker_pings_before_it_lets_a_call_through() {
    watchdog(LIMIT, async {
        let down = Arc::new(AtomicBool::new(true));
        let server = ScriptServer::start({
            let down = Arc::clone(&down);
            move |request: &Recorded| match request.rpc_method() {
                "tools/call" | "ping" if down.load(Ordering::SeqCst) => Script::Status(503),
                _ => legacy(request),
            }
        })
        .await;
        let breaker = mcp_connect::client::circuit_breaker(
            BreakerConfig::default()
                .with_threshold(2)
                .with_open_for(Duration::from_millis(200), Duration::from_secs(2)),
        );
        let client = client(&server).with_call_layer(breaker.clone()).build();
        for _ in 0..2 {
            client.call_tool("x", &json!({})).await.unwrap_err();
        }
        let wait_out = |state: CircuitState| match state {
            CircuitState::Open { until } => tokio::time::sleep_until(until),
            other => panic!("open, not {other:?}"),
        };
        wait_out(breaker.state()).await;
        let error = client.call_tool("x", &json!({})).await.unwrap_err();
        assert!(
            matches!(error, ClientError::Refused(Refused::CircuitOpen { .. })),
            "{error:?}"
        );
        assert_eq!(
            (server.count("ping"), server.count("tools/call")),
            (1, 2),
            "the probe, and no third call"
        );

        down.store(false, Ordering::SeqCst);
        wait_out(breaker.state()).await;
        client.call_tool("x", &json!({})).await.unwrap();
        assert_eq!(breaker.state(), CircuitState::Closed { failures: 0 });
        let methods: Vec<String> = server
            .recorded()
            .iter()
            .map(|r| r.rpc_method().to_owned())
            .filter(|m| m == "ping" || m == "tools/call")
            .collect();
        assert_eq!(
            methods[methods.len() - 2..],
            ["ping".to_owned(), "tools/call".to_owned()]
        );
    })
    .await;
}

/// Issue 64, item 4: a server whose liveness check passes while every call
/// gets a 503. The ping admits the call, but the call is the trial: its
/// failure opens the breaker again for twice as long. (A passing ping
/// closed the breaker and forgot the backoff: `threshold` calls every
/// few hundred milliseconds, forever.)
#[tokio::test(start_paused = true)]
async fn a_breaker_backs_off_when_the_ping_passes_and_calls_still_fail() {
    watchdog(LIMIT, async {
        let server = ScriptServer::start(|request: &Recorded| match request.rpc_method() {
            "tools/call" => Script::Status(503),
            _ => legacy(request),
        })
        .await;
        let breaker = mcp_connect::client::circuit_breaker(
            BreakerConfig::default()
                .with_threshold(2)
                .with_open_for(Duration::from_millis(100), Duration::from_secs(10)),
        );
        let client = client(&server).with_call_layer(breaker.clone()).build();
        let started = Instant::now();
        // Each opening's wait, as the breaker sets it.
        let mut waits = Vec::new();
        let mut last = None;
        while started.elapsed() < Duration::from_millis(2500) {
            let _ = client.call_tool("x", &json!({})).await;
            if let CircuitState::Open { until } = breaker.state() {
                if last != Some(until) {
                    waits.push(until.saturating_duration_since(tokio::time::Instant::now()));
                    last = Some(until);
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let calls = server.count("tools/call");
        // 2 to open, then one trial per opening: 100, 200, 400, 800 ms...
        assert!(
            calls <= 7,
            "{calls} calls reached the failing server, waits {waits:?}"
        );
        assert!(waits.len() >= 3, "{waits:?}");
        assert!(waits[2] > waits[0], "the wait grows: {waits:?}");
        assert!(server.count("ping") >= 2, "probed before each trial");
    })
    .await;
}

#[tokio::test]
async fn a_hundred_tool_errors_never_open_the_breaker() {
    watchdog(LIMIT, async {
        let calls = Arc::new(AtomicUsize::new(0));
        let server =
            ScriptServer::start(flaky(Arc::new(AtomicBool::new(false)), calls.clone())).await;
        let breaker =
            CircuitBreakerLayer::<ClientError>::new(BreakerConfig::default().with_threshold(3));
        let client = client(&server).with_call_layer(breaker.clone()).build();
        for _ in 0..100 {
            let result = client.call_tool("broken", &json!({})).await.unwrap();
            assert!(result.is_error);
        }
        assert_eq!(breaker.state(), CircuitState::Closed { failures: 0 });
        assert_eq!(calls.load(Ordering::SeqCst), 100);
    })
    .await;
}

/// A legacy server whose first `tools/call` is throttled by `throttle`.
fn throttled_once(
    throttle: impl Fn(&Recorded) -> Script + Send + Sync + 'static,
    calls: Arc<Mutex<Vec<Instant>>>,
) -> impl Fn(&Recorded) -> Script {
    move |request: &Recorded| match request.rpc_method() {
        "tools/call" => {
            let mut calls = calls.lock().unwrap();
            calls.push(Instant::now());
            if calls.len() == 1 {
                throttle(request)
            } else {
                legacy(request)
            }
        }
        _ => legacy(request),
    }
}

#[tokio::test(start_paused = true)]
async fn a_throttled_call_is_sent_again_after_the_stated_delay_only_when_asked() {
    watchdog(LIMIT, async {
        let status_429 =
            |_: &Recorded| Script::StatusWith(429, vec![("retry-after", "1".to_owned())]);
        let rpc_32023 = |request: &Recorded| {
            Script::Json(
                200,
                crate::support::error(request, -32023, Some(json!({ "retryAfterMs": 1000 }))),
            )
        };
        type Throttle = Arc<dyn Fn(&Recorded) -> Script + Send + Sync>;
        let throttles: [(&str, Throttle); 2] = [
            ("429", Arc::new(status_429)),
            ("-32023", Arc::new(rpc_32023)),
        ];
        for (name, throttle) in throttles {
            for retrying in [false, true] {
                let calls = Arc::new(Mutex::new(Vec::new()));
                let throttle = throttle.clone();
                let server =
                    ScriptServer::start(throttled_once(move |r| throttle(r), calls.clone())).await;
                let mut client = client(&server);
                if retrying {
                    client = client.with_call_layer(RateLimitRetryLayer::new());
                }
                let client = client.build();
                let outcome = client.call_tool("x", &json!({})).await;
                let calls = calls.lock().unwrap().clone();
                if retrying {
                    outcome.unwrap_or_else(|e| panic!("{name}: {e:?}"));
                    assert_eq!(calls.len(), 2, "{name}");
                    assert!(calls[1] - calls[0] >= Duration::from_secs(1), "{name}");
                } else {
                    let error = outcome.unwrap_err();
                    assert_eq!(error.failure().kind, FailureKind::Throttled, "{name}");
                    assert_eq!(
                        error.failure().retry_after,
                        Some(Duration::from_secs(1)),
                        "{name}"
                    );
                    assert_eq!(calls.len(), 1, "{name}");
                }
            }
        }
    })
    .await;
}

/// A legacy server whose every tenth `tools/list` stalls for 400 ms; the
/// others take `normal` ms.
fn one_in_ten_stalls(seen: Arc<AtomicUsize>, normal: u64) -> impl Fn(&Recorded) -> Script {
    move |request: &Recorded| match request.rpc_method() {
        "tools/list" => {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let answer = Script::Json(200, result(request, json!({ "tools": [] })));
            let delay = if n % 10 == 9 { 400 } else { normal };
            Script::Delayed(Duration::from_millis(delay), Box::new(answer))
        }
        _ => legacy(request),
    }
}

/// The p50 and p99 of 60 listings after 40 to warm the history.
async fn listing_latencies(client: &McpClient) -> (Duration, Duration) {
    for _ in 0..40 {
        client.list_tools().await.unwrap();
    }
    let mut took = Vec::new();
    for _ in 0..60 {
        let started = Instant::now();
        client.list_tools().await.unwrap();
        took.push(started.elapsed());
    }
    took.sort();
    (took[29], took[58])
}

#[tokio::test(start_paused = true)]
async fn a_hedged_listing_keeps_its_tail_near_its_median() {
    watchdog(Duration::from_secs(60), async {
        let server = ScriptServer::start(one_in_ten_stalls(Arc::default(), 20)).await;
        // A short history, so that it fills within the test.
        let layer =
            mcp_connect::client::HedgeLayer::new(0.5).with_history(Duration::from_secs(1), 10);
        let hedged = client(&server).with_call_layer(layer).build();
        let (p50, p99) = listing_latencies(&hedged).await;
        // A hedged listing costs the hedge delay (the median) and one more
        // listing: about twice the median, never the stall.
        eprintln!("hedged: p50 {p50:?}, p99 {p99:?}");
        assert!(p99 < p50 * 3, "hedged: p50 {p50:?}, p99 {p99:?}");
        assert!(p99 < Duration::from_millis(200), "hedged: p99 {p99:?}");

        let server = ScriptServer::start(one_in_ten_stalls(Arc::default(), 20)).await;
        let plain = client(&server).build();
        let (p50, p99) = listing_latencies(&plain).await;
        eprintln!("unhedged: p50 {p50:?}, p99 {p99:?}");
        assert!(
            p99 >= Duration::from_millis(400),
            "unhedged: p50 {p50:?}, p99 {p99:?}"
        );
    })
    .await;
}

/// Issue 43's figure: with the second listing sent after a fixed delay
/// below the median (`--hedge-after`), the tail is the delay plus one
/// listing: p99 within 1.5x of p50, where a stalled listing would be 10x.
#[tokio::test(start_paused = true)]
async fn a_listing_hedged_after_a_fixed_delay_has_its_p99_within_half_again_its_p50() {
    watchdog(Duration::from_secs(60), async {
        let server = ScriptServer::start(one_in_ten_stalls(Arc::default(), 40)).await;
        let layer = mcp_connect::client::HedgeLayer::after(Duration::from_millis(10));
        let hedged = client(&server).with_call_layer(layer).build();
        let (p50, p99) = listing_latencies(&hedged).await;
        eprintln!("hedged after 10 ms: p50 {p50:?}, p99 {p99:?}");
        assert!(p99 * 2 <= p50 * 3, "p50 {p50:?}, p99 {p99:?}");
        let listings = server
            .recorded()
            .iter()
            .filter(|r| r.rpc_method() == "tools/list")
            .count();
        assert!(listings > 100, "the listings were hedged: {listings}");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_tools_call_is_hedged_only_when_the_application_names_the_tool() {
    watchdog(LIMIT, async {
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        // Every call is slow: a hedge would fire on each once the history
        // knows the median.
        let server =
            ScriptServer::start(slow_tools(Duration::from_millis(100), arrivals.clone())).await;
        let layer = mcp_connect::client::HedgeLayer::new(0.0)
            .with_history(Duration::from_secs(10), 1)
            .with_safe_tools(["safe"]);
        let client = client(&server).with_call_layer(layer).build();
        for _ in 0..5 {
            client.call_tool("x", &json!({})).await.unwrap();
        }
        assert_eq!(arrivals.lock().unwrap().len(), 5, "never hedged");
        for _ in 0..5 {
            client.call_tool("safe", &json!({})).await.unwrap();
        }
        assert!(
            arrivals.lock().unwrap().len() > 6,
            "hedged: {}",
            arrivals.lock().unwrap().len()
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn replicas_fail_over_reads_never_resend_a_sent_call_and_take_back_a_recovered_one() {
    use mcp_connect::client::{ReplicaConfig, ReplicasLayer};
    watchdog(LIMIT, async {
        let (a_calls, b_calls) = (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(Mutex::new(Vec::new())),
        );
        let delay = Duration::from_millis(400);
        let a = ScriptServer::start(slow_tools(delay, a_calls.clone())).await;
        let b = ScriptServer::start(slow_tools(delay, b_calls.clone())).await;
        let a_addr = a.addr();
        let config = ReplicaConfig::default().with_ejection(2, Duration::from_millis(300));
        let replicated = client(&a)
            .with_call_layer(ReplicasLayer::new([client(&b).build()], config))
            .build();

        // Both up: calls spread over both.
        let arguments = json!({});
        let calls = (0..8).map(|_| replicated.call_tool("x", &arguments));
        let outcomes = futures_util::future::join_all(calls).await;
        assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
        let (on_a, on_b) = (a_calls.lock().unwrap().len(), b_calls.lock().unwrap().len());
        assert_eq!(on_a + on_b, 8);
        assert!(on_a > 0 && on_b > 0, "balanced: {on_a} and {on_b}");

        // A dies with calls in flight: those fail once and are not sent
        // again anywhere.
        let in_flight = (0..8).map(|_| replicated.call_tool("x", &arguments));
        let killer = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            a.stop().await;
        };
        let (outcomes, ()) = tokio::join!(futures_util::future::join_all(in_flight), killer);
        let failed = outcomes.iter().filter(|o| o.is_err()).count();
        let on_a_now = a_calls.lock().unwrap().len();
        let on_b_now = b_calls.lock().unwrap().len();
        assert_eq!(
            on_a_now + on_b_now,
            16,
            "every call reached one server once"
        );
        let lost_with_a = on_a_now - on_a;
        assert!(lost_with_a >= 1, "some calls were on A: {outcomes:?}");
        assert_eq!(
            failed, lost_with_a,
            "exactly the calls on A failed: {outcomes:?}"
        );

        // Every idempotent read succeeds while A is down.
        for _ in 0..10 {
            replicated.list_tools().await.unwrap();
        }
        // Later calls go to B.
        let before = b_calls.lock().unwrap().len();
        for _ in 0..4 {
            replicated.call_tool("x", &json!({})).await.unwrap();
        }
        assert_eq!(b_calls.lock().unwrap().len(), before + 4);

        // A comes back and, once its ejection ends, takes calls again.
        let _a = ScriptServer::start_on(a_addr, slow_tools(delay, a_calls.clone()))
            .await
            .unwrap();
        let back = a_calls.lock().unwrap().len();
        let deadline = Instant::now() + Duration::from_secs(10);
        while a_calls.lock().unwrap().len() == back {
            assert!(Instant::now() < deadline, "A never took a call again");
            let _ = replicated.call_tool("x", &json!({})).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_group_shows_a_members_open_breaker_and_its_recovery() {
    use mcp_connect::group::{HealthState, Server, ServerGroup};
    watchdog(LIMIT, async {
        let failing = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let server = ScriptServer::start(flaky(failing.clone(), calls.clone())).await;
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_pin(ProtocolVersion::V2025_11_25)
            .with_name("flaky");
        let breaker = CircuitBreakerLayer::<ClientError>::new(
            BreakerConfig::default()
                .with_threshold(2)
                .with_open_for(Duration::from_millis(300), Duration::from_secs(2)),
        );
        let group = ServerGroup::builder().build();
        let stack = EstablishBuilder::new(Connector::new()).build();
        group
            .add(Server::new(stack, request).with_call_layer(breaker))
            .unwrap();
        group.settled().await;
        failing.store(true, Ordering::SeqCst);
        for _ in 0..3 {
            group.call_tool("x", &json!({})).await.unwrap_err();
        }
        let state = group.health("flaky").unwrap().state;
        assert!(matches!(state, HealthState::CircuitOpen(_)), "{state:?}");
        assert!(state.is_usable(), "the probe must be routed");
        assert_eq!(calls.load(Ordering::SeqCst), 2, "the third was refused");
        failing.store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(350)).await;
        group.call_tool("x", &json!({})).await.unwrap();
        assert_eq!(group.health("flaky").unwrap().state, HealthState::Ready);
        group.shutdown().await;
    })
    .await;
}

/// A legacy server whose `tools/call` reports progress every 100 ms for
/// `reports` times, then answers; the GET stream is refused.
fn progressing(reports: u32) -> impl Fn(&Recorded) -> Script {
    move |request: &Recorded| {
        if request.method == http::Method::GET {
            return Script::Status(405);
        }
        match request.rpc_method() {
            "tools/call" => {
                let token = request.body["params"]["_meta"]["progressToken"].clone();
                let event =
                    |message: serde_json::Value| format!("event: message\ndata: {message}\n\n");
                let step = Duration::from_millis(100);
                let mut events: Vec<(Duration, String)> = (1..=reports)
                    .map(|i| {
                        let report = json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                            "params": { "progressToken": token, "progress": i } });
                        (step, event(report))
                    })
                    .collect();
                events.push((step, event(result(request, json!({ "content": [] })))));
                Script::SsePaced(events)
            }
            "notifications/cancelled" => Script::Status(202),
            _ => legacy(request),
        }
    }
}

/// On real time: the progress arrives on a paced SSE stream through
/// hyper's server and client, which a paused clock skips past.
#[tokio::test]
async fn an_idle_timeout_is_restarted_by_progress_and_ended_by_its_cap() {
    watchdog(LIMIT, async {
        // Progress for a second, every 100 ms: a 250 ms idle limit holds.
        let server = ScriptServer::start(progressing(10)).await;
        let lasting = client(&server)
            .with_call_layer(mcp_connect::client::idle_timeout(
                Duration::from_millis(250),
                Duration::from_secs(5),
            ))
            .build();
        lasting.call_tool("long", &json!({})).await.unwrap();

        // The same under a 600 ms cap: it ends at the cap, and the server
        // is told.
        let server = ScriptServer::start(progressing(10)).await;
        let capped = client(&server)
            .with_call_layer(mcp_connect::client::idle_timeout(
                Duration::from_millis(250),
                Duration::from_millis(600),
            ))
            .build();
        let started = Instant::now();
        let error = capped.call_tool("long", &json!({})).await.unwrap_err();
        let took = started.elapsed();
        assert_eq!(error.failure().kind, FailureKind::Timeout, "{error:?}");
        assert!(
            took >= Duration::from_millis(590) && took < Duration::from_millis(900),
            "{took:?}"
        );
        let deadline = Instant::now() + Duration::from_secs(2);
        while server.count("notifications/cancelled") == 0 {
            assert!(Instant::now() < deadline, "the server was never told");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // Without the layer's reset, the 250 ms limit alone ends it early.
        let server = ScriptServer::start(progressing(10)).await;
        let plain = client(&server).build();
        let options =
            mcp_connect::session::RequestOptions::new().with_timeout(Duration::from_millis(250));
        let arguments = json!({});
        let call = Call::new(CallTool::new("long", &arguments)).with_options(options);
        plain.send(call).await.unwrap_err();
    })
    .await;
}

#[tokio::test]
async fn a_result_over_the_servers_cap_is_a_typed_error_naming_the_cap() {
    watchdog(LIMIT, async {
        let big = "x".repeat(10_000);
        let server = ScriptServer::start(move |request: &Recorded| match request.rpc_method() {
            "tools/call" => Script::Json(
                200,
                result(
                    request,
                    json!({ "content": [{ "type": "text", "text": big }] }),
                ),
            ),
            _ => legacy(request),
        })
        .await;
        let plain = client(&server).build();
        assert_eq!(
            plain.call_tool("x", &json!({})).await.unwrap().text().len(),
            10_000
        );
        let capped = client(&server)
            .with_call_layer(mcp_connect::client::result_cap(4096))
            .build();
        let error = capped.call_tool("x", &json!({})).await.unwrap_err();
        match error {
            ClientError::ResultTooLarge { limit, size } => {
                assert_eq!(limit, 4096);
                assert!(size > 10_000);
            }
            other => panic!("{other:?}"),
        }
    })
    .await;
}

/// A legacy server with one counter per session: `count` returns it, one
/// more each call.
fn counting_per_session() -> impl Fn(&Recorded) -> Script {
    let sessions = Arc::new(AtomicUsize::new(0));
    let counters: Arc<Mutex<std::collections::HashMap<String, u64>>> = Arc::default();
    move |request: &Recorded| match request.rpc_method() {
        "initialize" => {
            let id = format!("s{}", sessions.fetch_add(1, Ordering::SeqCst));
            let answer = legacy(request);
            match answer {
                Script::JsonWith(status, body, mut headers) => {
                    headers.retain(|(name, _)| !name.eq_ignore_ascii_case("mcp-session-id"));
                    headers.push(("mcp-session-id", id));
                    Script::JsonWith(status, body, headers)
                }
                Script::Json(status, body) => {
                    Script::JsonWith(status, body, vec![("mcp-session-id", id)])
                }
                other => other,
            }
        }
        "tools/call" => {
            let session = request.header("mcp-session-id").unwrap_or("").to_owned();
            let mut counters = counters.lock().unwrap();
            let count = counters.entry(session).or_insert(0);
            *count += 1;
            Script::Json(
                200,
                result(
                    request,
                    json!({ "content": [{ "type": "text", "text": count.to_string() }] }),
                ),
            )
        }
        _ => legacy(request),
    }
}

/// Issue 44, item 6: two principals against a stateful counting server
/// never see each other's count: each has its own client, so its own
/// session. (One client shared by both shows 1, 2, 3, 4, 5.)
#[tokio::test]
async fn two_principals_never_share_a_session() {
    watchdog(LIMIT, async {
        let server = ScriptServer::start(counting_per_session()).await;
        let url = server.url();
        let stack = EstablishBuilder::new(Connector::new()).build();
        let clients = mcp_connect::client::PerPrincipal::new(move |user: &&str| {
            let request = ConnectRequest::http(&url)
                .unwrap()
                .with_pin(ProtocolVersion::V2025_11_25)
                .with_header("x-user", user)
                .unwrap();
            McpClient::builder(stack.clone(), request).build()
        })
        .with_idle_close(Duration::from_secs(60));
        let mut seen = Vec::new();
        for user in ["alice", "alice", "bob", "alice", "bob"] {
            let answer = clients
                .get(&user)
                .call_tool("count", &json!({}))
                .await
                .unwrap();
            seen.push((user, answer.text()));
        }
        assert_eq!(
            seen,
            [
                ("alice", "1".to_owned()),
                ("alice", "2".to_owned()),
                ("bob", "1".to_owned()),
                ("alice", "3".to_owned()),
                ("bob", "2".to_owned()),
            ]
        );
        assert_eq!(server.count("initialize"), 2, "one session each");
        assert_eq!(clients.len(), 2);
        clients.close_all().await;
        assert!(clients.is_empty());
    })
    .await;
}

/// Issue 44, item 6: a principal's client idle past the bound is closed
/// (its session ended) and the next use makes a new one.
#[tokio::test(start_paused = true)]
async fn an_idle_principals_client_is_closed() {
    let made = Arc::new(AtomicUsize::new(0));
    let clients = mcp_connect::client::PerPrincipal::new({
        let made = Arc::clone(&made);
        move |_: &u32| {
            made.fetch_add(1, Ordering::SeqCst);
            let request = ConnectRequest::http("http://127.0.0.1:9/mcp").unwrap();
            McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request).build()
        }
    })
    .with_idle_close(Duration::from_secs(60));
    clients.get(&1);
    clients.get(&2);
    tokio::time::advance(Duration::from_secs(30)).await;
    clients.get(&1);
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(clients.sweep(), 1, "2 went idle, 1 was used 31 s ago");
    assert_eq!(clients.len(), 1);
    clients.get(&2);
    assert_eq!(made.load(Ordering::SeqCst), 3, "2 made again");
}

/// Issue 45, item 1 (call policies per server in a config file): an
/// entry's `policies` block is put on its member's call path. With
/// `maxInFlight: 2`, ten calls at once through the group reach the server
/// two at a time, two more wait, the other six are refused at once;
/// without the block all ten arrive together.
#[tokio::test(start_paused = true)]
async fn a_config_entrys_policies_bound_its_members_calls() {
    use mcp_connect::config::ServersConfig;
    use mcp_connect::group::ServerGroup;
    watchdog(LIMIT, async {
        for block in [r#", "policies": { "maxInFlight": 2 }"#, ""] {
            let arrivals = Arc::new(Mutex::new(Vec::new()));
            let slow = slow_tools(Duration::from_millis(300), arrivals.clone());
            let server = ScriptServer::start(move |request: &Recorded| {
                match request.rpc_method() {
                    "tools/list" => Script::Json(
                        200,
                        result(request, json!({ "tools": [{ "name": "x", "inputSchema": { "type": "object" } }] })),
                    ),
                    _ => slow(request),
                }
            })
            .await;
            let text = format!(
                r#"{{ "mcpServers": {{ "slow": {{ "url": "{}"{block} }} }} }}"#,
                server.url()
            );
            let config = ServersConfig::parse(&text).unwrap();
            let group = ServerGroup::new();
            let stack = EstablishBuilder::new(Connector::new()).build();
            assert!(group.add_config(&config, &stack).is_empty());
            group.settled().await;
            let arguments = json!({});
            let calls = (0..10).map(|_| group.call_tool("x", &arguments));
            let outcomes = futures_util::future::join_all(calls).await;
            let arrivals = arrivals.lock().unwrap().clone();
            let most = most_within(&arrivals, Duration::from_millis(250));
            if block.is_empty() {
                assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
                assert!(most > 2, "without the block all arrive together: {most}");
            } else {
                assert!(most <= 2, "{most} calls at the server at once");
                assert_eq!(arrivals.len(), 4, "two in flight, two queued");
                assert_eq!(outcomes.iter().filter(|o| o.is_err()).count(), 6);
            }
            group.shutdown().await;
        }
    })
    .await;
}

/// A session of the application's own takes tower middleware through
/// `SessionService`: tower's concurrency limit keeps twelve calls to three
/// at the server (without it, all twelve arrive together).
#[tokio::test(start_paused = true)]
async fn tower_middleware_on_a_session_of_ones_own() {
    use mcp_connect::client::{Call, SessionService};
    use tower::{ServiceBuilder, ServiceExt};

    watchdog(LIMIT, async {
        for limited in [true, false] {
            let arrivals = Arc::new(Mutex::new(Vec::new()));
            let server =
                ScriptServer::start(slow_tools(Duration::from_millis(300), arrivals.clone())).await;
            let request = ConnectRequest::http(&server.url())
                .unwrap()
                .with_pin(ProtocolVersion::V2025_11_25);
            let session = Arc::new(Connector::new().connect(request).await.unwrap());
            let service = ServiceBuilder::new()
                .option_layer(limited.then(|| tower::limit::ConcurrencyLimitLayer::new(3)))
                .service(SessionService::new(Arc::clone(&session)));
            let calls = (0..12).map(|_| {
                let arguments = json!({});
                let call = Call::new(CallTool::new("x", &arguments).encode());
                service.clone().oneshot(call)
            });
            let outcomes = futures_util::future::join_all(calls).await;
            assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
            let most = most_within(&arrivals.lock().unwrap(), Duration::from_millis(250));
            if limited {
                assert!(most <= 3, "{most} calls at the server at once");
            } else {
                assert!(most > 3, "without the limit all arrive together: {most}");
            }
            session.close().await.unwrap();
        }
    })
    .await;
}

/// A config entry's `replicas` balance a member's calls over another URL
/// of the server: with the primary answering 503, the replica takes the
/// calls once the primary is left out (without the field, every call goes
/// to the failing primary).
#[tokio::test]
async fn a_config_entrys_replicas_take_the_calls_of_a_failing_primary() {
    use mcp_connect::config::ServersConfig;
    use mcp_connect::group::ServerGroup;
    watchdog(LIMIT, async {
        for with_replica in [true, false] {
            let failing = Arc::new(AtomicBool::new(false));
            let primary_calls = Arc::new(AtomicUsize::new(0));
            let primary = ScriptServer::start(flaky(failing.clone(), primary_calls.clone())).await;
            let replica_calls = Arc::new(AtomicUsize::new(0));
            let healthy = Arc::new(AtomicBool::new(false));
            let replica = ScriptServer::start(flaky(healthy, replica_calls.clone())).await;
            let block = if with_replica {
                format!(r#", "policies": {{ "replicas": ["{}"] }}"#, replica.url())
            } else {
                String::new()
            };
            let text = format!(
                r#"{{ "mcpServers": {{ "s": {{ "url": "{}"{block} }} }} }}"#,
                primary.url()
            );
            let config = ServersConfig::parse(&text).unwrap();
            let group = ServerGroup::new();
            let stack = EstablishBuilder::new(Connector::new()).build();
            assert!(group.add_config(&config, &stack).is_empty());
            group.settled().await;
            failing.store(true, Ordering::SeqCst);
            let mut succeeded = 0;
            for _ in 0..8 {
                succeeded += usize::from(group.call_tool("x", &json!({})).await.is_ok());
            }
            if with_replica {
                assert!(succeeded >= 4, "{succeeded} of 8 succeeded");
                assert!(replica_calls.load(Ordering::SeqCst) >= 4);
                assert!(primary_calls.load(Ordering::SeqCst) <= 4);
            } else {
                assert_eq!(succeeded, 0);
                assert_eq!(primary_calls.load(Ordering::SeqCst), 8);
            }
            group.shutdown().await;
        }
    })
    .await;
}

/// Issue 63, item 8: a replica at another origin (another port here) never
/// receives the primary's `Authorization`: the calls it takes carry only
/// what its own URL gives. (It received the primary's bearer.)
#[tokio::test]
async fn a_replica_elsewhere_never_gets_the_primarys_credentials() {
    use mcp_connect::config::ServersConfig;
    use mcp_connect::group::ServerGroup;
    const CANARY: &str = "Bearer primary-canary-6e1f";
    watchdog(LIMIT, async {
        let failing = Arc::new(AtomicBool::new(false));
        let primary = ScriptServer::start(flaky(failing.clone(), Arc::default())).await;
        let replica_calls = Arc::new(AtomicUsize::new(0));
        let healthy = Arc::new(AtomicBool::new(false));
        let replica = ScriptServer::start(flaky(healthy, replica_calls.clone())).await;
        let text = format!(
            r#"{{ "mcpServers": {{ "s": {{ "url": "{}", "headers": {{ "Authorization": "{CANARY}" }},
                 "policies": {{ "replicas": ["{}"] }} }} }} }}"#,
            primary.url(),
            replica.url()
        );
        let config = ServersConfig::parse(&text).unwrap();
        let group = ServerGroup::new();
        let stack = EstablishBuilder::new(Connector::new()).build();
        assert!(group.add_config(&config, &stack).is_empty());
        group.settled().await;
        failing.store(true, Ordering::SeqCst);
        for _ in 0..8 {
            let _ = group.call_tool("x", &json!({})).await;
        }
        assert!(replica_calls.load(Ordering::SeqCst) >= 1, "the replica took calls");
        assert!(!replica.recorded().is_empty());
        for request in replica.recorded() {
            assert!(request.headers.get("authorization").is_none(), "{request:?}");
        }
        assert!(primary
            .recorded()
            .iter()
            .all(|r| r.headers.get("authorization").is_some_and(|v| v == CANARY)));
        group.shutdown().await;
    })
    .await;
}
