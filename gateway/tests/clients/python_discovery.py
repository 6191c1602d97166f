"""The Python SDK's client (mcp 2.3.0) through `mcp-connect serve --discovery
always`, in front of a lazy member: `find` lists exactly the three
meta-tools, finds a tool by what it does with search_tools and reads its
schema with describe_tool (answered from the remembered catalogue, the member
not running); `call` calls that tool through call_tool (the member connected
for it). Exits non-zero at the first thing that is not so.

usage: python python_discovery.py URL (find | call) (legacy | 2026-07-28)
"""

import asyncio
import json
import sys

from mcp.client import Client


def text(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def main(url: str, step: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:
        if step == "find":
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
            assert names == ["call_tool", "describe_tool", "search_tools"], names
            found = await client.call_tool("search_tools", {"query": "add two numbers together"})
            assert not found.is_error, text(found)
            tools = json.loads(text(found))["tools"]
            names = [tool["name"] for tool in tools]
            assert "get-sum" in names[:3], names
            print(f"found get-sum among {len(tools)} ({mode}): {names[:3]}")
            described = await client.call_tool("describe_tool", {"name": "get-sum"})
            schema = json.loads(text(described))["tool"]["inputSchema"]
            assert {"a", "b"} <= set(schema["properties"]), schema
            print("described get-sum")
        else:
            called = await client.call_tool(
                "call_tool", {"name": "get-sum", "arguments": {"a": 2, "b": 3}}
            )
            assert not called.is_error, text(called)
            assert "5" in text(called), text(called)
            print(f"called get-sum through call_tool ({mode}): {text(called)}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
