"""A Python `mcp` (official SDK v2) server for interop tests.

Usage: python_server.py stdio | sse PORT | streamable-http PORT [IDLE_TIMEOUT_SECONDS]
Binds 127.0.0.1 only.
"""
import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("python-peer", version="2.3.0-peer")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def echo(message: str) -> str:
    """Returns its message."""
    return message


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
