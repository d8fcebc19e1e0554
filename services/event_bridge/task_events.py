"""`task.*` events from the tasks bucket: each transition a runner writes into a task becomes the
task's `task.<state>` event.

The runner keeps every task in KV (`KV_AMP_TASKS`), and each state change is a new revision
carrying the task's transitions; the event is made here from that revision rather than from a
signal the runner would publish and store as well (docs/services/event-bridge.md, "`task.*`
events come from the tasks bucket"). The bridge stays the one writer of validated events.

Which transitions are new. The bucket keeps one revision per task, so a bridge that lags (or
was stopped) may see only a task's newest revision, with several transitions it has not turned
into events. `TaskEventMaker` remembers, for the last `REMEMBERED` tasks, how many transitions
of each were stored as events (counted once every event of a revision was acknowledged, so a
revision whose publish failed is redelivered and makes the same events again), and makes events
for the ones after. A task it does not remember (a restarted bridge, one forgotten by the bound)
gets the event of its latest transition, and of each earlier one whose time is within the events stream's duplicate
window: an earlier copy of such an event was stored after its transition, so within the window,
and JetStream drops it (same `Nats-Msg-Id`). So a consumer may see a task event twice, always
under the same message id (at-least-once): when the bridge, not remembering the task, meets a
revision whose latest transition is older than the window (a step recorded long after it), or,
with several bridges sharing the durable, when one remembers a task whose later transitions
another made events of more than the window before. And an earlier transition's event is missed
only when the bridge lagged behind both its revision and the duplicate window (10 minutes).

Each event is what the runner's signal was: the same id (`task-<task id>-<transition number>`),
the same fields, mapped by `map_signal`; `instance` is the task's runner and the time is the
transition's. An earlier transition's event, made from a later revision, carries that
transition's state and reason and the task's other fields as of that revision, without the
error, check or approval id, which belong to the latest state only. The create's `queued`,
written with `running` at the same instant, is no event (the runner never signalled it: a task
is created running). A revision that adds no transition (a step recorded) and DEL/PURGE
markers make none.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from nats.aio.msg import Msg

from services.event_bridge.mapping import Rejected, map_signal
from shared.clock import parse_iso
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import RUNNER_APP, PlatformEventSignal
from shared.contracts.subjects import app_token
from shared.contracts.task import Task, Transition, decode_task

TASK_EVENTS_DURABLE = "event-bridge-tasks"
REMEMBERED = 100_000  # tasks whose stored events are counted in memory (some 15 MB)
_RUNNER_TOKEN = app_token(RUNNER_APP)
_NOT_A_PUT = frozenset({"DEL", "PURGE"})


@dataclass(frozen=True)
class Events:
    """Several events from one message, and what to do once every one of them is stored."""

    events: tuple[EventEnvelope, ...]
    stored: Callable[[], None]


def task_signal(task: Task, number: int | None = None) -> PlatformEventSignal:
    """The signal for the task's transition `number` (1-based; the latest by default). Its id is
    fixed by (task, transition number), so making it again adds no second event."""
    count = len(task.transitions)
    number = count if number is None else number
    moved: Transition | None = task.transitions[number - 1] if number else None
    state = moved.to if moved is not None else task.state
    reason = moved.reason if moved is not None else None
    data: dict[str, Any] = {
        "task_id": task.id, "run_id": task.run_id, "state": state, "reason": reason,
        "target": {"type": task.target.type, "id": task.target.id}, "binding_id": task.binding_id,
        "agent": task.agent, "event_id": task.event_id, "event_type": task.event_type,
        "attempts": task.attempts, "delivered": task.delivered,
    }
    if number == count:  # these describe the task's current state only
        if task.error is not None:
            data["error"] = {"code": task.error.code, "message": task.error.message}
        if task.check is not None:
            data["check"] = task.check
        if task.approval_id is not None:
            data["approval_id"] = task.approval_id
    summary = f"task {task.id} {state.replace('_', ' ')}" + (f": {reason}" if reason else "")
    return PlatformEventSignal(
        signal_id=f"task-{task.id}-{number}", app=RUNNER_APP, instance=(task.runner or "")[:64] or "default",
        observed_at=moved.at if moved is not None else task.updated_at, type=f"task.{state}",
        summary=summary[:500], session_id=task.session_id, data=data, subject_kind="task", subject_id=task.id,
        synthetic=task.synthetic,
    )


class _Moves(msgspec.Struct, frozen=True):
    """What decides which events are due, read without the step log (most revisions add a step
    and no transition: they are skipped over, not decoded)."""

    id: str
    transitions: tuple[Transition, ...] = ()


_moves = msgspec.json.Decoder(_Moves)


def _created_queued(transitions: tuple[Transition, ...], number: int) -> bool:
    """The create's `queued`, written in the same write as its `running` (`new_task`)."""
    return (number == 1 and len(transitions) > 1 and transitions[0].to == "queued"
            and transitions[1].to == "running" and transitions[1].at == transitions[0].at)


class TaskEventMaker:
    """Turns tasks bucket revisions into the events of their new transitions (see the module)."""

    def __init__(self, *, duplicate_window: float, remembered: int = REMEMBERED,
                 clock: Callable[[], float] = time.time) -> None:
        self._window = duplicate_window
        self._remembered = remembered
        self._clock = clock
        self._stored: OrderedDict[str, int] = OrderedDict()  # task id → transitions stored as events

    def stored_count(self, task_id: str) -> int | None:
        return self._stored.get(task_id)

    def remember(self, task_id: str, count: int) -> None:
        """`count` transitions of the task are stored as events (never fewer than already known)."""
        self._stored[task_id] = max(count, self._stored.get(task_id, 0))
        self._stored.move_to_end(task_id)
        while len(self._stored) > self._remembered:
            self._stored.popitem(last=False)

    def convert(self, msg: Msg) -> Events | Rejected | None:
        """The events of one bucket message, the reason it cannot have any, or None: none due."""
        if (msg.headers or {}).get("KV-Operation") in _NOT_A_PUT:
            return None
        try:
            numbers = self._due(_moves.decode(msg.data))
            if not numbers:
                return None
            task = decode_task(msg.data)
        except (msgspec.DecodeError, RecursionError) as exc:
            return Rejected(f"malformed task: {exc}")
        events: list[EventEnvelope] = []
        for number in numbers:
            event = map_signal(task_signal(task, number), subject_app_token=_RUNNER_TOKEN)
            if isinstance(event, Rejected):
                return event
            events.append(event)
        count = len(task.transitions)
        return Events(tuple(events), lambda: self.remember(task.id, count))

    def _due(self, moves: _Moves) -> list[int]:
        transitions = moves.transitions
        count = len(transitions)
        known = self._stored.get(moves.id)
        if known is not None:
            self._stored.move_to_end(moves.id)
            return [n for n in range(known + 1, count + 1) if not _created_queued(transitions, n)]
        if not count:
            return []
        oldest = self._clock() - self._window
        recent = [n for n in range(1, count) if _seconds(transitions[n - 1].at) >= oldest]
        return [n for n in [*recent, count] if not _created_queued(transitions, n)]


def _seconds(at: str) -> float:
    try:
        return parse_iso(at).timestamp()
    except ValueError:
        return 0.0  # unreadable: taken as long past
