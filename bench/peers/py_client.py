"""The Python SDK 2.3 `Client`, timed by the rtt bench.

Usage: py_client.py URL MODE RUNS TOOL ARGS_JSON, MODE auto or prior (a
version pin with the `prior_discover` of a warm-up run). Each run builds a
new `Client` as the SDK's docs show; one JSON line per run with
establish_ms and first_result_ms, after a warm-up run.
"""
import asyncio
import json
import sys
import time

from mcp.client.client import Client


async def once(url, mode, prior, tool, arguments):
    kwargs = {"mode": "auto"}
    if mode == "prior":
        kwargs = {"mode": "2026-07-28", "prior_discover": prior}
    start = time.perf_counter()
    async with Client(url, **kwargs) as client:
        established = time.perf_counter()
        await client.call_tool(tool, arguments)
        done = time.perf_counter()
        discover = getattr(client.session, "discover_result", None)
    return (established - start) * 1000, (done - start) * 1000, discover


async def main():
    url, mode, runs, tool, args = sys.argv[1:6]
    arguments = json.loads(args)
    prior = None
    if mode == "prior":
        from mcp.client.session import ClientSession  # noqa: F401
        async with Client(url, mode="auto") as client:
            prior = await client.session.discover()
    await once(url, mode, prior, tool, arguments)
    for _ in range(int(runs)):
        establish, first, _ = await once(url, mode, prior, tool, arguments)
        print(json.dumps({"establish_ms": establish, "first_result_ms": first}), flush=True)


asyncio.run(main())
