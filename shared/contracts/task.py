"""Tasks: the durable state of one run, kept in the tasks KV bucket under the run id.

A task is created once per run id (create-only), so a redelivered run resumes the task instead
of repeating it. Every change is a compare-and-set on the KV revision. The step log records each
model call, tool call (name, arguments, classification, business ids) and delivery; a write step
is recorded `started` before its call and `finished` after, so a crash in between is visible.

States (`TRANSITIONS` lists the legal moves):

    queued ──► running ──► succeeded | failed | unverified | partial | cancelled
       ▲          │  ▲
       │          ▼  │
       └── awaiting_approval          (running ──► queued: handed back at shutdown)
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import DeliveryContext, ObjectRef, RunTarget
from shared.contracts.toolcall import ToolStatus

TaskState = Literal[
    "queued", "running", "awaiting_approval", "succeeded", "failed", "unverified", "partial", "cancelled"
]
TASK_STATES: tuple[TaskState, ...] = (
    "queued", "running", "awaiting_approval", "succeeded", "failed", "unverified", "partial", "cancelled"
)
TERMINAL_STATES: frozenset[TaskState] = frozenset({"succeeded", "failed", "unverified", "partial", "cancelled"})
_FINISH: frozenset[TaskState] = TERMINAL_STATES

TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    "queued": frozenset({"running", "cancelled", "failed"}),
    "running": frozenset({"queued", "awaiting_approval", *_FINISH}),
    "awaiting_approval": frozenset({"queued", "running", "cancelled", "failed"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "unverified": frozenset(),
    "partial": frozenset(),
    "cancelled": frozenset(),
}

# `progress`: a note the app sent during a tool call (`notifications/progress`), `<call step>.progress<n>`.
StepKind = Literal["model", "tool", "delivery", "stage", "verify", "interaction", "action", "skills", "progress"]
StepStatus = Literal["started", "finished", "skipped"]


class StepError(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str


class TaskStep(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of the step log. `id` is stable across attempts (a playbook step id, `m2` for
    the second model call, `m2.t1` for its first tool call, `deliver`), so recovery can tell
    what is done."""

    id: str
    kind: StepKind
    name: str
    status: StepStatus
    started_at: str
    finished_at: str | None = None
    side_effect: str | None = None  # tools: read | write | dangerous
    arguments: dict[str, Any] | None = None  # secret fields redacted (shared/redaction.py)
    # The full arguments, encrypted with the runners' key, when `arguments` had any redacted: a
    # call made again after its approval must send exactly what the approval was asked for.
    sealed_arguments: str | None = None
    call_id: str | None = None  # the tool call's envelope message_id (the gateway's audit key)
    timeout_seconds: float | None = None  # how long the call was allowed to take
    classification: ToolStatus | None = None
    business_ids: dict[str, Any] = msgspec.field(default_factory=dict)
    structured: Any = None  # the tool's structured result, or a model turn's message (truncated)
    text: str | None = None  # text content, truncated to the agent's limit
    error: StepError | None = None
    approval_id: str | None = None
    note: str | None = None  # how the outcome is known, e.g. "recovered from the gateway audit"

    @property
    def done(self) -> bool:
        return self.status != "started"


class Transition(msgspec.Struct, frozen=True, kw_only=True):
    to: TaskState
    at: str
    by: str  # the runner instance, or "operator"
    reason: str | None = None


class RetryWait(msgspec.Struct, frozen=True, kw_only=True):
    """A task waiting to try again a call that did not run (`unavailable`, the model unreachable).
    While the task is `queued` with this set, it is waiting for `next_try_at`; afterwards it
    stays as the record of the last wait."""

    step: str  # the step that waits
    code: str  # why: no_gateway, no_session, app_unavailable, circuit_open, model_unreachable …
    message: str
    since: str  # when this step first found its target unavailable (the deadline counts from here)
    tries: int  # how many times this step found it unavailable
    next_try_at: str
    until: str  # the deadline: the earlier of the event's expiry and the agent's retry_unavailable_seconds
    wakes: int = 0  # every wait of this task so far: resuming from a wait is not a failed attempt


class TaskError(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str


class Task(msgspec.Struct, frozen=True, kw_only=True):
    id: str  # = run_id
    run_id: str
    state: TaskState
    target: RunTarget
    binding_id: str
    created_at: str
    updated_at: str
    agent: str | None = None  # the agent that ran (for a pipeline: its AI step's agent)
    event_id: str | None = None
    event_type: str | None = None
    session_id: str | None = None
    source_app: str | None = None
    synthetic: bool = False
    delivery: DeliveryContext = msgspec.field(default_factory=DeliveryContext)
    # The event, so a task can resume after its run message is gone (approvals): inline, or the
    # Object Store reference the run carried for a large one.
    event: EventEnvelope | None = None
    event_ref: ObjectRef | None = None
    attempts: int = 0
    runner: str | None = None
    steps: tuple[TaskStep, ...] = ()
    answer: str | None = None
    delivered: bool = False
    error: TaskError | None = None
    check: str | None = None  # unverified: what a person has to check
    approval_id: str | None = None  # awaiting_approval: the approval it waits for
    interaction_id: str | None = None  # awaiting_approval: the user's answer it waits for instead
    cancel_requested: str | None = None  # who asked, while a runner still holds the task
    retry: RetryWait | None = None  # queued: waiting to try an unavailable call again (see RetryWait)
    transitions: tuple[Transition, ...] = ()

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def step(self, step_id: str) -> TaskStep | None:
        for step in reversed(self.steps):
            if step.id == step_id:
                return step
        return None


class IllegalTransition(ValueError):
    """A state change the task state machine does not allow."""


def check_transition(current: TaskState, wanted: TaskState) -> None:
    if wanted not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "nothing (terminal)"
        raise IllegalTransition(f"a {current} task cannot become {wanted}; allowed: {allowed}")


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Task)


def encode_task(task: Task) -> bytes:
    return _encoder.encode(task)


def decode_task(data: bytes) -> Task:
    return _decoder.decode(data)
