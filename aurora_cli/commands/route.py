"""`aurora route dry-run`, `aurora route trace`: why an event goes where it goes; `aurora route
replay`: route again the stored events that found no route."""

from __future__ import annotations

import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from aurora_cli.commands.apply import DocumentErrors, read_yaml_documents
from aurora_cli.commands.pool_admin import admin_call
from aurora_cli.deadletters import parse_duration
from aurora_cli.output import (
    EXIT_FAILURE,
    EXIT_USAGE,
    CliError,
    cli_errors,
    fail,
    note,
    print_json,
    run,
    settings_or_fail,
    stdout,
)
from shared.clock import now_iso
from shared.config.settings import Settings
from shared.contracts.binding import Binding
from shared.contracts.resource import ResourceError, parse_resource

app = typer.Typer(help="Explain routing (dry runs, route traces); replay events that found no route.",
                  no_args_is_help=True)

DEFAULT_SOURCE = {"app": "aurora.cli", "instance": "default"}


def complete_event(doc: Any, source: str) -> dict[str, Any]:
    """An event for a dry run: a whole envelope, or just its payload; missing header fields are
    filled (id, time, protocol) so a hand-written file stays short."""
    if not isinstance(doc, dict):
        raise CliError(f"{source}: the event must be a JSON object")
    if "payload" not in doc and "type" in doc:
        doc = {"payload": doc}
    header = dict(doc.get("header") or {})
    header.setdefault("protocol", "amp/1.0")
    header.setdefault("method", "aurora/event")
    header.setdefault("message_id", f"dry-run-{uuid.uuid4()}")
    header.setdefault("timestamp", now_iso())
    if "source" not in header:
        note(f"{source}: header.source not given; the dry run uses app {DEFAULT_SOURCE['app']}")
        header["source"] = DEFAULT_SOURCE
    return {**doc, "header": header}


def load_event(path: Path) -> dict[str, Any]:
    try:
        return complete_event(json.loads(path.read_text(encoding="utf-8")), str(path))
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: not JSON: {exc}") from exc


def load_drafts(path: Path) -> list[dict[str, Any]]:
    """Draft bindings for a dry run, each checked here so errors name the file and document."""
    problems: list[str] = []
    drafts: list[dict[str, Any]] = []
    for index, doc in read_yaml_documents(path):
        where = f"{path}: document {index}"
        if not isinstance(doc, dict):
            problems.append(f"{where}: expected a Binding mapping")
            continue
        doc = {"kind": "Binding", **doc}
        where += f" (Binding {doc.get('id')})"
        try:
            parse_resource(Binding, doc)
        except ResourceError as exc:
            problems.extend(f"{where}: field {field}: {reason}" for field, reason in exc.problems)
            continue
        drafts.append(doc)
    if problems:
        raise DocumentErrors(problems)
    return drafts


TRACE_TIMEOUT = 15.0  # seconds: an untraced platform event is looked for in the events stream


async def _ask(settings: Settings, verb: str, body: dict[str, Any], *, timeout: float = 5.0) -> Any:
    return await admin_call(settings, "router", verb, body, timeout=timeout, service="router")


@app.command("dry-run")
def dry_run(
    event: Annotated[Path, typer.Option("--event", help="The event as JSON (an envelope or a payload).")],
    bindings: Annotated[Path | None, typer.Option(
        "--bindings", help="Draft bindings (YAML documents) to use instead of the saved ones.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the router's answer as JSON.")] = False,
) -> None:
    """Which binding and target an event would get, and why not the others; dispatches nothing."""
    settings = settings_or_fail()
    with cli_errors():
        body: dict[str, Any] = {"event": load_event(event)}
        if bindings is not None:
            try:
                body["bindings"] = load_drafts(bindings)
            except DocumentErrors as exc:
                for problem in exc.problems:
                    print(f"error: {problem}", flush=True, file=sys.stderr)
                raise typer.Exit(1) from exc
    reply = run(_ask(settings, "dry_run", body))
    if as_json:
        print_json(reply)
        return
    target = reply.get("target")
    stdout.print(f"status:  {reply.get('status')}", markup=False)
    stdout.print(f"binding: {reply.get('binding_id') or '-'}", markup=False)
    stdout.print(f"target:  {target['type'] + '/' + target['id'] if target else '-'}", markup=False)
    if reply.get("reason"):
        stdout.print(f"reason:  {reply['reason']}", markup=False)
    for step in reply.get("steps") or []:
        mark = "✓" if step.get("passed") else "✗"
        stdout.print(f"  {mark} {step.get('binding_id')}: {step.get('reason')}", markup=False)
        for check in step.get("checks") or []:
            tick = "✓" if check.get("passed") else "✗"
            stdout.print(f"      {tick} {check.get('check')}: {check.get('detail')}", markup=False)


