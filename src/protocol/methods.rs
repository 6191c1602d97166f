//! MCP method names, one constant each: the crate names a method only
//! through these (CI checks that no method-name literal is written outside
//! `protocol/`), so a method renamed by the specification is one change,
//! and a misspelt name does not compile.

/// Modern era: what the server speaks (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";
/// Legacy era: the handshake's request.
pub const INITIALIZE: &str = "initialize";
/// Legacy era: the handshake's closing notification.
pub const INITIALIZED: &str = "notifications/initialized";
/// Liveness.
pub const PING: &str = "ping";

/// Tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Calls a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// Prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// One prompt.
pub const PROMPTS_GET: &str = "prompts/get";
/// Resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// Resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// One resource.
pub const RESOURCES_READ: &str = "resources/read";
/// Updates of one resource.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// No more updates of one resource.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// Argument completion.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// The server's log level.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

/// The 2026-07-28 subscription: one long-lived request whose reply stream
/// carries the notifications asked for.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// Tasks (SEP-2663): one task's state.
pub const TASKS_GET: &str = "tasks/get";
/// Tasks: input for a task that asked.
pub const TASKS_UPDATE: &str = "tasks/update";
/// Tasks: ends a task.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// Skills (SEP-2640): the entries.
pub const SKILLS_LIST: &str = "skills/list";
/// Skills: one entry.
pub const SKILLS_GET: &str = "skills/get";

/// Server to client: a model completion.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Server to client: a question for the person.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// Server to client: the client's roots.
pub const ROOTS_LIST: &str = "roots/list";

/// A request's progress.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// A request cancelled.
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// A log message from the server.
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// The tools changed.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// The prompts changed.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// The resources changed.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// One subscribed resource changed.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// A subscription was taken (2026-07-28).
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";
/// The client's roots changed.
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
