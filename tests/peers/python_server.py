"""A Python `mcp` (official SDK v2) server for interop tests.

Usage: python_server.py stdio | sse PORT | streamable-http PORT [IDLE_TIMEOUT_SECONDS]
       | streamable-http-uds SOCKET_PATH
Binds 127.0.0.1 only (or the Unix socket: its ASGI app under uvicorn's `uds`). With MCP_PEER_CACHE_TTL_MS set, every cacheable result
(server/discover included) carries that ttlMs and cacheScope "public" (SEP-2549).
"""
import os
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve

def _cache_hints():
    ttl = os.environ.get("MCP_PEER_CACHE_TTL_MS")
    if not ttl:
        return None
    from mcp.server.caching import CACHEABLE_METHODS, CacheHint

    return {method: CacheHint(ttl_ms=int(ttl), scope="public") for method in CACHEABLE_METHODS}


mcp = MCPServer("python-peer", version="2.3.0-peer", cache_hints=_cache_hints())

# The SDK's own spans (it reads SEP-414 trace context from `params._meta`),
# kept in memory for the `traced_spans` tool.
from opentelemetry import trace as _trace
from opentelemetry.sdk.trace import TracerProvider as _Provider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor as _Simple
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter as _Memory,
)

_spans = _Memory()
_provider = _Provider()
_provider.add_span_processor(_Simple(_spans))
_trace.set_tracer_provider(_provider)


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def echo(message: str) -> str:
    """Returns its message."""
    return message


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


@mcp.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets whoever the client names (asked through elicitation)."""
    return f"Hello, {who.name}!"


@mcp.resource("note://config")
def config() -> str:
    """A resource whose updates `touch` announces."""
    return "v1"


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Announces a tools list change and an update of `uri`."""
    await ctx.notify_tools_changed()
    await ctx.notify_resource_updated(uri)
    return "touched"


@mcp.tool()
def traced_spans() -> str:
    """The server's finished spans as JSON: name, trace id, parent span id."""
    import json

    return json.dumps([
        {
            "name": span.name,
            "trace_id": format(span.context.trace_id, "032x"),
            "parent_span_id": format(span.parent.span_id, "016x") if span.parent else None,
        }
        for span in _spans.get_finished_spans()
    ])


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "stdio":
        mcp.run("stdio")
    elif mode == "streamable-http-uds":
        import uvicorn

        app = mcp.streamable_http_app(stateless_http=False, json_response=False)
        uvicorn.run(app, uds=sys.argv[2], log_level="warning")
    elif mode == "sse":
        mcp.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        kwargs = {}
        if len(sys.argv) > 3:
            kwargs["session_idle_timeout"] = float(sys.argv[3])
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]),
                stateless_http=False, json_response=False, **kwargs)
