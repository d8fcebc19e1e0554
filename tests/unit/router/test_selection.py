"""Table-driven tests of choosing exactly one binding and checking its target."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from services.router.selection import RouteTable, StaticProcessors, decide
from shared.contracts.agent import AgentRouting
from shared.contracts.binding import Binding
from shared.contracts.envelope import EventEnvelope
from shared.contracts.pipeline import PipelineRouting
from tests.unit.router.factories import agent, binding, event, pipeline

NOW = datetime(2026, 6, 19, 4, 0, tzinfo=UTC)  # 12:00 at +08:00
EVERYTHING = StaticProcessors(
    agents={"a1": agent("a1"), "a2": agent("a2"), "greeter": agent("greeter", ("group.*",)),
            "off": agent("off", enabled=False)},
    pipelines={"p1": pipeline("p1"), "p-off": pipeline("p-off", enabled=False)},
)
USER = {"actor": {"id": "u1", "kind": "user"}}


@dataclass
class Case:
    name: str
    bindings: list[Binding]
    event: EventEnvelope
    status: str
    binding_id: str | None = None
    target: tuple[str, str] | None = None
    processors: StaticProcessors = field(default_factory=lambda: EVERYTHING)


CASES = [
    Case("higher priority wins over specificity",
         [binding("exact", "message.received", priority=1), binding("any", "*", target_id="a2", priority=10)],
         event(), "dispatched", "any", ("agent", "a2")),
    Case("exact beats prefix beats any at equal priority",
         [binding("any", "*"), binding("prefix", "message.*"), binding("exact", "message.received")],
         event(), "dispatched", "exact"),
    Case("prefix beats any",
         [binding("any", "*"), binding("prefix", "message.*")], event(), "dispatched", "prefix"),
    Case("the longer prefix is more specific",
         [binding("short", "group.*"), binding("long", "group.member.*")],
         event("group.member.joined"), "dispatched", "long"),
    Case("more filters win at equal priority and pattern",
         [binding("plain", "message.*"),
          binding("scoped", "message.*", filters=[{"field": "source.app", "op": "eq", "value": "im.polaris.qq"}])],
         event(), "dispatched", "scoped"),
    Case("the earlier id breaks a full tie",
         [binding("b-rule", "message.*", target_id="a2"), binding("a-rule", "message.*")],
         event(), "dispatched", "a-rule", ("agent", "a1")),
    Case("a disabled binding is passed over",
         [binding("off", "message.received", enabled=False), binding("on", "*", target_id="a2")],
         event(), "dispatched", "on", ("agent", "a2")),
    Case("a failing filter passes the binding over",
         [binding("users", "message.*", priority=5,
                  filters=[{"field": "actor.kind", "op": "eq", "value": "user"}]),
          binding("rest", "*", target_id="a2")],
         event(actor={"id": "cron", "kind": "system"}), "dispatched", "rest"),
    Case("every filter must hold",
         [binding("both", "message.*", filters=[
             {"field": "actor.kind", "op": "eq", "value": "user"},
             {"field": "bot", "op": "eq", "value": "b1"}])],
         event(**USER, bot="b2"), "route_not_found"),
    Case("no binding matches", [binding("groups", "group.*")], event(), "route_not_found"),
    Case("no bindings at all", [], event(), "route_not_found"),
    Case("discard", [binding("mute", "message.*", target_type="discard")], event(), "discarded", "mute"),
    Case("pipeline takes a message event",
         [binding("pipe", "message.*", target_type="pipeline", target_id="p1")],
         event(), "dispatched", "pipe", ("pipeline", "p1")),
    Case("pipeline on a non-message event is incompatible",
         [binding("pipe", "*", target_type="pipeline", target_id="p1")],
         event("group.member_joined"), "processor_incompatible", "pipe", ("pipeline", "p1")),
    Case("agent without the event pattern is incompatible",
         [binding("greet", "*", target_id="greeter")],
         event("message.received"), "processor_incompatible", "greet", ("agent", "greeter")),
    Case("agent with the event pattern is dispatched",
         [binding("greet", "group.*", target_id="greeter")],
         event("group.member_joined"), "dispatched", "greet", ("agent", "greeter")),
    Case("incompatible is reported, never a silent fall-through to the next binding",
         [binding("greet", "*", target_id="greeter", priority=9), binding("fallback", "*", target_id="a1")],
         event(), "processor_incompatible", "greet"),
    Case("unknown agent", [binding("ghost", "*", target_id="nobody")], event(),
         "processor_not_found", "ghost", ("agent", "nobody")),
    Case("unknown pipeline", [binding("ghost", "message.*", target_type="pipeline", target_id="nope")],
         event(), "processor_not_found", "ghost", ("pipeline", "nope")),
    Case("disabled agent", [binding("b", "*", target_id="off")], event(), "processor_disabled", "b"),
    Case("disabled pipeline", [binding("b", "message.*", target_type="pipeline", target_id="p-off")],
         event(), "processor_disabled", "b"),
    Case("expired event is not dispatched",
         [binding("b", "*")], event(expire_at="2026-06-19T11:59:59+08:00"), "expired"),
    Case("an event expiring later is dispatched",
         [binding("b", "*")], event(expire_at="2026-06-19T12:00:01+08:00"), "dispatched", "b"),
    Case("synthetic events route exactly like real ones",
         [binding("b", "message.*")], event(synthetic=True), "dispatched", "b"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("explain", [False, True], ids=["hot-path", "explain"])
def test_selection(case: Case, explain: bool) -> None:
    decision = decide(case.event, RouteTable(case.bindings), case.processors, now=NOW, explain=explain)
    assert (decision.status, decision.binding_id) == (case.status, case.binding_id), decision
    if case.target is not None:
        assert decision.target is not None
        assert (decision.target.type, decision.target.id) == case.target
    if case.status in ("dispatched", "discarded"):
        assert decision.reason is None or case.status == "discarded"
    else:
        assert decision.reason, "every non-dispatch outcome says why"


def test_order_of_bindings_does_not_matter() -> None:
    bindings = [binding(f"b{i}", "message.*", target_id="a1") for i in range(5)]
    first = decide(event(), RouteTable(bindings), EVERYTHING, now=NOW)
    last = decide(event(), RouteTable(list(reversed(bindings))), EVERYTHING, now=NOW)
    assert first.binding_id == last.binding_id == "b0"


def test_explain_gives_every_binding_a_step_with_its_reason() -> None:
    table = RouteTable([
        binding("chosen", "message.received", priority=5),
        binding("outranked", "message.*"),
        binding("wrong-type", "group.*"),
        binding("off", "message.*", enabled=False),
        binding("bot-b2", "*", filters=[{"field": "bot", "op": "eq", "value": "b2"},
                                         {"field": "data.lang", "op": "in", "value": ["en", "fr"]}]),
    ])
    decision = decide(event(bot="b1", data={"lang": "zh"}), table, EVERYTHING, now=NOW, explain=True)
    steps = {s.binding_id: s for s in decision.steps}
    assert list(steps) == ["chosen", "off", "outranked", "wrong-type", "bot-b2"]  # rank order
    assert steps["chosen"].passed and steps["chosen"].reason.startswith("chosen")
    assert steps["outranked"].passed and "higher priority (5 > 0)" in steps["outranked"].reason
    assert not steps["wrong-type"].passed and "does not match" in steps["wrong-type"].reason
    assert not steps["off"].passed and steps["off"].reason == "disabled"
    assert not steps["bot-b2"].passed
    assert "filter 1 (bot eq 'b2') failed: found 'b1'" in steps["bot-b2"].reason
    assert "filter 2 (data.lang in ['en', 'fr']) failed: found 'zh'" in steps["bot-b2"].reason


def test_explain_lists_every_check_of_every_binding_passed_or_not() -> None:
    table = RouteTable([
        binding("off-but-matching", "message.*", enabled=False,
                filters=[{"field": "bot", "op": "eq", "value": "b1"}]),
        binding("wrong-type", "group.*", filters=[{"field": "bot", "op": "eq", "value": "b2"},
                                                  {"field": "data.lang", "op": "eq", "value": "zh"}]),
    ])
    decision = decide(event(bot="b1", data={"lang": "zh"}), table, EVERYTHING, now=NOW, explain=True)
    checks = {s.binding_id: [(c.check, c.passed, c.detail) for c in s.checks] for s in decision.steps}
    assert checks["off-but-matching"] == [
        ("enabled", False, "disabled"),
        ("event_pattern", True, "prefix pattern 'message.*' matches 'message.received'"),
        ("filter 1 (bot eq 'b1')", True, "found 'b1'"),
    ]
    # the pattern fails, and the filters are still shown, each with what was found
    assert checks["wrong-type"][1][:2] == ("event_pattern", False)
    assert checks["wrong-type"][2:] == [("filter 1 (bot eq 'b2')", False, "found 'b1'"),
                                        ("filter 2 (data.lang eq 'zh')", True, "found 'zh'")]


def test_an_expired_event_is_still_explained_in_a_dry_run() -> None:
    table = RouteTable([binding("chat", "message.*")])
    stale = event(expire_at="2020-01-01T00:00:00Z")
    assert decide(stale, table, EVERYTHING, now=NOW).steps == ()
    explained = decide(stale, table, EVERYTHING, now=NOW, explain=True)
    assert explained.status == "expired" and [s.binding_id for s in explained.steps] == ["chat"]
    assert explained.steps[0].passed and explained.steps[0].checks


def test_the_hot_path_records_no_checks() -> None:
    table = RouteTable([binding("first", "*", enabled=False), binding("second", "*")])
    assert all(step.checks == () for step in decide(event(), table, EVERYTHING, now=NOW).steps)


def test_hot_path_steps_stop_at_the_chosen_binding() -> None:
    table = RouteTable([binding("first", "*", priority=3, enabled=False), binding("second", "*", priority=2),
                        binding("third", "*", priority=1), binding("group", "group.*")])
    decision = decide(event(), table, EVERYTHING, now=NOW)
    assert [(s.binding_id, s.passed) for s in decision.steps] == [("first", False), ("second", True)]


@pytest.mark.parametrize(("winner", "loser", "because"), [
    ({"priority": 2}, {"priority": 1}, "higher priority"),
    ({"pattern": "message.received"}, {"pattern": "message.*"}, "more specific pattern"),
    ({"filters": [{"field": "bot", "op": "neq", "value": "x"}]}, {}, "more filters"),
    ({}, {}, "earlier id"),
])
def test_explain_says_why_a_matching_binding_lost(winner: dict[str, Any], loser: dict[str, Any],
                                                   because: str) -> None:
    table = RouteTable([binding("a", winner.pop("pattern", "message.*"), **winner),
                        binding("b", loser.pop("pattern", "message.*"), **loser)])
    decision = decide(event(), table, EVERYTHING, now=NOW, explain=True)
    assert decision.binding_id == "a"
    assert because in decision.steps[1].reason


def test_agents_and_pipelines_views_ignore_unknown_fields() -> None:
    import msgspec

    stored = b'{"id":"a","events":["group.*"],"enabled":true,"future_field":{"x":1}}'
    view = msgspec.json.decode(stored, type=AgentRouting)
    assert view.accepts("group.member_joined") and not view.accepts("message.received")
    assert msgspec.json.decode(b'{"id":"p","enabled":false,"stages":[]}', type=PipelineRouting).enabled is False
