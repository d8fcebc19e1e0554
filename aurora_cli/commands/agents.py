"""`aurora agents show AGENT`: an agent with its skills at their current versions;
`aurora agents tools AGENT`: the tools an agent can use now, and why each other one is left out.

Available = bound ∩ published ∩ executable (system enabled, app connected, circuit closed), plus
the platform tools this agent and event allow; the gateway computes it and enforces the same set
at call time.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from aurora_cli.commands.pool_admin import RefusedError, admin_call
from aurora_cli.output import EXIT_USAGE, CliError, cli_errors, print_json, run, settings_or_fail, stdout, table
from shared.config.settings import Settings

app = typer.Typer(help="Agents: one with its skills and their versions, and its tools as the gateway serves them.",
                  no_args_is_help=True)


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


async def agent_with_skills(settings: Settings, agent_id: str) -> dict[str, Any]:
    """The stored agent and, for each skill it names, the skill as stored now (or why not)."""
    agent: dict[str, Any] = await admin_call(settings, "agents", "get", {"id": agent_id})
    skills: list[dict[str, Any]] = []
    for name in agent.get("skills") or []:
        try:
            skills.append(await admin_call(settings, "skills", "get", {"id": name}))
        except RefusedError as exc:  # deleted behind the gateway's back: the next run fails on it
            skills.append({"id": name, "missing": str(exc)})
    return {"agent": agent, "skills": skills}


def skill_rows(skills: list[dict[str, Any]]) -> list[list[Any]]:
    return [[s.get("id"), "MISSING" if s.get("missing") else s.get("version"), s.get("updated_at") or "-",
             ", ".join(s.get("tools") or []) or "-",
             s.get("missing") or " ".join(str(s.get("text") or "").split())[:60]] for s in skills]


@app.command("show")
def show(
    agent: Annotated[str, typer.Argument(help="Agent id.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print {agent, skills} as JSON.")] = False,
) -> None:
    """The agent's settings and every skill it names, at the version its next run will use."""
    found = run(agent_with_skills(settings_or_fail(), agent))
    if json_output:
        print_json(found)
        return
    spec = found["agent"]
    model = spec.get("model") or {}
    for line in (f"agent:   {spec.get('id')} ({spec.get('agent_kind')}, "
                 f"{'enabled' if spec.get('enabled', True) else 'DISABLED'})",
                 f"events:  {', '.join(spec.get('events') or []) or '-'}",
                 f"tools:   {', '.join(spec.get('tools') or []) or '-'}",
                 f"model:   {model.get('model') or '(the runner default)'}"):
        stdout.print(line, markup=False)
    if found["skills"]:
        stdout.print(table("skills", ["skill", "version", "updated", "about tools", "text"],
                           skill_rows(found["skills"])))
    else:
        stdout.print("skills:  (none)", markup=False)
