"""`aurora audit tail`: the audit stream, one record per tool call, read with an ordered consumer
(nothing is left behind on the server)."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError

from aurora_cli.output import (
    EXIT_USAGE,
    CliError,
    cli_errors,
    connected,
    note,
    print_json,
    run,
    settings_or_fail,
    stdout,
)
from shared.config.settings import Settings
from shared.errors import SubjectError

app = typer.Typer(help="Read the audit log of tool calls.", no_args_is_help=True)

EXCERPT = 60


def audit_subject(settings: Settings, app_id: str | None) -> str:
    if app_id is None:
        return settings.subjects.audit_all
    try:
        return settings.subjects.audit(app_id)
    except SubjectError as exc:
        raise CliError(f"--app: {exc}", exit_code=EXIT_USAGE) from exc


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def audit_line(data: bytes) -> str:
    """One readable line: time, caller, tool, status, duration, then what explains the outcome."""
    try:
        record: dict[str, Any] = json.loads(data)
        clock = str(record.get("at") or "")[11:23] or "-"
        parts = [clock, str(record["caller"]), str(record["tool"]), str(record["status"]),
                 f"{float(record.get('duration_ms') or 0):.1f}ms"]
        if record.get("synthetic"):
            parts.append("[synthetic]")
        if record.get("sent_again"):
            parts.append(f"[sent again x{record['sent_again']}]")
        for key in ("approval_id", "task_id", "session_id"):
            if record.get(key):
                parts.append(f"{key.removesuffix('_id')}={record[key]}")
        if record.get("error_code"):
            parts.append(f"error={record['error_code']}: {_excerpt(str(record.get('error_message') or ''))}")
        if record.get("input_summary"):
            parts.append(f"in={_excerpt(str(record['input_summary']))}")
        return "  ".join(parts)
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"-  (not an audit record)  {_excerpt(data.decode(errors='replace'), 120)}"


def audit_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return {"error": "not JSON", "raw": data.decode(errors="replace")}


@app.command()
def tail(
    app_id: Annotated[str | None, typer.Option("--app", help="Only calls of this system (app id).")] = None,
    from_start: Annotated[bool, typer.Option(
        "--from-start", help="Replay every stored record first (default: only new ones).")] = False,
    count: Annotated[int | None, typer.Option("--count", "-n", min=1, help="Stop after this many records.")] = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0.0, help="Stop after this many seconds (an error if --count was not reached).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON record per line.")] = False,
) -> None:
    """Print audit records as they are written: caller, tool, status, duration, approval, error."""
    settings = settings_or_fail()
    with cli_errors():
        subject = audit_subject(settings, app_id)
    run(_tail(settings, subject, from_start, count, timeout, as_json))


async def _tail(settings: Settings, subject: str, from_start: bool, count: int | None, timeout: float | None,
                as_json: bool) -> None:
    stream = settings.subjects.stream("AUDIT")
    async with connected(settings.nats) as nc:
        js = nc.jetstream()
        policy = DeliverPolicy.ALL if from_start else DeliverPolicy.NEW
        try:
            sub = await js.subscribe(subject, stream=stream, ordered_consumer=True, deliver_policy=policy)
        except NotFoundError as exc:
            raise CliError(f"stream {stream} does not exist yet: start the mcp-gateway (`make dev`) first") from exc
        note(f"tailing {subject} on {stream} ({'from the start' if from_start else 'new records only'})")
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = 0
        try:
            while count is None or seen < count:
                wait = 1.0 if deadline is None else deadline - time.monotonic()
                if wait <= 0:
                    break
                try:
                    msg = await sub.next_msg(timeout=min(wait, 1.0))
                except (TimeoutError, NatsTimeoutError):
                    continue
                seen += 1
                if as_json:
                    print_json(audit_json(msg.data))
                else:
                    stdout.print(audit_line(msg.data), markup=False)
        finally:
            await sub.unsubscribe()
        if count is not None and seen < count:
            raise CliError(f"timed out after {timeout}s with {seen} of {count} records")
