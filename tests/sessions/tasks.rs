//! Issue 30, item 5: the Tasks extension (SEP-2663) against the testkit's
//! tasks server: a call offers a task only when asked to; a task is polled
//! to its result, its requests for input answered with the handler; a
//! failed task is the server's error; a task cancelled mid-way is cancelled
//! at the server and ends the wait typed; the long-lived client never sends
//! a task creation twice.

use std::time::Duration;

use mcp_connect::extensions::tasks::{Called, TaskDetail, TaskError};
use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
use mcp_connect::layers::CancelSource;
use mcp_connect::protocol::server_requests::ElicitResult;
use mcp_connect::session::RequestOptions;
use mcp_connect::testkit::{TaskPlan, TasksServer};
use mcp_connect::{ConnectRequest, Connector, ErrorKind, EstablishBuilder, McpClient};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{watchdog, ScriptServer};
use mcp_connect::extensions::tasks::{GetTask, TaskCall};
use mcp_connect::protocol::CallTool;

const LIMIT: Duration = Duration::from_secs(15);

async fn serve(plan: TaskPlan) -> (TasksServer, ScriptServer) {
    let tasks = TasksServer::new(plan.polling_every(20));
    let responder = tasks.clone();
    let server = ScriptServer::start(move |r| responder.respond(r)).await;
    (tasks, server)
}

fn request(server: &ScriptServer) -> ConnectRequest {
    let handler = ClientHandler::new().on_elicitation(|request| async move {
        Ok(ElicitResult::accept(elicitation_defaults(&request)))
    });
    ConnectRequest::http(&server.url())
        .unwrap()
        .with_handler(handler)
}

fn offered(server: &ScriptServer) -> Vec<bool> {
    server
        .recorded_for("tools/call")
        .iter()
        .map(|r| {
            r.body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                .get("io.modelcontextprotocol/tasks")
                .is_some()
        })
        .collect()
}

