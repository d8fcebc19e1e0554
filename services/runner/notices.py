"""What the event's user is told when a task ends `unverified` or `partial` without an answer of
its own (pure; unit-tested alone).

A run that stops on a write nobody can confirm, or on a failure after it already changed
something, has no answer to deliver — yet the person who asked must not be left believing all
or nothing happened. The notice names what was done (the writes that succeeded, with their
business ids), what was not (the step that stopped the run and everything after it), and what
to check.
"""

from __future__ import annotations

from collections.abc import Iterable

from shared.contracts.task import TaskStep


def done_writes(steps: Iterable[TaskStep]) -> list[str]:
    """The writes that succeeded, as `tool (id: value, …)`, in the order they ran."""
    found = []
    for step in steps:
        if step.kind == "tool" and step.side_effect not in (None, "read") and step.classification == "ok":
            ids = ", ".join(f"{k} {v}" for k, v in sorted(step.business_ids.items()))
            found.append(f"{step.name} ({ids})" if ids else step.name)
    return found


def in_doubt(steps: Iterable[TaskStep]) -> TaskStep | None:
    """The write whose outcome nobody knows: the last one without a known outcome."""
    doubtful = [s for s in steps if s.kind in ("tool", "delivery") and s.side_effect not in (None, "read")
                and (s.classification == "outcome_unknown" or s.status == "started")]
    return doubtful[-1] if doubtful else None


def _done_line(steps: list[TaskStep]) -> str:
    writes = done_writes(steps)
    return f"Done: {'; '.join(writes)}." if writes else "Done: no change was confirmed."


def unverified_notice(steps: list[TaskStep], check: str) -> str:
    """The notice of a task that ended `unverified` (`check` is the task's own check sentence)."""
    doubtful = in_doubt(steps)
    what = doubtful.name if doubtful is not None else "a write"
    return (f"Unverified: I cannot tell whether {what} was carried out — its answer was lost, and it was "
            f"not repeated, so nothing after it was done. {_done_line(steps)} Not confirmed: {what}. "
            f"Please {check}.")


def partial_notice(steps: list[TaskStep], failure: str) -> str:
    """The notice of a task that stopped `partial` on `failure` after changing something."""
    return (f"Partly done. {_done_line(steps)} Not done: {failure}; the steps after it did not run. "
            "Please check that system, then ask again or finish the rest by hand.")


def unfinished_writes(steps: list[TaskStep]) -> list[TaskStep]:
    """Writes that failed and were not made good by a later call of the same tool — when some
    other write did succeed (a model that went on past a failed write leaves the task `partial`:
    something changed, not everything it set out to)."""
    if not done_writes(steps):
        return []
    failed = []
    for index, step in enumerate(steps):
        if step.kind != "tool" or step.side_effect in (None, "read") or step.classification in (
                None, "ok", "suppressed", "needs_approval", "unavailable"):
            continue
        later = steps[index + 1:]
        if not any(s.name == step.name and s.classification == "ok" for s in later):
            failed.append(step)
    return failed
