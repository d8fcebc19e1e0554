"""The runner's errors.

AuroraError
└── RunnerError
    ├── LostOwnership      another runner took the task over (its run came back to the queue)
    │   └── TaskExists     another attempt stored the run's task before this one stored it
    ├── HandBack           the runner is stopping: give the run back at the next step boundary
    ├── CancelRequested    an operator asked the task to stop
    ├── StepFailed         a step ended the run (a template, a model, a refused tool …)
    ├── AwaitApproval      a write waits for a person's approval
    ├── AwaitInteraction   the run asked its user something and waits for the answer
    ├── AwaitRetry         a call did not run (its target unavailable): wait and try it again
    └── Unverified         a write's outcome is unknown: the task says what to check
"""

from __future__ import annotations

from shared.errors import AuroraError


class RunnerError(AuroraError):
    """Base of the runner's errors."""


class LostOwnership(RunnerError):
    """The task's attempt changed under us: another runner holds it now; stop without a word."""


class TaskExists(LostOwnership):
    """This attempt's task was not stored yet, and another attempt stored the run's task first:
    the run goes on from that task as stored (`TaskExecutor.handle_run`)."""


class HandBack(RunnerError):
    """Shutting down: this run goes back to the queue for another runner."""


class CancelRequested(RunnerError):
    def __init__(self, by: str) -> None:
        super().__init__(f"cancelled by {by}")
        self.by = by


class StepFailed(RunnerError):
    """A step the run cannot go past; `code` is machine-readable."""

    def __init__(self, code: str, message: str, *, notice: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.notice = notice  # what the event's user is told, where there is a reply target


class AwaitApproval(RunnerError):
    """A write needs a person's approval: the task waits (durably), nothing waits in memory."""

    def __init__(self, step_id: str, approval_id: str | None) -> None:
        super().__init__(f"step {step_id} waits for approval {approval_id or '?'}")
        self.step_id = step_id
        self.approval_id = approval_id


class AwaitInteraction(RunnerError):
    """The run asked the event's user a question: the task waits (durably) for the answer."""

    def __init__(self, step_id: str, interaction_id: str) -> None:
        super().__init__(f"step {step_id} waits for the answer to interaction {interaction_id}")
        self.step_id = step_id
        self.interaction_id = interaction_id


class AwaitRetry(RunnerError):
    """A call provably did not run (no gateway, the app's session down, a circuit open, the
    model unreachable): the task waits, durably, and tries it again until its deadline."""

    def __init__(self, step_id: str, code: str, message: str, *, retry_after: float | None = None,
                 max_tries: int | None = None, exhausted: StepFailed | None = None) -> None:
        super().__init__(f"step {step_id}: {code}: {message}")
        self.step_id = step_id
        self.code = code
        self.detail = message
        self.retry_after = retry_after  # at the earliest, as the target asked (Retry-After)
        self.max_tries = max_tries  # a try limit besides the deadline (a read that timed out)
        self.exhausted = exhausted  # how the task ends when the tries are spent


class Unverified(RunnerError):
    """A write's outcome is unknown; `check` says what a person has to look at."""

    def __init__(self, check: str) -> None:
        super().__init__(check)
        self.check = check
