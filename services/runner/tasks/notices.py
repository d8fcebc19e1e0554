"""What the event's user is told when a task ends without an answer of its own (pure;
unit-tested alone): `unverified`, `partial`, refused (an approval denied or expired),
`cancelled`, or `failed` having changed nothing.

A run that stops on a write nobody can confirm, or on a failure after it already changed
something, has no answer to deliver — yet the person who asked must not be left believing all
or nothing happened. The notice names what was done (the writes that succeeded, with their
business ids) and what was not (the call that stopped the run and everything after it), in the
conversation's language; the error's own words and what exactly to check stay in the task.
"""

from __future__ import annotations

from collections.abc import Iterable

from shared.contracts.task import TaskStep
from shared.i18n import N_, say

# How a refused approval is said: the person asked, and nothing was done (the approval's id,
# who refused and when stay in the task's transition).
_REFUSED = {
    "denied": N_("Not done: the approval this request needed was refused, so nothing was changed."),
    "expired": N_("Not done: nobody approved this request in time, so nothing was changed."),
}


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


def stopped_at(steps: Iterable[TaskStep]) -> TaskStep | None:
    """The call that stopped the run: the last tool call that neither succeeded nor was skipped."""
    failed = [s for s in steps if s.kind == "tool" and s.status != "skipped"
              and s.classification not in (None, "ok", "suppressed", "needs_approval")]
    return failed[-1] if failed else None


def _done(steps: list[TaskStep], locale: str | None) -> str:
    writes = done_writes(steps)
    return say(locale, "; ").join(writes) if writes else say(locale, "no change that was confirmed")


def unverified_notice(steps: list[TaskStep], *, locale: str | None = None) -> str:
    """The notice of a task that ended `unverified`: one short sentence. What exactly to check
    is the task's `check` (the console and the CLI show it), not chat text."""
    doubtful = in_doubt(steps)
    return say(locale, "I cannot confirm that {what} was carried out (its answer was lost, and it was not "
               "repeated): please check in that system before asking again.",
               what=doubtful.name if doubtful is not None else say(locale, "the last change"))


def partial_notice(steps: list[TaskStep], *, locale: str | None = None) -> str:
    """The notice of a task that stopped `partial` after changing something: what is done, what
    is not. The failure's own text (an app's error, in its words) stays in the task record."""
    failed = stopped_at(steps)
    return say(locale, "Partly done. Done: {done}. Not done: {failed}, and the steps after it. Please check "
               "that system, then ask again or finish the rest by hand.", done=_done(steps, locale),
               failed=failed.name if failed is not None else say(locale, "the rest of the request"))


def refused_notice(verb: str, *, locale: str | None = None) -> str:
    """The notice of a task cancelled because its approval was `denied` or `expired`."""
    return say(locale, _REFUSED[verb])


def cancelled_notice(*, locale: str | None = None) -> str:
    """The notice of a task an operator cancelled: who did and why stay in the task."""
    return say(locale, "This request was cancelled before it was finished.")


def failed_notice(*, locale: str | None = None) -> str:
    """The notice of a task that failed before changing anything: the error stays in the task."""
    return say(locale, "Sorry, this request could not be done; nothing was changed.")


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
