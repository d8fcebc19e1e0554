"""Apps that misbehave beside the healthy chat app (tests/apps/misbehaving_app.py): one that
floods notifications, one that hangs on every call, one that writes garbage to stdout, one
that exits at start, one that answers after the timeout. The healthy app's load must be served
as if nothing happened, and each failure must show in `aurora apps --json` and as events."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared.contracts.subjects import app_token
from tests.chaos.kit import Check, loaded
from tests.chaos.load import SUBJECTS, LoadRun, operator_call
from tests.chaos.model import Outcome, Scenario
from tests.chaos.stack import ChaosStack, StackSpec
from tests.chaos.tally import Tally
from tests.harness.runs import APPS, PYTHON, stdio

CALL_TIMEOUT = 2.0  # the misbehaving app's call timeout: the slow app answers after twice that
# What a scenario expects to see: problems (empty when the failure was visible), from the app's
# `aurora apps` row, the count of each event type stored for it and the statuses of our calls.
Expect = Callable[[dict[str, Any] | None, Counter[str], Counter[str]], list[str]]


def package(mode: str) -> str:
    return f"test.misbehaving.{mode}"


def misbehaving(mode: str, workdir: Path, **mcp: Any) -> dict[str, Any]:
    env = {"MISBEHAVE": mode, "SLOW_SECONDS": str(2 * CALL_TIMEOUT), "FLOOD_COUNT_FILE": str(flood_count(workdir))}
    app = stdio([PYTHON, str(APPS / "misbehaving_app.py")], package=package(mode),
                mcp={"env": env,
                     "call_timeout_seconds": CALL_TIMEOUT, "health_timeout_seconds": 5, **mcp})
    if mode == "exit":  # give up soon, so that the test sees the supervisor's final verdict
        app["restart"] = {"backoff_initial_seconds": 0.2, "backoff_max_seconds": 0.5, "max_restarts": 3,
                          "window_seconds": 60}
    return app


def flood_count(workdir: Path) -> Path:
    return workdir / "flood-count.txt"


def flooded(workdir: Path) -> int:
    """How many notifications the flooding app says it sent (0 before it wrote its count)."""
    path = flood_count(workdir)
    text = path.read_text(encoding="utf-8").strip() if path.exists() else ""
    return int(text) if text.isdigit() else 0


async def event_types(run: LoadRun, app: str) -> Counter[str]:
    """How many events of each type AMP_EVENTS holds for `app` (the stream's count per subject:
    a flood's hundred thousand events are not read one by one)."""
    prefix = SUBJECTS.event(app, "")
    info = await run.nc.jetstream().stream_info(SUBJECTS.stream("EVENTS"), subjects_filter=f"{prefix}>")
    return Counter({subject[len(prefix):]: n for subject, n in (info.state.subjects or {}).items()})


def app_row(stack: ChaosStack, app: str) -> dict[str, Any] | None:
    rows: list[dict[str, Any]] = stack.cli("apps")
    return next((row for row in rows if row["app"] == app), None)


def calling(mode: str, statuses: Counter[str], every: float = 0.5) -> Callable[[LoadRun], Any]:
    """Beside the load, call the misbehaving app's one tool every `every` seconds."""

    async def faults(run: LoadRun) -> None:
        # No fault instant to recover from: the app misbehaves from its start, for the whole load.
        calls = []
        while time.time() < run.started_at + run.seconds:
            calls.append(asyncio.create_task(_call(run, mode, statuses)))
            await asyncio.sleep(every)
        await asyncio.gather(*calls)

    return faults


async def _call(run: LoadRun, mode: str, statuses: Counter[str]) -> None:
    statuses[await operator_call(run.nc, f"{package(mode)}.work", {}, timeout=3 * CALL_TIMEOUT)] += 1


def visible(mode: str, statuses: Counter[str], expect: Expect) -> Check:
    async def check(stack: ChaosStack, run: LoadRun, tally: Tally) -> tuple[list[str], str]:
        row = await asyncio.to_thread(app_row, stack, package(mode))
        types = await event_types(run, package(mode))
        keys = ("session", "process", "restarts", "last_error", "session_error", "process_error")
        shown = {k: row.get(k) for k in keys} if row else None
        dropped = stack.log("gateway").count("outbox full")  # the gateway's signal outbox overflowed
        saw = (f"aurora apps: {shown}; events: {dict(types.most_common(6))}; calls: {dict(statuses)}; "
               f"gateway logged {dropped} dropped signals")
        return expect(row, types, statuses), saw

    return check


async def misbehaving_scenario(workdir: Path, scale: float, mode: str, faults_text: str, expect: Expect,
                               **mcp: Any) -> Outcome:
    statuses: Counter[str] = Counter()
    return await loaded(workdir, scale, name=f"app-{mode}", faults_text=faults_text,
                        spec=StackSpec(apps={f"misbehaving-{mode}": misbehaving(mode, workdir, **mcp)}),
                        faults=None if mode == "flood" else calling(mode, statuses),
                        checks=[visible(mode, statuses, expect), *([flood_kept(workdir)] if mode == "flood" else [])],
                        rate=10.0, seconds=10.0)


def shown_unwell(row: dict[str, Any] | None) -> bool:
    """Whether the app's `aurora apps --json` row shows something wrong with it."""
    if row is None:
        return False
    errors = (row.get("last_error"), row.get("session_error"), row.get("process_error"))
    return row.get("session") != "connected" or any(errors)


def _flood(row: dict[str, Any] | None, types: Counter[str], statuses: Counter[str]) -> list[str]:
    # A flood is load, not a broken app: what must hold is that the rest is served (judged for
    # every scenario) and that what was taken of the flood is there as events (what was not
    # is judged by `flood_kept`).
    return [] if types["sensor.flooded"] > 0 else ["none of the flood's notifications was stored as an event"]


DROP_WORDS = ("dropped", "slow consumer", "discarded")


def flood_kept(workdir: Path) -> Check:
    """What the flooding app sent is stored as events, still waiting as signals, or its loss is
    said somewhere (a log line, an event, its `aurora apps` row): never gone without a trace."""

    async def check(stack: ChaosStack, run: LoadRun, tally: Tally) -> tuple[list[str], str]:
        sent = flooded(workdir)
        stored = (await event_types(run, package("flood")))["sensor.flooded"]
        info = await run.nc.jetstream().stream_info(
            SUBJECTS.stream("SIGNALS"), subjects_filter=f"{SUBJECTS.prefix}.sig.{app_token(package('flood'))}.>")
        waiting = sum((info.state.subjects or {}).values())
        said = sorted(name for name in stack.processes
                      if any(word in stack.log(name).lower() for word in DROP_WORDS))
        saw = (f"the flooding app sent {sent} notifications: {stored} stored as events, {waiting} still signals, "
               f"drops told by {said or 'nobody'}")
        vanished = sent - stored - waiting
        if vanished > sent // 100 and not said and not shown_unwell(await asyncio.to_thread(app_row, stack,
                                                                                              package("flood"))):
            return [f"{vanished} of the {sent} notifications the flooding app sent vanished without a trace"], saw
        return [], saw

    return check


