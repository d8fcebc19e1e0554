"""What every driver shares: the outcome it returns and how a tool step's result steers a run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from services.runner.context import RunContext
from services.runner.errors import AwaitApproval, AwaitRetry, Unverified
from services.runner.tasks.recovery import unverified_check
from shared.contracts.agent import Agent
from shared.contracts.task import TaskStep

# A tool step that went fine, as far as the run is concerned (a synthetic run's suppressed write
# is recorded as what would have been done).
GOOD = ("ok", "suppressed")


@dataclass(frozen=True)
class Outcome:
    answer: str | None
    deliver: bool = True  # a pipeline without an output stage does not deliver
    note: str | None = None


class AgentDriver(Protocol):
    # Does this driver take the same path again given the event and the recorded step outcomes?
    # Then a write's outcome may be written with the task's next change (RunContext.replayable).
    replayable: bool

    async def run(self, ctx: RunContext, agent: Agent, *, prefix: str = "", text: str | None = None) -> str | None:
        """Drive the agent to its answer (None: nothing to say). `prefix` namespaces its step ids
        (a pipeline's AI stage); `text` is a pipeline's pre-processed message text."""
        ...


def settle(step: TaskStep) -> None:
    """Stop the run where a step's outcome demands it: a write waiting for approval, a call
    that did not run because its target is unavailable (the run waits and tries it again), or
    a write whose outcome nobody knows (never repeated blindly)."""
    if step.classification == "unavailable":
        error = step.error
        raise AwaitRetry(step.id, error.code if error else "unavailable",
                         error.message if error else f"{step.name} is unavailable")
    if step.classification == "needs_approval":
        raise AwaitApproval(step.id, step.approval_id)
    if step.classification == "outcome_unknown" and step.side_effect != "read":
        reason = step.error.message if step.error else "the gateway could not tell"
        raise Unverified(unverified_check(step, reason=f"the gateway answered {reason}"))


def describe_failure(step: TaskStep) -> str:
    error = f": {step.error.code}: {step.error.message}" if step.error else ""
    return f"step {step.id} ({step.name}) ended {step.classification}{error}"
