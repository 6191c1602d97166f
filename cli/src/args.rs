//! Command-line arguments.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use mcp_connect::protocol::ProtocolVersion;

mod parse;
use parse::parse_duration;
use parse::{parse_ceiling, parse_limit, parse_pin};

/// Establish an MCP session and print its timeline.
///
/// TARGET is an http(s) URL, or `-- COMMAND ARGS...` for a stdio server.
/// With neither, a built-in demo server is started on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "mcp-connect", version)]
pub(crate) struct Args {
    /// The server URL (http:// or https://).
    pub(crate) url: Option<String>,

    /// Establish every server of an `mcpServers` config file (Claude
    /// Desktop, Cursor, VS Code) at once, each under its own deadline, and
    /// print a line for each as it finishes; with --list-tools, then the
    /// merged catalogue under the names a caller uses; with --call-tool,
    /// one call routed by catalogue name (or, with --server, by that
    /// server's own tool name), with --repeat one every --interval, the
    /// file read again on SIGHUP (or, with --watch-config, when it
    /// changes) and applied as a difference (servers
    /// added, removed, restarted when their entry changed, the rest left
    /// on their sessions). Exit 0 when all are established (and the
    /// calls succeeded), 1 when any is not, 2 for a file that cannot be read.
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "url", "command", "headers", "auth", "client_credentials",
        "workload_token_file", "id_assertion_file", "dpop",
        "list_resources", "list_prompts", "list_skills", "era_cache",
    ])]
    pub(crate) config: Option<std::path::PathBuf>,

    /// With --config: read, validate and expand the file, start nothing; a
    /// line for each server with its launch (secrets masked) or where its
    /// entry is and what is wrong. Exit 0, 1 when any is not usable, 2 for
    /// a file that cannot be read.
    #[arg(long, requires = "config", conflicts_with_all = [
        "server", "call_tool", "list_tools", "watch_config", "catalogue_cache",
    ])]
    pub(crate) check: bool,

    /// With --config: read the file strictly as the draft standard mcp.json.
    #[arg(long, requires = "config")]
    pub(crate) standard: bool,

    /// Connect to the server an MCP Registry server.json describes: the
    /// first stdio package whose runtime (npx, uvx, docker, dnx) is on the
    /// PATH, else its first remote.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "command", "config"])]
    pub(crate) server_json: Option<std::path::PathBuf>,

    /// Like --server-json, with the server.json fetched from the registry
    /// (--registry) by its name, at VERSION (or the latest with
    /// --allow-unpinned).
    #[arg(long, value_name = "NAME@VERSION", conflicts_with_all = [
        "url", "command", "config", "server_json",
    ])]
    pub(crate) registry_server: Option<String>,

    /// With --registry-server NAME, or a --config entry with no version: the latest.
    #[arg(long)]
    pub(crate) allow_unpinned: bool,

    /// A value for a variable the --server-json or --registry-server
    /// document declares: NAME=VALUE, or NAME alone for the environment
    /// variable of that name. The document never reads the environment by
    /// itself; what nothing answers is asked on a terminal.
    #[arg(long = "var", value_name = "NAME[=VALUE]")]
    pub(crate) vars: Vec<String>,

    /// The MCP Registry --registry-server and "registry" entries ask (its
    /// /v0.1 API), through the same proxy and CA as the server.
    #[arg(long, value_name = "URL", default_value = mcp_connect::registry::PUBLIC_REGISTRY)]
    pub(crate) registry: String,

    /// With --config: only the server of this name.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) server: Option<String>,

    /// A stdio server command and its arguments, after `--`.
    #[arg(last = true, num_args = 1..)]
    pub(crate) command: Option<Vec<String>>,

    /// Which transport to use.
    #[arg(long, value_enum, default_value_t = TransportChoice::Auto)]
    pub(crate) transport: TransportChoice,

    /// Require exactly this protocol version (one this client speaks).
    #[arg(long, value_name = "VERSION", conflicts_with = "ceiling", value_parser = parse_pin)]
    pub(crate) pin: Option<ProtocolVersion>,

    /// Offer no protocol version newer than this (a YYYY-MM-DD revision).
    #[arg(long, value_name = "VERSION", value_parser = parse_ceiling)]
    pub(crate) ceiling: Option<ProtocolVersion>,

    /// The overall establishment deadline.
    #[arg(long, value_parser = parse_limit, default_value = "30s")]
    pub(crate) deadline: Duration,

    /// How long the modern probe (`server/discover`) may take.
    #[arg(long, value_parser = parse_limit, default_value = "10s")]
    pub(crate) probe_timeout: Duration,

    /// How long each handshake request may take.
    #[arg(long, value_parser = parse_limit, default_value = "10s")]
    pub(crate) handshake_timeout: Duration,

    /// How long each request after establishment (a listing, a tool call)
    /// may take.
    #[arg(long, value_parser = parse_limit, default_value = "60s")]
    pub(crate) request_timeout: Duration,

    /// Follow at most N redirects (307 and 308 on the same origin only;
    /// 0 follows none). Any other redirect is a failure naming its status.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) max_redirects: usize,

    /// Send every request through this HTTP proxy (`http://[user:password@]host:port`),
    /// whatever HTTP_PROXY, HTTPS_PROXY and ALL_PROXY say; NO_PROXY still
    /// applies. Without it those variables are used. Its credentials are
    /// never printed.
    #[arg(long, value_name = "URL", conflicts_with = "no_proxy")]
    pub(crate) proxy: Option<String>,

    /// Export the run's OpenTelemetry spans and metrics over OTLP/HTTP
    /// (protobuf) to URL/v1/traces and URL/v1/metrics, through the same
    /// proxy and TLS settings as the server. Off by default.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp: Option<String>,

    /// Use no proxy, whatever the environment says.
    #[arg(long)]
    pub(crate) no_proxy: bool,

    /// Connect to the server over this Unix socket instead of the URL's
    /// host, as curl's --unix-socket: the URL (http:// only) still gives
    /// the path and Host. No proxy applies. In a --config file, a server's
    /// `socket` field says the same.
    #[arg(long, value_name = "PATH", requires = "url")]
    pub(crate) unix_socket: Option<std::path::PathBuf>,

    /// Also trust the CA certificates in this PEM file (a private CA).
    #[arg(long, value_name = "FILE")]
    pub(crate) cacert: Option<std::path::PathBuf>,

    /// Present this client certificate (PEM, leaf first) for mutual TLS;
    /// needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub(crate) cert: Option<std::path::PathBuf>,

    /// The client certificate's private key (PEM); needs --cert. Its
    /// contents are never printed.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub(crate) key: Option<std::path::PathBuf>,

    /// An HTTP header for every request, as 'Name: value' (repeatable). The
    /// value is never printed.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub(crate) headers: Vec<String>,

    /// Authorize interactively when the server asks (OAuth authorization
    /// code): the authorization URL is printed on stderr and the redirect
    /// received on a loopback port.
    #[arg(long, conflicts_with = "client_credentials")]
    pub(crate) auth: bool,

    /// Authorize as a service when the server asks (OAuth
    /// client_credentials); needs --client-id and --client-secret-env.
    #[arg(long, requires_all = ["client_id", "client_secret_env"])]
    pub(crate) client_credentials: bool,

    /// Authorize as a workload (workload identity federation, SEP-1933):
    /// the JWT bearer grant with the token in this file, read anew each
    /// time a token is needed (a platform may rotate it); needs
    /// --client-id.
    #[arg(long, value_name = "FILE", requires = "client_id",
          conflicts_with_all = ["auth", "client_credentials"])]
    pub(crate) workload_token_file: Option<std::path::PathBuf>,

    /// Authorize with an identity assertion from the enterprise's identity
    /// provider (SEP-990, enterprise-managed authorization): the ID token
    /// in this file is exchanged at --idp-token-endpoint for an ID-JAG,
    /// which the MCP server's authorization server grants; needs
    /// --idp-token-endpoint, --idp-client-id and --client-id.
    #[arg(long, value_name = "FILE",
          requires_all = ["idp_token_endpoint", "idp_client_id", "client_id"],
          conflicts_with_all = ["auth", "client_credentials", "workload_token_file"])]
    pub(crate) id_assertion_file: Option<std::path::PathBuf>,

    /// The identity provider's token endpoint, for --id-assertion-file.
    #[arg(long, value_name = "URL", requires = "id_assertion_file")]
    pub(crate) idp_token_endpoint: Option<String>,

    /// This client's id at the identity provider, for --id-assertion-file.
    #[arg(long, value_name = "ID", requires = "id_assertion_file")]
    pub(crate) idp_client_id: Option<String>,

    /// The environment variable holding this client's secret at the
    /// identity provider, for --id-assertion-file.
    #[arg(long, value_name = "VAR", requires = "id_assertion_file")]
    pub(crate) idp_client_secret_env: Option<String>,

    /// Ask for DPoP-bound tokens (RFC 9449): a key made for this run signs
    /// a proof on every token request and every request to the server, so
    /// a token that leaks is useless alone. With any way of authorizing.
    #[arg(long)]
    pub(crate) dpop: bool,

    /// A pre-registered OAuth client id.
    #[arg(long, value_name = "ID")]
    pub(crate) client_id: Option<String>,

    /// The environment variable that holds the OAuth client secret (a
    /// secret is never a flag: flags show in process lists).
    #[arg(long, value_name = "VAR")]
    pub(crate) client_secret_env: Option<String>,

    /// Keep OAuth tokens between runs: in a file (created 0600), or in
    /// Redis (`redis://[:PASSWORD@]HOST:PORT/`; the password may instead
    /// come from REDIS_PASSWORD), shared with every run and replica that
    /// uses the same Redis and key, which then refresh once between them.
    #[arg(long, value_name = "FILE|redis://URL")]
    pub(crate) token_store: Option<String>,

    /// The environment variable holding the 32-byte key (64 hex digits)
    /// that seals tokens kept in Redis.
    #[arg(long, value_name = "VAR")]
    pub(crate) store_key_env: Option<String>,

    /// Keep tokens in Redis in clear, without a key (only for a Redis
    /// trusted with them as they are).
    #[arg(long, conflicts_with = "store_key_env")]
    pub(crate) store_in_clear: bool,

    /// The OAuth scope to ask for.
    #[arg(long, value_name = "SCOPE")]
    pub(crate) scope: Option<String>,

    /// List the server's tools (every page) after establishing.
    #[arg(long)]
    pub(crate) list_tools: bool,

    /// With --config: the tools that best match QUERY (BM25 over their
    /// names, descriptions and parameters), best first, from the catalogue
    /// as it stands (lazy servers from --catalogue-cache, not connected).
    #[arg(long, value_name = "QUERY", requires = "config")]
    pub(crate) search_tools: Option<String>,

    /// With --search-tools: at most N tools.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10,
        requires = "search_tools"
    )]
    pub(crate) limit: usize,

    /// With --config: how tool names are prefixed with their server's:
    /// conditional (only where two servers offer a name), always, or never
    /// (a name two servers offer is refused). Default: the file's
    /// top-level "prefix", else conditional.
    #[arg(long, value_enum, value_name = "MODE", requires = "config")]
    pub(crate) prefix: Option<PrefixMode>,

    /// With serve: show the search_tools, describe_tool and call_tool
    /// meta-tools instead of every tool: auto (above 10000 estimated
    /// tokens of tool definitions), auto:TOKENS, always or never.
    #[arg(long, value_name = "MODE", default_value = "auto", requires = "config")]
    pub(crate) discovery: mcp_connect::group::Discovery,

    /// With serve and --discovery: a tool (name or glob) shown beside the
    /// meta-tools (repeatable).
    #[arg(long = "always-load", value_name = "NAME", requires = "config")]
    pub(crate) always_load: Vec<String>,

    /// List the server's resources (every page) after establishing.
    #[arg(long)]
    pub(crate) list_resources: bool,

    /// List the server's prompts (every page) after establishing.
    #[arg(long)]
    pub(crate) list_prompts: bool,

    /// List the server's skills (the Skills extension, SEP-2640; every
    /// page) by their SKILL.md URIs, reading no skill file.
    #[arg(long)]
    pub(crate) list_skills: bool,

    /// Answer the server's elicitation requests: decline them, or accept
    /// with the defaults their schema declares. Without it elicitation is not
    /// offered.
    #[arg(long, value_enum, value_name = "ANSWER")]
    pub(crate) elicit: Option<Elicit>,

    /// Answer the server's sampling requests with this canned text. Without
    /// it sampling is not offered.
    #[arg(long, value_name = "TEXT")]
    pub(crate) sample: Option<String>,

    /// Print the server's notifications (method only). On the 2025 era over
    /// Streamable HTTP this opens the server's GET stream.
    #[arg(long)]
    pub(crate) notifications: bool,

    /// Offer this directory as a root (repeatable). Without it roots are not
    /// offered.
    #[arg(long = "root", value_name = "PATH")]
    pub(crate) roots: Vec<std::path::PathBuf>,

    /// Call this tool after establishing.
    #[arg(long, value_name = "NAME")]
    pub(crate) call_tool: Option<String>,

    /// The tool's arguments, a JSON object.
    #[arg(
        long = "args",
        value_name = "JSON",
        default_value = "{}",
        requires = "call_tool"
    )]
    pub(crate) tool_args: String,

    /// Fresh-session recovery after an eligible failure: off (one attempt) or
    /// default (up to --max-attempts, each on a new transport).
    #[arg(long, value_enum, default_value_t = Recovery::Off)]
    pub(crate) recovery: Recovery,

    /// The attempt cap when recovery is on.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub(crate) max_attempts: u32,

    /// Call the tool N times through a long-lived client that reconnects
    /// only when its session dies (watch mode).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "call_tool", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat: u32,

    /// Which failed calls watch mode sends once more on the new session:
    /// never, or those the server provably never received (its connection
    /// could not be opened, or it was refused for an unknown session: 404,
    /// or 400 with a JSON-RPC error without id).
    #[arg(long, value_enum, default_value_t = Replay::Never, requires = "call_tool")]
    pub(crate) replay: Replay,

    /// At most N calls in flight to the server; up to N more wait (at most
    /// 5 s), the rest fail at once.
    #[arg(long, value_name = "N", requires = "call_tool", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_in_flight: Option<u32>,

    /// A circuit breaker on the server's calls: open after 5 consecutive
    /// transport failures, timeouts or 5xx (never tool errors), fail fast
    /// while open, one probe (a ping before the call) after 5 s (doubling
    /// to 60 s).
    #[arg(long, requires = "call_tool")]
    pub(crate) breaker: bool,

    /// Send a throttled call (429 with Retry-After, or JSON-RPC -32023 with
    /// retryAfterMs) once more after the delay it states, if at most 10 s.
    #[arg(long, requires = "call_tool")]
    pub(crate) retry_rate_limited: bool,

    /// A call may go this long without a word from the server; each
    /// progress notification restarts it, and --request-timeout caps the
    /// whole call.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "call_tool")]
    pub(crate) idle_timeout: Option<Duration>,

    /// Send the call a second time when the first has had no answer after
    /// DURATION; the first answer wins, the other is cancelled. Give it
    /// only for a tool that running twice cannot harm (a search, a read).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "call_tool")]
    pub(crate) hedge_after: Option<Duration>,

    /// Another URL of the same server (repeatable): each call goes to the
    /// less loaded replica (of two picked at random), one failing again and
    /// again is left out for a while; a sent tool call is never sent to a
    /// second one.
    #[arg(long = "replica", value_name = "URL", requires_all = ["call_tool", "url"])]
    pub(crate) replicas: Vec<String>,

    /// The pause between repeated calls.
    #[arg(long, value_parser = parse_duration, default_value = "1s", requires = "call_tool")]
    pub(crate) interval: Duration,

    /// With --config in watch mode: read the file again when it changes
    /// (as on SIGHUP), once it has been quiet for 200 ms.
    #[arg(long, requires = "config")]
    pub(crate) watch_config: bool,

    /// `serve` was the first word: the --config file's servers served as
    /// one MCP server.
    #[arg(skip)]
    pub(crate) serve: bool,

    /// With serve: where to listen, Streamable HTTP at http://ADDR/mcp
    /// (another address than loopback needs --bearer-token-env).
    #[arg(
        long,
        value_name = "ADDR",
        requires = "config",
        default_value = "127.0.0.1:8080"
    )]
    pub(crate) listen: std::net::SocketAddr,

    /// With serve: requests must carry `Authorization: Bearer` with one
    /// of the tokens in this environment variable (comma-separated; never
    /// on the command line). Needed to --listen on another address than
    /// loopback.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) bearer_token_env: Option<String>,

    /// With serve: accept OAuth access tokens (JWTs) from this issuer,
    /// checked against the keys its metadata names; clients find it
    /// through the 401's Protected Resource Metadata.
    #[arg(
        long,
        value_name = "URL",
        requires = "config",
        conflicts_with = "stdio"
    )]
    pub(crate) issuer: Option<String>,

    /// With --issuer: the resource tokens must be for (their audience;
    /// default http://LISTEN/mcp).
    #[arg(long, value_name = "URI", requires = "issuer")]
    pub(crate) audience: Option<String>,

    /// With --issuer: a scope every token must grant (repeatable); a
    /// token without it gets 403 naming it.
    #[arg(long, value_name = "SCOPE", requires = "issuer")]
    pub(crate) required_scope: Vec<String>,

    /// With serve: who may see and call which tool, as the Cedar policies
    /// in FILE say (docs/GATEWAY.md has the entity model). Needs the
    /// command built with the `cedar` feature.
    #[arg(long, value_name = "FILE", requires = "config")]
    pub(crate) policy: Option<std::path::PathBuf>,

    /// With serve: each principal's calls, whatever the tool (`10/min`,
    /// `5/s`, `100/hour`); per-tool rates go in the config file's
    /// `"quotas"`. Shared by the replicas through --state-store.
    #[arg(long, value_name = "RATE", requires = "config")]
    pub(crate) quota: Option<mcp_connect::store::Rate>,

    /// With serve: let calls through while the quota store fails (by
    /// default they are refused).
    #[arg(long, requires = "config")]
    pub(crate) quota_fail_open: bool,

    /// With serve: one JSON line per tool call (who, which tool, the
    /// decisions, the outcome, how long, how large; no arguments or
    /// results) appended to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE|-", requires = "config")]
    pub(crate) audit: Option<String>,

    /// With --audit: an argument field the records keep (repeatable; none
    /// by default).
    #[arg(long, value_name = "NAME", requires = "audit")]
    pub(crate) audit_field: Vec<String>,

    /// With serve: a Host name clients may reach the gateway by, besides
    /// the --listen address (repeatable). Others get 403 (DNS rebinding).
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) allowed_host: Vec<String>,

    /// With serve: serve one client on stdin and stdout instead of
    /// listening (the lines the command prints go to stderr).
    #[arg(long, requires = "config")]
    pub(crate) stdio: bool,

    /// With serve: how long a client's session may go unused before it is
    /// gone.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m")]
    pub(crate) session_idle_timeout: Duration,

    /// With serve: how many client sessions may be open at once.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) max_sessions: usize,

    /// With serve: share client sessions with the other replicas of this
    /// gateway through Redis (`redis://...`, sealed with --store-key-env):
    /// a session opened on one replica is served by whichever one a load
    /// balancer picks (it stays held where it was opened).
    #[arg(
        long,
        value_name = "redis://URL",
        requires = "config",
        conflicts_with = "stdio"
    )]
    pub(crate) state_store: Option<String>,

    /// With --state-store: this replica's address as the other replicas
    /// reach it (default: http://LISTEN/mcp).
    #[arg(long, value_name = "URL", requires = "state_store")]
    pub(crate) replica_url: Option<String>,

    /// With serve: how often an open event stream with nothing to say
    /// sends a comment, so that a proxy does not cut it as idle.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "15s")]
    pub(crate) keepalive: Duration,

    /// With --config: remember each server's listing in FILE, or in Redis
    /// (`redis://...`, sealed like --token-store), and start the servers
    /// whose entry says `"lazy": true` from it: their tools are listed at
    /// once, and they connect on their first call.
    #[arg(long, value_name = "FILE|redis://URL", requires = "config")]
    pub(crate) catalogue_cache: Option<std::path::PathBuf>,

    /// Remember each server's era in FILE (read before, written after), or
    /// in Redis (`redis://...`, sealed like --token-store), so the next run
    /// (on any machine sharing the Redis) skips what it already knows.
    #[arg(long, value_name = "FILE|redis://URL")]
    pub(crate) era_cache: Option<String>,

    /// One JSON object per line; the last line is the summary.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The `--prefix` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PrefixMode {
    /// Bare unless two servers offer the same name; a name once given stays.
    Conditional,
    /// `server__tool` for every tool.
    Always,
    /// Names as the servers give them; a collision is refused.
    Never,
}

/// The `--recovery` values.
/// How the command answers elicitation requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Elicit {
    /// Decline every form.
    Decline,
    /// Accept with the schema's defaults.
    Defaults,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Recovery {
    /// One attempt, exactly as configured.
    Off,
    /// Fresh attempts after eligible failures.
    Default,
}

/// The `--replay` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Replay {
    /// No failed call is sent again.
    Never,
    /// A call the server provably never received is sent once more.
    Undelivered,
}

/// The `--transport` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportChoice {
    /// Streamable HTTP for URLs, stdio for commands.
    Auto,
    /// Streamable HTTP.
    StreamableHttp,
    /// Legacy HTTP+SSE (the 2024-11-05 transport).
    Sse,
    /// A stdio child process.
    Stdio,
}
