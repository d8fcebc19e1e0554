"""`aurora agents tools AGENT`: the tools an agent can use now, and why each other one is left out.

Available = bound ∩ published ∩ executable (system enabled, app connected, circuit closed), plus
the platform tools this agent and event allow; the gateway computes it and enforces the same set
at call time.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from aurora_cli.commands.pool_admin import admin_call
from aurora_cli.output import EXIT_USAGE, CliError, cli_errors, print_json, run, settings_or_fail, stdout, table

app = typer.Typer(help="Agents' tool sets as the gateway serves them.", no_args_is_help=True)


def parse_delivery(raw: str | None) -> dict[str, Any] | None:
    """`--delivery` is a run's delivery context as JSON, e.g. {"reply_target": {"app": …, "session_id": …}}."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"--delivery is not JSON: {exc}", exit_code=EXIT_USAGE) from exc
    if not isinstance(value, dict):
        raise CliError('--delivery must be a JSON object, e.g. \'{"reply_target": {"app": "im.polaris.qq", '
                       '"session_id": "group_1"}}\'', exit_code=EXIT_USAGE)
    return value


def available_rows(reply: dict[str, Any]) -> list[list[Any]]:
    return [[t.get("name"), t.get("side_effect"), t.get("llm_name")] for t in reply.get("available") or []]


def excluded_rows(reply: dict[str, Any]) -> list[list[Any]]:
    return [[e.get("tool"), e.get("reason"), e.get("detail")] for e in reply.get("excluded") or []]


@app.command("tools")
def agent_tools(
    agent: Annotated[str, typer.Argument(help="Agent id.")],
    delivery: Annotated[str | None, typer.Option(
        "--delivery", help="A run's delivery context as JSON, to see which platform tools an event allows.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the gateway's answer as JSON.")] = False,
) -> None:
    """The agent's available tools and, for every bound or platform tool left out, the reason."""
    with cli_errors():
        body: dict[str, Any] = {"agent": agent}
        parsed = parse_delivery(delivery)
        if parsed is not None:
            body["delivery"] = parsed
    reply = run(admin_call(settings_or_fail(), "agents", "tools", body))
    if json_output:
        print_json(reply)
        return
    state = "" if reply.get("enabled", True) else " (agent DISABLED)"
    stdout.print(table(f"agent {agent}: available tools{state}", ["tool", "side effect", "llm name"],
                       available_rows(reply)))
    excluded = excluded_rows(reply)
    if excluded:
        stdout.print(table("left out", ["tool", "reason", "detail"], excluded))