@app.command("trace")
def trace(
    message_id: Annotated[str, typer.Argument(metavar="MESSAGE_ID", help="The event's message id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the trace as JSON.")] = False,
) -> None:
    """How the router routed one event: status, binding, target, run and the bindings it tried."""
    settings = settings_or_fail()
    found = run(_ask(settings, "trace", {"message_id": message_id}, timeout=TRACE_TIMEOUT))
    if as_json:
        print_json(found)
        return
    target = found.get("target")
    rows = [
        ("event", f"{found.get('message_id')} ({found.get('event_type') or '?'} from "
                  f"{found.get('source_app') or '?'}{', synthetic' if found.get('synthetic') else ''})"),
        ("status", f"{found.get('status')}{' (replayed)' if found.get('replayed') else ''}"
                   f"{' (computed now, not stored)' if found.get('computed') else ''}"),
        ("binding", found.get("binding_id") or "-"),
        ("target", f"{target['type']}/{target['id']}" if target else "-"),
        ("run", found.get("run_id") or "-"),
        ("reason", found.get("reason") or "-"),
        ("at", f"{found.get('at')} by {found.get('router') or '?'}"),
    ]
    for name, value in rows:
        stdout.print(f"{name + ':':<9}{value}", markup=False)
    for step in found.get("steps") or []:
        mark = "✓" if step.get("passed") else "✗"
        stdout.print(f"  {mark} {step.get('binding_id')}: {step.get('reason')}", markup=False)


# How each replayed event is shown; `not_found` and `not_replayable` make the command fail.
_OUTCOMES = {"dispatched": "dispatched", "already_dispatched": "already dispatched", "would_dispatch": "would dispatch",
             "no_route": "still no route", "not_replayable": "not replayable", "not_found": "not found"}
REPLAY_TIMEOUT = 60.0  # seconds: a --since replay reads every event stored since then


@app.command("replay")
def replay(
    message_ids: Annotated[list[str] | None, typer.Argument(
        metavar="MESSAGE_ID", help="The events, by message id (`aurora route trace` shows one's status).")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Instead: every event stored within this long (10m, 1h, 2d) that found no route.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show which binding and target each event would get now; dispatch nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the router's answer as JSON.")] = False,
) -> None:
    """Route again stored events that found no route (route_not_found, processor_not_found), with the
    bindings saved now: e.g. events that came before their bindings were applied. Each event is
    dispatched at most once per binding, however often it is replayed ("already dispatched").
    Exit 1 when a named event is not found or was routed otherwise; 2 on a usage error."""
    if bool(message_ids) == (since is not None):
        fail("name events by MESSAGE_ID or choose them with --since (one of the two)", EXIT_USAGE)
    body: dict[str, Any] = {"dry_run": dry_run}
    if message_ids:
        body["message_ids"] = message_ids
    else:
        with cli_errors():
            window = parse_duration("--since", since)
        assert window is not None
        body["since"] = (datetime.now(UTC) - window).isoformat()
    settings = settings_or_fail()
    reply = run(_ask(settings, "replay", body, timeout=REPLAY_TIMEOUT))
    results: list[dict[str, Any]] = reply.get("results") or []
    if as_json:
        print_json(reply)
    else:
        for result in results:
            stdout.print(_replay_line(result), markup=False)
        if since is not None:
            done = sum(1 for r in results if r.get("outcome") in ("dispatched", "would_dispatch"))
            verb = "would be dispatched" if dry_run else "dispatched"
            stdout.print(f"{reply.get('scanned', 0)} event(s) stored in the last {since}; {done} {verb}", markup=False)
            if reply.get("next_since"):
                note(f"more events than one replay looks at: go on from {reply['next_since']}")
    if any(r.get("outcome") in ("not_found", "not_replayable") for r in results):
        raise typer.Exit(EXIT_FAILURE)


def _replay_line(result: dict[str, Any]) -> str:
    outcome = str(result.get("outcome"))
    line = f"{result.get('message_id')}  {_OUTCOMES.get(outcome, outcome)}"
    target = result.get("target")
    if result.get("binding_id"):
        line += f"  binding {result['binding_id']}"
    if isinstance(target, dict):
        line += f" → {target.get('type')}/{target.get('id')}"
    if result.get("run_id"):
        line += f"  run {result['run_id']}"
    if result.get("status") and outcome != "dispatched":
        line += f"  ({result['status']})"
    if result.get("reason"):
        line += f": {result['reason']}"
    return line