def _timeouts(row: dict[str, Any] | None, types: Counter[str], statuses: Counter[str]) -> list[str]:
    problems = []
    if not any("timeout" in s for s in statuses):
        problems.append(f"no call timed out: {dict(statuses)}")
    if types["tool.timeout"] == 0:
        problems.append("no tool.timeout event")
    if not shown_unwell(row):
        problems.append("aurora apps shows the app healthy while every call to it times out")
    return problems


def _garbage(row: dict[str, Any] | None, types: Counter[str], statuses: Counter[str]) -> list[str]:
    problems = []
    if row is None or row.get("session") != "connected" or not statuses["ok"]:
        problems.append(f"the app's answers got lost in its garbage: {row}, calls {dict(statuses)}")
    reported = {t for t in types if not t.startswith(("tool.", "app.connected", "app.process_started"))}
    if not shown_unwell(row) and not reported:
        problems.append("the garbage on the app's stdout shows neither in aurora apps nor as an event")
    return problems


def _exit(row: dict[str, Any] | None, types: Counter[str], statuses: Counter[str]) -> list[str]:
    problems = []
    if not shown_unwell(row) or row is None or not (row.get("last_error") or row.get("process_error")):
        problems.append(f"aurora apps does not show the app down with a reason: {row}")
    if "ok" in statuses:
        problems.append("a call to an app that never started succeeded")
    if not any(t.startswith("app.") for t in types):
        problems.append("no app.* event for the app that exits")
    return problems


async def app_flood(workdir: Path, scale: float) -> Outcome:
    return await misbehaving_scenario(workdir, scale, "flood", "an app floods 10,000 notifications/s", _flood)


async def app_hang(workdir: Path, scale: float) -> Outcome:
    return await misbehaving_scenario(workdir, scale, "hang", "an app hangs on every call (called 2/s)", _timeouts)


async def app_garbage(workdir: Path, scale: float) -> Outcome:
    return await misbehaving_scenario(workdir, scale, "garbage", "an app writes garbage to stdout (20 lines/s)",
                                      _garbage)


async def app_exit(workdir: Path, scale: float) -> Outcome:
    return await misbehaving_scenario(workdir, scale, "exit", "an app exits at start (called 2/s)", _exit)


async def app_slow(workdir: Path, scale: float) -> Outcome:
    return await misbehaving_scenario(workdir, scale, "slow", f"an app answers after 2× its {CALL_TIMEOUT:g} s timeout",
                                      _timeouts)


SCENARIOS = [
    Scenario("app-flood", app_flood),
    Scenario("app-hang", app_hang),
    Scenario("app-garbage", app_garbage),
    Scenario("app-exit", app_exit),
    Scenario("app-slow", app_slow),
]
