"""Interactions: a run asks the event's user a question and waits, durably, for the answer.

The only action an agent may have executed (`interaction.requested`); every other requested
action is telemetry in the step log. The question goes out as an `event_reply` with numbered
options and a hint in the agent's language, the interaction id beside the text (its
`interaction_id` argument: ids are not for the person); an `interaction.requested` platform
event says so; the user's answer comes back as an `interaction.submitted` event
(`data.interaction_id`, `data.value`) that resumes the task (`resumer`) with the chosen option
as the waiting step's result.

The interaction id names its task and step (`ix.<task id>.<step id>`), so an answer finds its
task without any index: nothing but the task in KV has to survive a restart.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec
from nats.js import JetStreamContext

from services.runner.context import RunContext
from services.runner.errors import AwaitInteraction, AwaitRetry, StepFailed
from services.runner.steps.tool_steps import ToolSteps
from services.runner.tasks.approval_decisions import within_task_stored
from shared.clock import now_iso
from shared.contracts.signals import RUNNER_APP, PlatformEventSignal
from shared.contracts.subjects import Subjects
from shared.contracts.task import StepError, Task, TaskStep
from shared.i18n import say
from shared.nats.signal_publisher import publish_signal
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.interactions")
EXECUTABLE_ACTION = "interaction.requested"
EVENT_REPLY = "event_reply"
_PREFIX = "ix"
AnswerAction = Literal["record", "resume", "wait", "ignore"]


def interaction_id_for(task_id: str, step_id: str) -> str:
    return f"{_PREFIX}.{task_id}.{step_id}"


def parse_interaction_id(interaction_id: str) -> tuple[str, str] | None:
    """(task id, step id), or None for an id this runner did not make."""
    parts = interaction_id.split(".", 2)
    if len(parts) != 3 or parts[0] != _PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def label_of(option: Any) -> str:
    if isinstance(option, dict):
        for key in ("label", "name", "title", "code", "id", "value"):
            if option.get(key) is not None:
                return str(option[key])
    return str(option)


def question_text(question: str, options: list[Any], *, locale: str | None = None) -> str:
    """The question, its numbered options and a hint in the conversation's language; the
    interaction id goes beside the text (`event_reply`'s `interaction_id`), not in it."""
    lines = [question]
    lines += [f"{n}. {label_of(option)}" for n, option in enumerate(options, 1)]
    lines.append(say(locale, "(answer with the number of your choice)") if options
                 else say(locale, "(answer in your own words)"))
    return "\n".join(lines)


def waiting_step(step_id: str, interaction_id: str, question: str, options: list[Any]) -> TaskStep:
    return TaskStep(id=step_id, kind="interaction", name=EXECUTABLE_ACTION, status="started", started_at=now_iso(),
                    structured={"interaction_id": interaction_id, "question": question, "options": options},
                    note="waiting for the user's answer")


def answered_step(waiting: TaskStep, value: str, *, by: str | None, at: str) -> TaskStep:
    """The waiting step finished with the answer: `choice` is the chosen option (by its number,
    or by its label or value), `ok` when the answer names one (or there were no options)."""
    asked = waiting.structured if isinstance(waiting.structured, dict) else {}
    options = list(asked.get("options") or [])
    index = _choice_index(options, value)
    choice = options[index] if index is not None else (value if not options else None)
    structured = {**asked, "value": value, "choice": choice, "index": index + 1 if index is not None else None,
                  "answered_by": by, "answered_at": at}
    ok = choice is not None
    return TaskStep(
        id=waiting.id, kind="interaction", name=waiting.name, status="finished", started_at=waiting.started_at,
        finished_at=at, structured=structured, text=label_of(choice) if ok else value,
        classification="ok" if ok else "business_error",
        error=None if ok else StepError(code="no_such_option", message=f"the answer {value!r} names no option"),
        note=f"answered by {by or 'the user'} at {at}",
    )


def on_answer(task: Task | None, step_id: str, interaction_id: str, value: str, *, answered_at: str,
              redelivered: bool, now: datetime) -> AnswerAction:
    """What an `interaction.submitted` answer does to the task whose question it answers:

    - record: the task waits for it: record the answer and resume the task;
    - resume: this answer was recorded and the runner resuming the task stopped (it came again);
    - wait: the question may be out and the task not parked on it yet (a task is stored at its
      first durable change, which for a playbook may be the wait itself; a user, or a bot, can
      answer first): the answer comes back, for `TASK_STORED_WITHIN` seconds after it was given;
    - ignore: anything else (a task that moved on, another answer recorded, not a question).
    """
    if task is None:
        return "wait" if within_task_stored(answered_at, now=now) else "ignore"
    waiting = task.step(step_id)
    if waiting is not None and waiting.kind != "interaction":
        return "ignore"
    if waiting is not None and waiting.done:
        asked = waiting.structured if isinstance(waiting.structured, dict) else {}
        this_one = asked.get("answered_at") == answered_at and asked.get("value") == value
        return "resume" if redelivered and this_one and task.state in ("queued", "running") else "ignore"
    if waiting is not None and task.state == "awaiting_approval" and task.interaction_id == interaction_id:
        return "record"
    if task.state in ("queued", "running"):
        return "wait" if within_task_stored(answered_at, now=now) else "ignore"
    return "ignore"


def _choice_index(options: list[Any], value: str) -> int | None:
    wanted = value.strip()
    if wanted.isdigit() and 1 <= int(wanted) <= len(options):
        return int(wanted) - 1
    for i, option in enumerate(options):
        candidates = [label_of(option)]
        if isinstance(option, dict):
            candidates += [str(v) for v in option.values() if isinstance(v, str | int) and not isinstance(v, bool)]
        if wanted in candidates:
            return i
    return None


class Announcer:
    """Publishes `interaction.requested` platform events (through the event-bridge)."""

    def __init__(self, js: JetStreamContext, subjects: Subjects, *, instance: str) -> None:
        self._js = js
        self._subjects = subjects
        self._instance = instance

    async def requested(self, ctx: RunContext, interaction_id: str, question: str, options: list[Any]) -> None:
        """Once per interaction id; best effort: the question itself went out through the app
        and the task records it."""
        signal = PlatformEventSignal(
            signal_id=f"interaction-{interaction_id}", app=RUNNER_APP, instance=self._instance[:64] or "default",
            observed_at=now_iso(), type=EXECUTABLE_ACTION, summary=question[:500],
            session_id=ctx.event.payload.session_id, synthetic=ctx.synthetic,
            data={"interaction_id": interaction_id, "task_id": ctx.task_id, "question": question, "options": options},
            subject_kind="interaction", subject_id=interaction_id,
        )
        try:
            await publish_signal(self._js, self._subjects, signal)
        except Exception as exc:
            log.warning("interaction.requested not published", task=ctx.task_id, interaction=interaction_id,
                        error=str(exc))


async def ask(ctx: RunContext, steps: ToolSteps, announcer: Announcer | None, *, step_id: str, question: str,
              options: list[Any]) -> TaskStep:
    """The interaction step's result: the recorded answer, or — asked now (or already asked) —
    AwaitInteraction, which parks the task until the answer comes. A synthetic run asks nobody:
    the question is suppressed like any side effect and the step says what would have been asked."""
    prior = ctx.handle.step(step_id)
    if prior is not None and prior.done:
        return prior
    interaction_id = interaction_id_for(ctx.task_id, step_id)
    if prior is not None:
        raise AwaitInteraction(step_id, interaction_id)
    target = ctx.delivery.reply_target
    if target is None or not (target.session_id or target.conversation):
        raise StepFailed("interaction_unavailable",
                         f"step {step_id}: the event names no conversation to ask its user in")
    asked = await steps.run(ctx, step_id=f"{step_id}.ask", tool=EVENT_REPLY, kind="delivery", side_effect="write",
                            arguments={"text": question_text(question, options, locale=ctx.locale),
                                       "interaction_id": interaction_id})
    if asked.classification == "suppressed":
        step = msgspec.structs.replace(
            waiting_step(step_id, interaction_id, question, options), status="finished", finished_at=now_iso(),
            classification="suppressed", note="synthetic run: the question was not sent, nobody can answer")
        ctx.handle.stage(step)
        return step
    if asked.classification == "unavailable":  # nothing was sent: wait and ask again
        raise AwaitRetry(asked.id, asked.error.code if asked.error else "unavailable",
                         asked.error.message if asked.error else "the reply tool is unavailable")
    if asked.classification != "ok":
        error = f": {asked.error.code}: {asked.error.message}" if asked.error else ""
        raise StepFailed("interaction_not_sent", f"step {step_id}: the question was not sent "
                         f"({asked.classification}{error})")
    if announcer is not None:
        await announcer.requested(ctx, interaction_id, question, options)
    ctx.handle.stage(waiting_step(step_id, interaction_id, question, options))
    raise AwaitInteraction(step_id, interaction_id)
