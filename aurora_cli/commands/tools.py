"""`aurora tools list|call`: the live MCP catalog and operator calls through the gateway;
`aurora tools show|review|publish|deprecate|draft|mark`: tool definitions and their lifecycle;
`aurora tools suggest`: a model's wording for a draft, shown as a diff and kept, not applied;
`aurora tools edit`: a reviewer's wording into a draft (by hand or from the suggestion)."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer
from nats.errors import NoRespondersError

from aurora_cli import edit_command, suggest_command
from aurora_cli.commands.pool_admin import RefusedError, admin_call, operator
from aurora_cli.output import (
    EXIT_FAILURE,
    EXIT_USAGE,
    CliError,
    connected,
    fail,
    print_json,
    run,
    settings_or_fail,
    stdout,
    table,
)
from aurora_cli.tool_call import call_tool as call_tool_as_caller
from aurora_cli.tool_call import new_task_id
from shared.config.settings import Settings
from shared.nats.admin_service import admin_request

app = typer.Typer(help="List and call tools; show definitions and move them through their lifecycle.",
                  no_args_is_help=True)

# `tools call` exits 0 only when the tool succeeded; any other status is exit 3, so scripts can
# tell "the call was answered but failed" (3) from "the CLI could not ask" (1); 4: the call waits
# for an approval (not granted, or not within --wait).
EXIT_NOT_OK = 3
EXIT_AWAITING_APPROVAL = 4


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
    wait: Annotated[float | None, typer.Option(
        "--wait", help="When the call needs an approval: wait up to this many seconds for the decision, "
                       "then call again with it.")] = None,
    approval: Annotated[str | None, typer.Option(
        "--approval", help="Present this granted approval (with the --task it was asked for).")] = None,
    task: Annotated[str | None, typer.Option(
        "--task", help="The call's task id (default: a new one); an approval is bound to it.")] = None,
) -> None:
    """Call a tool through the gateway as yourself (your credentials: a person, or the operator).

    A call an approval policy covers, or of a dangerous tool, waits for approvers, as an agent's
    does: it prints the approval's id and how to continue, or with --wait waits for the decision
    and calls again with it. Exit codes: 0 the tool succeeded; 3 answered but not ok (an unknown
    tool, denied, failed, the approval denied or expired); 4 still waiting for an approval; 1 the
    CLI could not ask; 2 bad arguments.
    """
    arguments = parse_arguments(args)
    if approval is not None and task is None:
        raise CliError("--approval needs the --task the approval was asked for (printed with its id)",
                       exit_code=EXIT_USAGE)
    task_id = task or new_task_id()
    result = run(call_tool_as_caller(settings_or_fail(), name, arguments, timeout, task_id=task_id,
                                     approval_id=approval, wait_seconds=wait, report=progress_line))
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
    if result["status"] == "needs_approval":
        print(f"approval {result['approval_id']} waits for approvers; once granted, run:\n"
              f"  aurora tools call {name} --args {shlex.quote(json.dumps(arguments, ensure_ascii=False))} "
              f"--task {task_id} --approval {result['approval_id']}", file=sys.stderr)
        raise typer.Exit(EXIT_AWAITING_APPROVAL)
    if result["status"] != "ok":
        raise typer.Exit(EXIT_NOT_OK)


def progress_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


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


# --------------------------------------------------------------------------- the tool pool
# Definitions (MCP and HTTP tools alike) and their lifecycle DRAFT → REVIEWING → PUBLISHED →
# DEPRECATED, through the gateway's `tools.*` admin endpoints.

LIFECYCLE_REFUSED = "lifecycle_refused"


def refusal_reasons(message: str, action: str, name: str) -> list[str]:
    """Every reason of a `lifecycle_refused` message (`cannot publish X: r1; r2`), one each."""
    prefix = f"cannot {action} {name}: "
    body = message[len(prefix):] if message.startswith(prefix) else message
    return [reason.strip() for reason in body.split("; ") if reason.strip()]


@dataclass(frozen=True)
class Refused:
    """A lifecycle move the gateway refused, with every reason."""

    reasons: list[str]


async def _move(settings: Settings, action: str, body: dict[str, Any]) -> dict[str, Any] | Refused:
    try:
        tool: dict[str, Any] = await admin_call(settings, "tools", action, body)
    except RefusedError as exc:
        if exc.code != LIFECYCLE_REFUSED:
            raise
        return Refused(refusal_reasons(str(exc), action, body["name"]))
    return tool


def _lifecycle(action: str, name: str, note_text: str | None, json_output: bool) -> None:
    body: dict[str, Any] = {"name": name, "by": operator()}
    if note_text:
        body["note"] = note_text
    tool = run(_move(settings_or_fail(), action, body))
    if isinstance(tool, Refused):
        print(f"error: cannot {action} {name}:", file=sys.stderr)
        for reason in tool.reasons:
            print(f"  - {reason}", file=sys.stderr)
        sys.stderr.flush()
        raise typer.Exit(EXIT_FAILURE)
    if json_output:
        print_json(tool)
        return
    stdout.print(f"{tool['name']} is {tool['state']} (version {tool['version']}, by {tool.get('changed_by')})",
                 markup=False)


NoteOption = Annotated[str | None, typer.Option("--note", help="Why: kept in the tool's review notes.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the updated definition as JSON.")]
NameArgument = Annotated[str, typer.Argument(help="Tool name, e.g. im.polaris.qq.send_message.")]


@app.command("review")
def review(name: NameArgument, note_text: NoteOption = None, json_output: JsonOption = False) -> None:
    """DRAFT → REVIEWING: a reviewer is looking at the tool."""
    _lifecycle("review", name, note_text, json_output)


@app.command("publish")
def publish(name: NameArgument, note_text: NoteOption = None, json_output: JsonOption = False) -> None:
    """REVIEWING → PUBLISHED, after validation (a draft is reviewed first); a refusal lists every reason."""
    _lifecycle("publish", name, note_text, json_output)


@app.command("deprecate")
def deprecate(name: NameArgument, note_text: NoteOption = None, json_output: JsonOption = False) -> None:
    """→ DEPRECATED: the tool leaves every agent's available set and calls are denied."""
    _lifecycle("deprecate", name, note_text, json_output)


