"""The official Python MCP SDK (`mcp` from PyPI, pinned in .ci/run) as a client of the hub.

One streamable-HTTP session, opened with the initialize handshake against FAROS_MCP_URL with
FAROS_MCP_TOKEN as bearer, trusting the CA in FAROS_MCP_CA. Driven by e2e/tests/replicas.rs over
JSON lines (the protocol of README.md in this folder, shared with client.mjs):

  stdin  {"op": "list"} | {"op": "call", "name": ..., "arguments": {...}} | {"op": "close"}
  stdout {"event": "ready", ...} once initialized; one reply per command, in order
         ({"op": ..., ...} or {"op": ..., "error": "..."}); {"event": "tools/list_changed"}
         whenever the server sends that notification.
"""

import json
import os
import ssl
import sys

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def emit(line: dict) -> None:
    # One line per message, flushed: the test reads them as they come.
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def on_message(message) -> None:
    # Notifications arrive here (on the session's standalone GET stream) while a command may be
    # running; a notification's line is written whole, so lines never interleave.
    if isinstance(message, types.ToolListChangedNotification):
        emit({"event": "tools/list_changed"})


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def run(command: dict, client: Client) -> dict:
    op = command.get("op")
    if op == "list":
        listed = await client.list_tools()
        return {"op": op, "tools": sorted(t.name for t in listed.tools)}
    if op == "call":
        result = await client.call_tool(command["name"], command.get("arguments") or {})
        return {"op": op, "isError": bool(result.is_error), "text": text_of(result)}
    return {"op": op, "error": f"unknown op {op!r}"}


async def main() -> None:
    url = os.environ["FAROS_MCP_URL"]
    trust = ssl.create_default_context(cafile=os.environ["FAROS_MCP_CA"])
    # The SDK's own timeouts (30 s, and 300 s to read a stream), the test CA as the only trust.
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {os.environ['FAROS_MCP_TOKEN']}"},
        timeout=httpx2.Timeout(30.0, read=300.0),
        verify=trust,
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        # "legacy" is the initialize handshake (the hub's streamable HTTP is a 2025 server); "auto"
        # would probe the 2026 `server/discover` first.
        async with Client(transport, mode="legacy", message_handler=on_message) as client:
            emit({"event": "ready", "protocolVersion": client.protocol_version})
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                if not line:
                    return
                command = json.loads(line)
                if command.get("op") == "close":
                    emit({"op": "close"})
                    return
                try:
                    emit(await run(command, client))
                except Exception as e:  # noqa: BLE001 - the test reads the failure from the reply
                    emit({"op": command.get("op"), "error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    anyio.run(main)
