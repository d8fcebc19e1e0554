"""A step's call id: a write's first call has the same id in every attempt (the gateway's call
ledger is its claim, so a resumed attempt must ask under that id); a call made again after a
recorded outcome, and every read, has the attempt in it (a new call)."""

from __future__ import annotations

import pytest

from services.runner.tools.client import call_id_for, step_call_id


@pytest.mark.parametrize("side_effect", ["write", "dangerous"])
def test_a_writes_first_call_has_one_id_in_every_attempt(side_effect: str) -> None:
    ids = {step_call_id("t-1", "deliver", attempt, first=True, side_effect=side_effect) for attempt in (1, 2, 7)}
    assert len(ids) == 1
    # and it is that step's of that task only
    assert ids.isdisjoint({step_call_id("t-1", "other", 1, first=True, side_effect=side_effect),
                           step_call_id("t-2", "deliver", 1, first=True, side_effect=side_effect)})


def test_a_call_made_again_after_a_recorded_outcome_is_a_new_call_in_each_attempt() -> None:
    first = step_call_id("t-1", "book", 1, first=True, side_effect="write")
    again = [step_call_id("t-1", "book", attempt, first=False, side_effect="write") for attempt in (1, 2, 3)]
    assert len({first, *again}) == 4
    assert again[1] == call_id_for("t-1", "book", 2)


def test_a_read_has_the_attempt_in_its_id_even_first() -> None:
    # A read repeated by a resumed attempt is another call: the audit keeps one record per call id.
    reads = {step_call_id("t-1", "look", attempt, first=True, side_effect="read") for attempt in (1, 2)}
    assert len(reads) == 2
