"""The Python SDK's client (mcp 2.3.0) through `mcp-connect serve`: lists
and calls the tools of two members (an HTTP and a stdio server-everything,
each tool under its member's name), receives progress, cancels a call, and
answers the sampling and elicitation requests a member sends (in a 2025
session as requests on the call's stream, in 2026-07-28 as input_required
rounds). Exits non-zero at the first thing that is not so.

usage: python python_client.py URL (legacy | 2026-07-28)
"""

import asyncio
import sys

import mcp_types as types
from mcp.client import Client


async def sampled(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="python canned reply"),
        model="canned",
        stop_reason="endTurn",
    )


async def elicited(context, params):
    schema = getattr(params, "requested_schema", None) or {}
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    defaults = {k: v["default"] for k, v in properties.items() if isinstance(v, dict) and "default" in v}
    return types.ElicitResult(action="accept", content=defaults)


def text(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def main(url: str, mode: str) -> None:
    async with Client(
        url,
        mode=mode,
        sampling_callback=sampled,
        elicitation_callback=elicited,
    ) as client:
        # Both members may still be starting: their tools show once they are
        # (a tool both offer, under each member's name).
        for _ in range(200):
            names = {tool.name for tool in (await client.list_tools()).tools}
            if {"http__get-sum", "stdio__get-sum"} <= names:
                break
            await asyncio.sleep(0.1)
        for member in ("http", "stdio"):
            assert f"{member}__get-sum" in names, sorted(names)
            summed = await client.call_tool(f"{member}__get-sum", {"a": 2, "b": 3})
            assert "5" in text(summed), text(summed)
        print("listed and called both members")

        reports = []

        async def progress(done, total, message):
            reports.append(done)

        await client.call_tool(
            "http__trigger-long-running-operation",
            {"duration": 1, "steps": 4},
            progress_callback=progress,
        )
        assert len(reports) >= 2, reports
        print(f"progress: {len(reports)} reports")

        # A call cancelled while it runs: the client gives up at once and
        # the gateway goes on answering.
        started = asyncio.get_running_loop().time()
        call = asyncio.create_task(
            client.call_tool("http__trigger-long-running-operation", {"duration": 30, "steps": 3})
        )
        await asyncio.sleep(0.5)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            pass
        assert asyncio.get_running_loop().time() - started < 5
        summed = await client.call_tool("http__get-sum", {"a": 1, "b": 1})
        assert "2" in text(summed), text(summed)
        print("cancelled a call")

        assert "http__trigger-sampling-request" in names, sorted(names)
        result = await client.call_tool("http__trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
        assert "python canned reply" in text(result), text(result)
        result = await client.call_tool("http__trigger-elicitation-request", {})
        assert not result.is_error, text(result)
        print(f"answered a member's sampling and elicitation ({mode})")


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), 120))
