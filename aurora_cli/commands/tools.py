"""`aurora tools list|call`: the tool catalog and operator calls through the gateway."""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any

import msgspec
import typer
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli.output import CliError, connected, print_json, run, settings_or_fail, stdout, table
from shared.admin import admin_request
from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.toolcall import METHOD_CALL, ToolCallEnvelope, ToolCallRequest, decode_result
from shared.settings import Settings

app = typer.Typer(help="List tools and call them as the operator.", no_args_is_help=True)

# `tools call` exits 0 only when the tool succeeded; any other status is exit 3, so scripts can
# tell "the call was answered but failed" (3) from "the CLI could not ask" (1).
EXIT_NOT_OK = 3


@app.command("list")
def list_tools(
    app_id: Annotated[str | None, typer.Option("--app", help="Only this app's tools (app id).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Prefixed tool names, descriptions and input schemas."""
    tools = run(_tools(settings_or_fail(), app_id))
    if json_output:
        print_json(tools)
        return
    stdout.print(
        table(
            "tools",
            ["name", "side effect", "description", "parameters"],
            [
                [
                    t["name"],
                    t["side_effect"],
                    (t["description"] or "").split("\n")[0][:70],
                    ", ".join(sorted((t["input_schema"].get("properties") or {}).keys())),
                ]
                for t in tools
            ],
        )
    )


@app.command("call")
def call_tool(
    name: Annotated[str, typer.Argument(help="Prefixed tool name, e.g. im.polaris.weather.get_weather.")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the tool.")] = 30.0,
    json_output: Annotated[bool, typer.Option("--json", help="Print the result payload as JSON.")] = False,
) -> None:
    """Call a tool through the gateway as the operator; prints status and content."""
    arguments = parse_arguments(args)
    result = run(_call(settings_or_fail(), name, arguments, timeout))
    if json_output:
        print_json(result)
    else:
        stdout.print(f"status: {result['status']}", markup=False)
        if result.get("error"):
            stdout.print(f"error: {result['error']['code']}: {result['error']['message']}", markup=False)
        for block in result.get("content") or []:
            stdout.print(
                block.get("text") if block.get("type") == "text" else json.dumps(block, ensure_ascii=False),
                markup=False,
            )
    if result["status"] != "ok":
        raise typer.Exit(EXIT_NOT_OK)


def parse_arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"--args is not JSON: {exc}", exit_code=2) from exc
    if not isinstance(value, dict):
        raise CliError('--args must be a JSON object, e.g. \'{"city": "北京"}\'', exit_code=2)
    return value


async def _tools(settings: Settings, app_id: str | None) -> list[dict[str, Any]]:
    async with connected(settings.nats) as nc:
        try:
            tools = await admin_request(nc, settings.subjects, "gateway", "tools", {"app": app_id})
        except NoRespondersError as exc:
            raise CliError("no mcp-gateway is running (nobody answers amp.admin.gateway.tools)") from exc
        return list(tools)


async def _call(settings: Settings, name: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
    envelope = ToolCallEnvelope(
        header=Header(
            method=METHOD_CALL, message_id=str(uuid.uuid4()), timestamp=now_iso(), source=Source(app="aurora.cli")
        ),
        payload=ToolCallRequest(tool=name, arguments=arguments, timeout_seconds=timeout),
    )
    async with connected(settings.nats) as nc:
        try:
            reply = await nc.request(settings.subjects.tool_call, msgspec.json.encode(envelope), timeout=timeout + 5)
        except NoRespondersError as exc:
            raise CliError(f"no mcp-gateway is running (nobody answers {settings.subjects.tool_call})") from exc
        except NatsTimeoutError as exc:
            raise CliError(f"the gateway did not answer within {timeout + 5:g}s") from exc
    result: dict[str, Any] = msgspec.to_builtins(decode_result(reply.data).payload)
    return result
