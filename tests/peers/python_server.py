"""A Python `mcp` (official SDK v2) server for interop tests.

Usage: python_server.py stdio | sse PORT | streamable-http PORT [IDLE_TIMEOUT_SECONDS]
Binds 127.0.0.1 only.
"""
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve

mcp = MCPServer("python-peer", version="2.3.0-peer")


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


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "stdio":
        mcp.run("stdio")
    elif mode == "sse":
        mcp.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        kwargs = {}
        if len(sys.argv) > 3:
            kwargs["session_idle_timeout"] = float(sys.argv[3])
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]),
                stateless_http=False, json_response=False, **kwargs)
