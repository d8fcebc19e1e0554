"""How long things took, as `aurora tasks show`, `aurora health` and the console say it."""

from __future__ import annotations

from typing import Any

from aurora_cli.commands.tasks import STEP_COLUMNS, step_row, task_took
from aurora_cli.timing import duration, took, when


def test_a_span_reads_in_milliseconds_seconds_or_minutes() -> None:
    assert took("2026-12-04T12:00:00.000+00:00", "2026-12-04T12:00:00.038+00:00") == "38 ms"
    assert took("2026-12-04T12:00:00+00:00", "2026-12-04T12:00:02.44+00:00") == "2.4 s"
    assert took("2026-12-04T12:00:00Z", "2026-12-04T12:03:12Z") == "3m12s"
    assert took("2026-12-04T12:00:00", "2026-12-04T12:00:00.5+00:00") == "500 ms"  # naive is UTC
    assert took("2026-12-04T12:00:01+00:00", "2026-12-04T12:00:00+00:00") == "0 ms"  # clocks apart
    assert took("2026-12-04T12:00:00+00:00", None) is None and took("yesterday", "today") is None
    assert when("") is None and duration(None) == "-" and duration(90061) == "1d1h"


def _step(**fields: Any) -> dict[str, Any]:
    return {"id": "alarms", "kind": "tool", "name": "demo.industrial.list_alarms", "status": "finished",
            "classification": "ok", **fields}


def test_a_step_says_how_long_it_took_once_it_finished() -> None:
    row = dict(zip(STEP_COLUMNS, step_row(_step(started_at="2026-12-04T12:00:00.100+00:00",
                                                finished_at="2026-12-04T12:00:01.350+00:00")), strict=True))
    assert (row["result"], row["took"]) == ("ok", "1.2 s")
    running = dict(zip(STEP_COLUMNS, step_row(_step(status="started", started_at="2026-12-04T12:00:00+00:00")),
                       strict=True))
    assert (running["result"], running["took"]) == ("started", None)


def test_a_finished_task_took_from_its_first_transition_to_its_last() -> None:
    history = [{"at": "2026-12-04T12:00:00.000+00:00", "to": "queued"},
               {"at": "2026-12-04T12:00:00.010+00:00", "to": "running"},
               {"at": "2026-12-04T12:00:00.068+00:00", "to": "succeeded"}]
    assert task_took({"state": "succeeded", "transitions": history}) == "68 ms"
    assert task_took({"state": "awaiting_approval", "transitions": history[:2]}) is None
    assert task_took({"state": "failed", "transitions": []}) is None