#[tokio::test]
async fn a_task_is_offered_only_when_asked_for_and_polled_to_its_result() {
    watchdog(LIMIT, async {
        let (tasks, server) = serve(TaskPlan::new(2)).await;
        let session = Connector::new().connect(request(&server)).await.unwrap();
        // A plain call never offers a task.
        assert_eq!(
            session.call_tool("slow", &json!({})).await.unwrap().text(),
            "done"
        );
        let Called::Task(task) = session
            .send(TaskCall::new(CallTool::new("slow", &json!({}))))
            .await
            .unwrap()
        else {
            panic!("the server made a task")
        };
        assert_eq!(offered(&server), [false, true]);
        assert_eq!(tasks.created(), 1);
        let result = session
            .wait_task(&task, &RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(result.text(), "done");
        assert_eq!(
            server.recorded_for("tasks/get").len(),
            3,
            "two working, then done"
        );
        // The session's own envelope is untouched by the offer.
        let later = session.send(GetTask(&task.task_id)).await.unwrap();
        assert!(matches!(later.detail, TaskDetail::Completed(_)));
        assert!(server.recorded_for("tasks/get")[0].body["params"]["_meta"]
            ["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_none());
    })
    .await;
}

#[tokio::test]
async fn a_tasks_request_for_input_is_answered_with_tasks_update() {
    watchdog(LIMIT, async {
        let (_, server) = serve(TaskPlan::new(1).asking_input()).await;
        let session = Connector::new().connect(request(&server)).await.unwrap();
        let Called::Task(task) = session
            .send(TaskCall::new(CallTool::new("slow", &json!({}))))
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        let result = session
            .wait_task(&task, &RequestOptions::new())
            .await
            .unwrap();
        let update = &server.recorded_for("tasks/update")[0];
        assert_eq!(update.body["params"]["taskId"], task.task_id.as_str());
        assert_eq!(
            update.body["params"]["inputResponses"]["name"]["content"]["name"],
            "Ada"
        );
        assert_eq!(
            result.structured_content.unwrap()["answer"]["content"]["name"],
            "Ada"
        );
    })
    .await;
}

#[tokio::test]
async fn a_failed_task_is_the_servers_error() {
    watchdog(LIMIT, async {
        let (_, server) = serve(TaskPlan::new(0).failing()).await;
        let session = Connector::new().connect(request(&server)).await.unwrap();
        let Called::Task(task) = session
            .send(TaskCall::new(CallTool::new("slow", &json!({}))))
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        let error = session
            .wait_task(&task, &RequestOptions::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Rpc(rpc) if rpc.code() == -32603),
            "{error:?}"
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_task_cancelled_mid_way_is_cancelled_at_the_server() {
    watchdog(LIMIT, async {
        let (tasks, server) = serve(TaskPlan::new(1_000)).await;
        let session = Connector::new().connect(request(&server)).await.unwrap();
        let Called::Task(task) = session
            .send(TaskCall::new(CallTool::new("slow", &json!({}))))
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        let token = CancellationToken::new();
        let cancel = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            cancel.cancel();
        });
        let options = RequestOptions::new().with_cancellation(token);
        let error = session.wait_task(&task, &options).await.unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Cancelled), "{error:?}");
        assert!(
            server.recorded_for("tasks/get").len() >= 2,
            "it was polled first"
        );
        assert_eq!(server.recorded_for("tasks/cancel").len(), 1);
        assert_eq!(tasks.cancelled(), 1);
        // The server says so from then on.
        let error = session
            .wait_task(&task, &RequestOptions::new())
            .await
            .unwrap_err();
        assert!(matches!(
            error.kind(),
            ErrorKind::Task(TaskError::Cancelled)
        ));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_wait_past_its_timeout_leaves_the_task_running() {
    watchdog(LIMIT, async {
        let (tasks, server) = serve(TaskPlan::new(1_000)).await;
        let session = Connector::new().connect(request(&server)).await.unwrap();
        let Called::Task(task) = session
            .send(TaskCall::new(CallTool::new("slow", &json!({}))))
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        let options = RequestOptions::new().with_timeout(Duration::from_millis(100));
        let error = session.wait_task(&task, &options).await.unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Timeout(CancelSource::RequestTimeout)
            ),
            "{error:?}"
        );
        assert_eq!(tasks.cancelled(), 0, "the handle stays good");
    })
    .await;
}

/// The long-lived client waits for a task made through it.
#[tokio::test]
async fn the_long_lived_client_makes_and_waits_for_a_task() {
    watchdog(LIMIT, async {
        let (tasks, server) = serve(TaskPlan::new(1)).await;
        let stack = EstablishBuilder::new(Connector::new()).build();
        let client = McpClient::builder(stack, request(&server))
            .connect()
            .await
            .unwrap();
        let Called::Task(task) = client
            .send(TaskCall::new(CallTool::new("slow", &json!({}))))
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        let result = client
            .wait_task(&task, &RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(result.text(), "done");
        assert_eq!(tasks.created(), 1);
    })
    .await;
}

/// Issue 40, item 7: a task that asks for input on every poll is answered
/// at most `MAX_INPUT_ROUNDS` times, each round paced by the poll
/// interval, then the wait ends typed (it used to drive thousands of
/// polls and handler calls a second until the wait's timeout).
#[tokio::test(start_paused = true)]
async fn a_task_asking_for_input_forever_is_paced_and_capped() {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    watchdog(LIMIT, async {
        let tasks = TasksServer::new(TaskPlan::new(0).asking_input().polling_every(50));
        let responder = tasks.clone();
        // Every poll asks again, whatever was answered.
        let server = ScriptServer::start(move |r| match r.rpc_method() {
            "tasks/get" => {
                let id = r.body["params"]["taskId"].as_str().unwrap_or_default();
                mcp_connect::testkit::Script::Json(200, mcp_connect::testkit::result(r, json!({
                    "resultType": "complete", "taskId": id, "status": "input_required",
                    "createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:00Z",
                    "ttlMs": 60_000, "pollIntervalMs": 50,
                    "inputRequests": { "name": { "method": "elicitation/create", "params": {
                        "message": "name?", "requestedSchema": { "type": "object",
                        "properties": { "name": { "type": "string", "default": "Ada" } } } } } }
                })))
            }
            _ => responder.respond(r),
        })
        .await;
        let asked = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&asked);
        let handler = ClientHandler::new().on_elicitation(move |request| {
            counted.fetch_add(1, Ordering::Relaxed);
            async move { Ok(ElicitResult::accept(elicitation_defaults(&request))) }
        });
        let session = Connector::new()
            .connect(
                ConnectRequest::http(&server.url())
                    .unwrap()
                    .with_handler(handler),
            )
            .await
            .unwrap();
        let Called::Task(task) = session
            .send(TaskCall::new(CallTool::new("slow", &json!({}))))
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        let started = tokio::time::Instant::now();
        let error = session
            .wait_task(
                &task,
                &RequestOptions::new().with_timeout(Duration::from_secs(5)),
            )
            .await
            .unwrap_err();
        let limit = mcp_connect::session::MAX_INPUT_ROUNDS;
        assert!(
            matches!(
                error.kind(),
                ErrorKind::InputRequired(
                    mcp_connect::inbound::InputRequiredError::TooManyRounds { .. }
                )
            ),
            "{error:?}"
        );
        assert_eq!(asked.load(Ordering::Relaxed), limit);
        assert_eq!(server.recorded_for("tasks/get").len(), limit as usize + 1);
        // Paced: a poll interval after each round.
        assert!(started.elapsed() >= Duration::from_millis(50) * limit);
    })
    .await;
}
