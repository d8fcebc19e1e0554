"""Test MCP app over stdio (lowlevel Server, raw arguments): echo, slow, crash, fail, counter,
set_password, progress and shaped (a tool with an output schema) tools."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

SERVER_NAME = "aurora-test-echo"
IDEMPOTENCY_META_KEY = "aurora/idempotency_key"  # where Aurora's gateway puts a write's key in `_meta`
STARTUP: dict[str, Any] = json.loads(os.environ.get("AURORA_APP_STARTUP") or "{}")

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
WRITE = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or []}


TOOLS = [
    types.Tool(
        name="echo",
        description="Return the exact arguments received, as structured content and as JSON text.",
        input_schema={
            "type": "object",
            "properties": {"value": {"description": "Any JSON value"}, "payload": {"type": "object"}},
            "additionalProperties": True,
        },
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="slow",
        description="Sleep `seconds`, then answer.",
        input_schema=_schema({"seconds": {"type": "number"}}, ["seconds"]),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="crash",
        description="Kill this server process mid-call (exit code 3).",
        input_schema=_schema({}),
        annotations=types.ToolAnnotations(destructive_hint=True),
    ),
    types.Tool(
        name="fail", description="Return an is_error result.", input_schema=_schema({}), annotations=READ_ONLY
    ),
    types.Tool(
        name="unannotated_write",
        description="A write tool without annotations.",
        input_schema=_schema({"x": {"type": "integer"}}, ["x"]),
    ),
    types.Tool(
        name="counter_increment",
        description="Increment the per-key counter in $ECHO_COUNTER_FILE.",
        input_schema=_schema({"key": {"type": "string"}}, ["key"]),
        annotations=WRITE,
    ),
    types.Tool(
        name="keyed_increment",
        description="Increment the per-key counter once per idempotency key (`_meta`): asked again under a key "
                    "it has counted, it answers that count and counts nothing. The first time a key comes, after "
                    "counting: `exit_first` exits (code 3) before answering; `then_sleep` waits that many "
                    "seconds before answering.",
        input_schema=_schema({"key": {"type": "string"}, "exit_first": {"type": "boolean"},
                              "then_sleep": {"type": "number"}}, ["key"]),
        annotations=WRITE,
    ),
    types.Tool(
        name="counter_purge",
        description="A dangerous write (destructive): counts like counter_increment, under the key `purge:<key>`.",
        input_schema=_schema({"key": {"type": "string"}}, ["key"]),
        annotations=types.ToolAnnotations(destructive_hint=True),
    ),
    types.Tool(
        name="counter_get",
        description="Read the per-key counter in $ECHO_COUNTER_FILE.",
        input_schema=_schema({"key": {"type": "string"}}, ["key"]),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="set_password",
        description="A write with secret arguments: answers a digest of the password, never the password.",
        input_schema=_schema({"user": {"type": "string"}, "password": {"type": "string", "format": "password"},
                              "pin": {"type": "string", "writeOnly": True}}, ["user", "password"]),
        annotations=WRITE,
    ),
    types.Tool(
        name="progress",
        description="Send `notes` progress notifications for the call, then answer, all at once.",
        input_schema=_schema({"notes": {"type": "integer", "minimum": 0, "maximum": 50}}, ["notes"]),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="shaped",
        description="A tool with an output schema ({n: integer}) that answers as `answer` says: `right` "
                    "(structured content that fits), `wrong` (structured content that does not), `text` (none).",
        input_schema=_schema({"answer": {"enum": ["right", "wrong", "text"]}}, ["answer"]),
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="get_startup",
        description="Return the parsed AURORA_APP_STARTUP and this process id.",
        input_schema=_schema({}),
        annotations=READ_ONLY,
    ),
]


def _result(data: dict[str, Any], *, is_error: bool = False) -> types.CallToolResult:
    text = json.dumps(data, separators=(",", ":"), sort_keys=True)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=data, is_error=is_error
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _counter(key: str, increment: bool, idempotency_key: str | None = None) -> tuple[int, bool]:
    """Append-only counter file: one JSON line per increment, under an exclusive flock (multi-process
    safe). With an `idempotency_key` already counted, nothing is counted: (count, True)."""
    path = os.environ.get("ECHO_COUNTER_FILE") or STARTUP.get("counter_file")
    if not path:
        raise ValueError("ECHO_COUNTER_FILE is not set")
    with open(path, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            f.seek(0)
            lines = [json.loads(line) for line in f if line.strip()]
            seen = idempotency_key is not None and any(line.get("idempotency_key") == idempotency_key
                                                       for line in lines)
            if increment and not seen:
                line = {"key": key, "pid": os.getpid(), "idempotency_key": idempotency_key}
                f.write(json.dumps(line) + "\n")
                f.flush()
                os.fsync(f.fileno())
                lines.append(line)
            return sum(1 for line in lines if line["key"] == key), seen
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    args = params.arguments or {}
    match params.name:
        case "echo":
            return _result(args)
        case "slow":
            seconds = args.get("seconds")
            if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
                return _error("seconds must be a non-negative number")
            await anyio.sleep(seconds)
            return _result({"slept": seconds})
        case "crash":
            sys.stderr.write("echo_app: crash requested, exiting with 3\n")
            sys.stderr.flush()
            os._exit(3)
        case "fail":
            return _error("intentional failure")
        case "unannotated_write":
            x = args.get("x")
            if not isinstance(x, int) or isinstance(x, bool):
                return _error("x must be an integer")
            return _result({"x": x, "written": True})
        case "counter_increment" | "counter_get" | "counter_purge":
            key = args.get("key")
            if not isinstance(key, str):
                return _error("key must be a string")
            if params.name == "counter_purge":
                key = f"purge:{key}"
            try:
                count, _ = await anyio.to_thread.run_sync(_counter, key, params.name != "counter_get")
            except (OSError, ValueError) as exc:
                return _error(f"counter unavailable: {exc}")
            return _result({"key": key, "count": count})
        case "keyed_increment":
            key, given = args.get("key"), (ctx.meta or {}).get(IDEMPOTENCY_META_KEY)
            if not isinstance(key, str) or not isinstance(given, str):
                return _error("key must be a string, and the call must carry an idempotency key")
            try:
                count, seen = await anyio.to_thread.run_sync(_counter, key, True, given)
            except (OSError, ValueError) as exc:
                return _error(f"counter unavailable: {exc}")
            if args.get("exit_first") and not seen:
                sys.stderr.write("echo_app: counted, exiting before the answer\n")
                sys.stderr.flush()
                os._exit(3)
            if isinstance(args.get("then_sleep"), int | float) and not seen:
                await anyio.sleep(args["then_sleep"])
            return _result({"key": key, "count": count, "again": seen})
        case "set_password":
            user, password = args.get("user"), args.get("password")
            if not isinstance(user, str) or not isinstance(password, str):
                return _error("user and password must be strings")
            digest = hashlib.sha256(f"{password}|{args.get('pin', '')}".encode()).hexdigest()[:16]
            return _result({"user": user, "changed": True, "digest": digest})
        case "progress":
            token = (ctx.meta or {}).get("progress_token")
            notes = int(args.get("notes", 0))
            for n in range(1, notes + 1):  # no await in between that waits: they leave with the answer
                if token is not None:
                    await ctx.session.send_progress_notification(token, n, notes, f"note {n}")
            return _result({"notes": notes, "token": token is not None})
        case "get_startup":
            return _result({"startup": STARTUP, "pid": os.getpid()})
        case "shaped":  # the server does not check its own output: the gateway's SDK client must
            match args.get("answer"):
                case "right":
                    return _result({"n": 1})
                case "wrong":
                    return _result({"n": "one"})
            return types.CallToolResult(content=[types.TextContent(type="text", text="n is 1")])
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")


server = Server(SERVER_NAME, version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
