"""The route table's index by event type (exact patterns in a dict, wildcards checked after) and
the hot path's inlined checks choose exactly what the plain linear scan over every ranked
binding chooses: the same candidates in the same order, the same binding, the same trace."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest

from services.router.selection import TRACE_STEPS, RankedBinding, RouteTable, StaticProcessors, decide
from shared.contracts.binding import Binding
from shared.contracts.envelope import EventEnvelope
from shared.contracts.event_pattern import matches
from shared.contracts.route import RouteStep
from tests.unit.router.factories import agent, binding, event

NOW = datetime(2026, 6, 19, 4, 0, tzinfo=UTC)
TYPES = ("message.received", "message.deleted", "message.received.edited", "group.member_joined",
         "group.member.left", "friend.request_received", "tool.chat.send", "custom")
PATTERNS = ("*", "message.*", "message.received.*", "group.*", "group.member.*", "friend.*", "tool.*",
            *TYPES)
BOTS = ("bot0", "bot1", "bot2")
PROCESSORS = StaticProcessors(agents={"a1": agent("a1")})


def random_bindings(rng: random.Random) -> list[Binding]:
    found = []
    for n in range(rng.randint(0, 50)):
        filters: list[dict[str, Any]] = []
        if rng.random() < 0.6:
            filters.append({"field": "bot", "op": "eq", "value": rng.choice(BOTS)})
        if rng.random() < 0.3:
            filters.append({"field": "data.n", "op": "in", "value": rng.sample(range(6), 2)})
        # ids collide in rank on purpose: equal priority, pattern and filter count leave the id to decide
        found.append(binding(f"b{rng.randint(0, 99):02d}-{n}", rng.choice(PATTERNS), priority=rng.randint(0, 3),
                             enabled=rng.random() < 0.85, filters=filters))
    return found


def random_event(rng: random.Random) -> EventEnvelope:
    return event(rng.choice(TYPES), bot=rng.choice(BOTS), data={"n": rng.randrange(6)})


def linear_scan(table: RouteTable, event_type: str) -> tuple[RankedBinding, ...]:
    return tuple(r for r in table.ranked if matches(r.binding.event_pattern, event_type))


def first_by_scan(table: RouteTable, ev: EventEnvelope) -> tuple[str | None, tuple[RouteStep, ...]]:
    """The hot path's choice and trace, by `quick_failure` over the linear scan."""
    steps: list[RouteStep] = []
    for candidate in linear_scan(table, ev.payload.type):
        failed = candidate.quick_failure(ev)
        if failed is None:
            return candidate.id, (*steps, candidate.chosen)
        if len(steps) < TRACE_STEPS:
            steps.append(failed)
    return None, tuple(steps)


@pytest.mark.parametrize("seed", range(40))
def test_the_index_and_the_inlined_checks_choose_what_the_linear_scan_chooses(seed: int) -> None:
    rng = random.Random(seed)
    table = RouteTable(random_bindings(rng))
    for _ in range(60):
        ev = random_event(rng)
        assert table.candidates(ev.payload.type) == linear_scan(table, ev.payload.type)
        decision = decide(ev, table, PROCESSORS, now=NOW)
        chosen, steps = first_by_scan(table, ev)
        assert (decision.binding_id, decision.steps) == (chosen, steps)
        assert decision.candidates == len(linear_scan(table, ev.payload.type))


def test_an_exact_pattern_and_a_wildcard_are_merged_by_rank_not_by_kind() -> None:
    table = RouteTable([binding("exact-low", "message.received", priority=1), binding("any-high", "*", priority=5),
                        binding("prefix-mid", "message.*", priority=3), binding("exact-high", "message.received",
                                                                               priority=9)])
    assert [r.id for r in table.candidates("message.received")] == ["exact-high", "any-high", "prefix-mid",
                                                                    "exact-low"]
    assert [r.id for r in table.candidates("message.deleted")] == ["any-high", "prefix-mid"]
