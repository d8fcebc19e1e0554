"""`aurora schedules list|show|trigger-now|pause|resume`: schedules and their ticks, as the
scheduler serves them (`amp.admin.schedules.*`).

Schedules are created and changed with `aurora apply -f` (`kind: Schedule`); pause and resume
set the resource's `enabled`; trigger-now publishes one `schedule.triggered` besides the ticks.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aurora_cli.commands.pool_admin import admin_call
from aurora_cli.output import print_json, run, settings_or_fail, stdout, table

app = typer.Typer(help="Schedules: list them, show one with its next ticks, trigger one now, pause and resume.",
                  no_args_is_help=True)
JsonOption = Annotated[bool, typer.Option("--json", help="Print the scheduler's answer as JSON.")]
IdArgument = Annotated[str, typer.Argument(help="Schedule id.")]


def _call(verb: str, body: dict[str, Any]) -> Any:
    return run(admin_call(settings_or_fail(), "schedules", verb, body))


def status_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [[s.get("id"), s.get("cadence"), "yes" if s.get("enabled") else "PAUSED",
             "yes" if s.get("catch_up") else "no", s.get("next_tick") or "–", s.get("last_tick") or "–"]
            for s in items]


COLUMNS = ["id", "cadence", "enabled", "catch up", "next tick", "last tick"]


@app.command("list")
def list_schedules(json_output: JsonOption = False) -> None:
    """Every schedule: its cadence, whether it is enabled, its next and last tick (UTC)."""
    reply = _call("list", {})
    if json_output:
        print_json(reply)
        return
    stdout.print(table("schedules", COLUMNS, status_rows(reply.get("items") or [])))


@app.command("show")
def show(schedule: IdArgument, json_output: JsonOption = False) -> None:
    """One schedule: its document, next and last tick, and the next five ticks it will have."""
    reply = _call("show", {"id": schedule})
    if json_output:
        print_json(reply)
        return
    stdout.print(table(f"schedule {schedule} (revision {reply.get('revision')})", COLUMNS, status_rows([reply])))
    upcoming = reply.get("upcoming") or []
    stdout.print(table("upcoming ticks (UTC)", ["tick"], [[t] for t in upcoming] or [["– (paused)"]]))
    data = (reply.get("document") or {}).get("data") or {}
    stdout.print(table("event data", ["key", "value"], [[k, v] for k, v in data.items()]))


@app.command("trigger-now")
def trigger_now(schedule: IdArgument, json_output: JsonOption = False) -> None:
    """Publish one schedule.triggered for the schedule now (besides its ticks; paused ones too)."""
    reply = _call("trigger", {"id": schedule})
    if json_output:
        print_json(reply)
        return
    stdout.print(f"schedule {schedule} triggered: event {reply.get('message_id')} at {reply.get('timestamp')}")


@app.command("pause")
def pause(schedule: IdArgument, json_output: JsonOption = False) -> None:
    """Stop the schedule's ticks (sets enabled: false; missed ticks are not caught up on resume)."""
    _changed(schedule, "pause", json_output)


@app.command("resume")
def resume(schedule: IdArgument, json_output: JsonOption = False) -> None:
    """Start the schedule's ticks again (sets enabled: true); the next tick is the first after now."""
    _changed(schedule, "resume", json_output)


def _changed(schedule: str, verb: str, json_output: bool) -> None:
    reply = _call(verb, {"id": schedule})
    if json_output:
        print_json(reply)
        return
    stdout.print(f"schedule {schedule}: {reply.get('result')}")
