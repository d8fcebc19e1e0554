"""`aurora tasks list|show|cancel`: the runner's durable tasks, their steps and results.

Answered by the runners (`amp.admin.tasks.*`); `list` and `show` read the tasks bucket directly
when no runner is running, which is exactly when one wants to see what they left behind.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec
import typer
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.js.errors import BucketNotFoundError

from aurora_cli.output import (
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
from aurora_cli.timing import took
from shared.config.settings import Settings
from shared.contracts.task import TASK_STATES, TERMINAL_STATES, decode_task
from shared.jetstream.kvmirror import read_all
from shared.jetstream.streams import tasks_bucket
from shared.nats.admin_service import AdminRequestError, admin_request

app = typer.Typer(help="Runner tasks: list them, show one with its steps, cancel one.", no_args_is_help=True)


@app.command("list")
def list_tasks(
    state: Annotated[str | None, typer.Option("--state", help=f"Only tasks in this state ({', '.join(TASK_STATES)}).")]
    = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's tasks.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many, newest first.")] = 50,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Tasks, newest first: state, target, event, attempts, steps, delivery."""
    if state is not None and state not in TASK_STATES:
        fail(f"unknown state {state!r}; known: {', '.join(TASK_STATES)}", EXIT_USAGE)
    body: dict[str, Any] = {"limit": limit}
    if state:
        body["state"] = state
    if agent:
        body["agent"] = agent
    result = run(_list(settings_or_fail(), body))
    if json_output:
        print_json(result)
        return
    rows = [[t["id"], t["state"], f"{t['target']['type']}:{t['target']['id']}", t.get("event_type"),
             t.get("attempts"), t.get("steps"), "yes" if t.get("delivered") else "no", t.get("error"),
             t.get("updated_at")] for t in result["items"]]
    stdout.print(table(f"tasks ({len(rows)} of {result['count']})",
                       ["id", "state", "target", "event", "attempts", "steps", "delivered", "error", "updated"], rows))


@app.command("show")
def show(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="The task id (= the run id).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the task as JSON.")] = False,
) -> None:
    """One task: its state and history, and every step with arguments and results."""
    task = run(_get(settings_or_fail(), task_id))
    if json_output:
        print_json(task)
        return
    target = task["target"]
    stdout.print(f"task {task['id']}  state: {task['state']}", markup=False)
    for label, value in (
        ("target", f"{target['type']} {target['id']} (binding {task['binding_id']})"),
        ("agent", task.get("agent")),
        ("event", f"{task.get('event_type')} {task.get('event_id')} from {task.get('source_app')}"),
        ("session", task.get("session_id")),
        ("attempts", f"{task.get('attempts')} (runner {task.get('runner')})"),
        ("reply target", json.dumps(task["delivery"]["reply_target"], ensure_ascii=False)
         if task["delivery"].get("reply_target") else "none (nothing is delivered)"),
        ("delivered", "yes" if task.get("delivered") else "no"),
        ("took", task_took(task)),
        ("answer", task.get("answer")),
        ("error", f"{task['error']['code']}: {task['error']['message']}" if task.get("error") else None),
        ("check", task.get("check")),
        ("approval", task.get("approval_id")),
        ("cancel requested", task.get("cancel_requested")),
        _retry_line(task),
    ):
        if value is not None:
            stdout.print(f"  {label}: {value}", markup=False)
    stdout.print(table("steps", STEP_COLUMNS, [step_row(step) for step in task.get("steps") or []]))
    stdout.print(table("history", ["at", "state", "by", "reason"],
                       [[t["at"], t["to"], t["by"], t.get("reason")] for t in task.get("transitions") or []]))