@app.command("draft")
def draft(name: NameArgument, note_text: NoteOption = None, json_output: JsonOption = False) -> None:
    """REVIEWING or DEPRECATED → DRAFT: back to editing (e.g. to publish a deprecated tool again)."""
    _lifecycle("draft", name, note_text, json_output)


class SideEffectChoice(StrEnum):
    read = "read"
    write = "write"
    dangerous = "dangerous"


@app.command("mark")
def mark(
    name: NameArgument,
    capability: Annotated[str | None, typer.Option(
        "--capability", help="The business capability the tool provides ('' clears it).")] = None,
    preferred: Annotated[bool | None, typer.Option(
        "--preferred/--not-preferred", help="Whether this tool wins among tools of the same capability.")] = None,
    side_effect: Annotated[SideEffectChoice | None, typer.Option(
        "--side-effect", help="What the tool does (before it is published): an imported A2A skill is a write "
                              "until marked.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Name a tool's capability and mark the winner when an MCP and an HTTP tool provide the same one."""
    if capability is None and preferred is None and side_effect is None:
        fail("give --capability, --preferred/--not-preferred and/or --side-effect", EXIT_USAGE)
    body: dict[str, Any] = {"name": name, "by": operator()}
    if capability is not None:
        body["capability"] = capability
    if preferred is not None:
        body["preferred"] = preferred
    if side_effect is not None:
        body["side_effect"] = side_effect.value
    tool = run(admin_call(settings_or_fail(), "tools", "mark", body))
    if json_output:
        print_json(tool)
        return
    stdout.print(f"{tool['name']}: capability {tool.get('capability') or '-'}, "
                 f"{'preferred' if tool.get('preferred') else 'not preferred'}, {tool.get('side_effect')}",
                 markup=False)


@app.command("show")
def show(
    name: NameArgument,
    json_output: Annotated[bool, typer.Option("--json", help="Print the definition as JSON.")] = False,
) -> None:
    """A tool's definition: state, version, side effect, execution mapping, what is missing, notes."""
    tool = run(admin_call(settings_or_fail(), "tools", "get", {"id": name}))
    if json_output:
        print_json(tool)
        return
    for line in definition_lines(tool):
        stdout.print(line, markup=False)


def execution_lines(execution: dict[str, Any]) -> list[str]:
    if execution.get("kind") == "mcp":
        instance = execution.get("instance") or "default"
        return [f"execution:    mcp tool {execution.get('tool')!r} of app {execution.get('app')} ({instance})"]
    if execution.get("kind") == "a2a":
        return [f"execution:    a2a skill {execution.get('skill')!r} of the remote agent (its task followed)"]
    lines = [f"execution:    http {execution.get('method')} {execution.get('path')}"
             + (f"  (operation {execution['operation_id']})" if execution.get("operation_id") else "")]
    for param in execution.get("params") or []:
        wire = f" as {param['wire_name']!r}" if param.get("wire_name") else ""
        required = ", required" if param.get("required") else ""
        lines.append(f"  {param.get('name')} → {param.get('location')}{wire}{required}")
    if execution.get("body_param"):
        lines.append(f"  {execution['body_param']} → the JSON body")
    return lines


def parameter_lines(schema: dict[str, Any]) -> list[str]:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if not properties:
        return ["parameters:   (none)"]
    lines = ["parameters:"]
    for key, spec in properties.items():
        about = spec.get("description") if isinstance(spec, dict) else None
        lines.append(f"  {key}: {type_of(spec)}{' (required)' if key in required else ''}"
                     + (f" — {about}" if about else ""))
    return lines


def type_of(schema: Any) -> str:
    """A JSON Schema's type in a few characters: `string`, `integer|null`, `array of string`, `Pet`."""
    if not isinstance(schema, dict):
        return "any"
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        text = "|".join(map(str, kinds))
        if "array" in kinds and isinstance(schema.get("items"), dict):
            text += f" of {type_of(schema['items'])}"
        return text
    for combinator in ("anyOf", "oneOf"):
        if isinstance(schema.get(combinator), list):
            return "|".join(dict.fromkeys(type_of(option) for option in schema[combinator]))
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "enum" in schema:
        return "enum"
    return "any"


def definition_lines(tool: dict[str, Any]) -> list[str]:
    """A definition for a person, every field a reviewer decides on."""
    lines = [
        f"name:         {tool.get('name')}",
        f"state:        {tool.get('state')} (version {tool.get('version')})",
        f"system:       {tool.get('system')} (source {tool.get('source')})",
        f"side effect:  {tool.get('side_effect')}",
        f"description:  {' '.join(str(tool.get('description') or '(empty)').split())}",
    ]
    if tool.get("capability") or tool.get("preferred"):
        lines.append(f"capability:   {tool.get('capability') or '-'}"
                     + (" (preferred)" if tool.get("preferred") else ""))
    lines += execution_lines(tool.get("execution") or {})
    lines += parameter_lines(tool.get("input_schema") or {})
    missing = tool.get("missing") or []
    lines.append("missing:      (nothing)" if not missing else "missing:")
    lines += [f"  - {item}" for item in missing]
    lines.append(f"changed:      {tool.get('changed_at') or '-'} by {tool.get('changed_by') or '-'}")
    suggested = tool.get("suggestion")
    if suggested:
        lines.append(f"suggestion:   by model {suggested.get('model')} for version {suggested.get('for_version')}, "
                     f"{suggested.get('at')} (not applied; aurora tools suggest {tool.get('name')} --show)")
    edited = tool.get("edited")
    if edited:
        lines.append(f"edited:       by {edited.get('by')} for version {edited.get('version')}, {edited.get('at')}"
                     + (f", from model {edited['from_model']}'s suggestion" if edited.get("from_model") else "")
                     + " (kept over the source's wording)")
    notes = tool.get("notes") or []
    if notes:
        lines.append("notes:")
        lines += [f"  {n.get('at')}  {n.get('by')}  {n.get('action')}" + (f": {n['note']}" if n.get("note") else "")
                  for n in notes]
    return lines



suggest_command.register(app)  # `aurora tools suggest` (its own module: aurora_cli/suggest_command.py)
edit_command.register(app)  # `aurora tools edit` (aurora_cli/edit_command.py)
