"""`aurora apply` with `kind: Schedule` and `aurora schedules list|show|trigger-now|pause|resume`,
as the real CLI against the real scheduler and bridge processes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cli import Cli, cli_here_runner
from tests.harness.processes import ServiceProcess
from tests.harness.waiting import poll_sync
from tests.integration.scheduler.schedules import FAST

SCHEDULES = """\
kind: Schedule
id: nightly
cron: "30 2 * * *"
timezone: Europe/Berlin
data: {report: daily}
---
kind: Schedule
id: pulse
every: 1s
"""
BAD = """\
kind: Schedule
id: broken
cron: "30 2 * * *"
every: 5m
---
kind: Schedule
id: nowhere
cron: "0 3 * * *"
timezone: Mars/Olympus
"""


@pytest.fixture
def cli(nats_url: str) -> Cli:
    """This module's many CLI calls run in-process (the script itself is tested elsewhere)."""
    return cli_here_runner(nats_url)


def ok_json(cli: Cli, *args: str) -> Any:
    result = cli(*args, "--json")
    assert result.returncode == 0, f"aurora {' '.join(args)}: {result.stderr}"
    return json.loads(result.stdout)


def test_schedules_from_apply_to_trigger_now(cli: Cli, bridge: ServiceProcess, tmp_path: Path,
                                            spawn: Callable[..., ServiceProcess]) -> None:
    spawn("services.scheduler", tag="scheduler", **FAST).wait_ready(30)
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD, encoding="utf-8")
    refused = cli("apply", "-f", str(bad))
    assert refused.returncode != 0
    assert f"{bad}: document 1 (Schedule broken): field (root):" in refused.stderr, refused.stderr
    assert "exactly one" in refused.stderr
    assert f"{bad}: document 2 (Schedule nowhere): field timezone:" in refused.stderr, refused.stderr

    good = tmp_path / "schedules.yml"
    good.write_text(SCHEDULES, encoding="utf-8")
    applied = ok_json(cli, "apply", "-f", str(good), "--wait", "30")
    assert [r["result"] for r in applied] == ["created", "created"], applied

    listed = poll_sync(lambda: (found := ok_json(cli, "schedules", "list"))["items"]
                       and all(s["next_tick"] for s in found["items"]) and found,
                       timeout=20, what="both schedules armed", interval=0.3)
    by_id = {s["id"]: s for s in listed["items"]}
    assert by_id["nightly"]["cadence"] == "cron 30 2 * * * (Europe/Berlin)"
    shown = ok_json(cli, "schedules", "show", "nightly")
    assert shown["document"]["data"] == {"report": "daily"} and len(shown["upcoming"]) == 5
    # 02:30 in Berlin is 00:30 or 01:30 UTC, depending on the season
    assert all(t[11:16] in ("00:30", "01:30") for t in shown["upcoming"]), shown["upcoming"]

    triggered = ok_json(cli, "schedules", "trigger-now", "nightly")
    assert triggered["id"] == "nightly" and triggered["message_id"]
    assert ok_json(cli, "schedules", "pause", "pulse")["result"] == "paused"
    text = cli("schedules", "list", COLUMNS="200")
    assert text.returncode == 0 and "PAUSED" in text.stdout, text.stdout
    assert ok_json(cli, "schedules", "resume", "pulse")["result"] == "resumed"
    missing = cli("schedules", "show", "nope")
    assert missing.returncode != 0 and "no Schedule 'nope'" in missing.stderr, missing.stderr