@app.command("cancel")
def cancel(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="The task id.")],
    by: Annotated[str, typer.Option("--by", help="Who cancels (recorded in the task).")] = "operator",
    reason: Annotated[str | None, typer.Option("--reason", help="Why (recorded in the task).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Cancel a task: a waiting one at once, a running one at its next step."""
    body: dict[str, Any] = {"id": task_id, "by": by}
    if reason:
        body["reason"] = reason
    result = run(_cancel(settings_or_fail(), body))
    if json_output:
        print_json(result)
        return
    stdout.print(f"{result['id']}: {result['result'].replace('_', ' ')} (state {result['state']})", markup=False)


def _retry_line(task: dict[str, Any]) -> tuple[str, str | None]:
    """A task waiting to retry a call whose target was unavailable (or that waited before)."""
    wait = task.get("retry")
    if not wait:
        return "waiting", None
    what = (f"step {wait['step']}: {wait['code']}: {wait['message']}; try {wait['tries']} "
            f"(since {wait['since']})")
    if task["state"] == "queued":
        return "waiting", f"{what}; next try at {wait['next_try_at']}, until {wait['until']}"
    return "waited", what


def _short(value: Any, limit: int = 60) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def step_row(step: dict[str, Any]) -> list[Any]:
    output = step.get("structured") if step.get("structured") is not None else step.get("text")
    if step.get("error"):
        output = f"{step['error']['code']}: {step['error']['message']}"
    ids = ", ".join(f"{k}={v}" for k, v in (step.get("business_ids") or {}).items())
    details = "; ".join(part for part in (ids, step.get("note") or "") if part)
    result = step.get("classification") if step["status"] == "finished" else step["status"]
    return [step["id"], step["kind"], step["name"], result, took(step.get("started_at"), step.get("finished_at")),
            _short(step.get("arguments"), 40), _short(output, 50), _short(details, 60)]


STEP_COLUMNS = ("id", "kind", "name", "result", "took", "arguments", "output", "details")


def task_took(task: dict[str, Any]) -> str | None:
    """A finished task's time from its run's arrival at a runner to its end (None: not finished)."""
    history = task.get("transitions") or []
    if task.get("state") not in TERMINAL_STATES or not history:
        return None
    return took(history[0].get("at"), history[-1].get("at"))


async def _ask(nc: NATS, settings: Settings, verb: str, body: dict[str, Any]) -> Any:
    try:
        return await admin_request(nc, settings.subjects, "tasks", verb, body, timeout=10.0)
    except AdminRequestError as exc:
        raise CliError(str(exc)) from exc


async def _stored(nc: NATS, settings: Settings) -> list[dict[str, Any]]:
    """Every task, read from the tasks bucket (no runner needed)."""
    try:
        kv = await nc.jetstream().key_value(tasks_bucket(settings.subjects).name)
    except BucketNotFoundError:
        return []
    return [msgspec.to_builtins(decode_task(value)) for value in (await read_all(kv)).values()]


async def _list(settings: Settings, body: dict[str, Any]) -> dict[str, Any]:
    async with connected(settings.nats) as nc:
        try:
            result: dict[str, Any] = await _ask(nc, settings, "list", body)
            return result
        except NoRespondersError:
            pass
        tasks = [t for t in await _stored(nc, settings)
                 if body.get("state") in (None, t["state"]) and body.get("agent") in (None, t.get("agent"))]
    tasks.sort(key=lambda t: (t["created_at"], t["id"]), reverse=True)
    items = [{"id": t["id"], "state": t["state"], "target": t["target"], "agent": t.get("agent"),
              "event_type": t.get("event_type"), "session_id": t.get("session_id"), "created_at": t["created_at"],
              "updated_at": t["updated_at"], "attempts": t.get("attempts"), "steps": len(t.get("steps") or []),
              "delivered": t.get("delivered"), "error": (t.get("error") or {}).get("code"),
              "synthetic": t.get("synthetic")} for t in tasks[: body["limit"]]]
    return {"items": items, "count": len(tasks)}


async def _get(settings: Settings, task_id: str) -> dict[str, Any]:
    async with connected(settings.nats) as nc:
        try:
            result: dict[str, Any] = await _ask(nc, settings, "get", {"id": task_id})
            return result
        except NoRespondersError:
            pass
        for task in await _stored(nc, settings):
            if task["id"] == task_id:
                return task
    raise CliError(f"no task {task_id!r}")


async def _cancel(settings: Settings, body: dict[str, Any]) -> dict[str, Any]:
    async with connected(settings.nats) as nc:
        try:
            result: dict[str, Any] = await _ask(nc, settings, "cancel", body)
        except NoRespondersError as exc:
            raise CliError("no runner is running (nobody answers amp.admin.tasks.cancel)") from exc
    return result
