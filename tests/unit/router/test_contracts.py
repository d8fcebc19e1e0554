"""Bindings, agents and pipelines are refused with the reason when they are invalid."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import pytest

from services.router.dispatch import build_run, reply_target
from services.router.events import decode_event
from services.router.traces import trace_key
from shared.contracts.agent import Agent
from shared.contracts.binding import Binding
from shared.contracts.pipeline import Pipeline
from shared.contracts.resource import ResourceError, canonical_json, parse_resource
from shared.contracts.run import RUN_ID_NAMESPACE, RunTarget, decode_recorded_run, run_id_for
from shared.resources import kind_named, kind_of
from tests.unit.router.factories import event, event_doc

GOOD: dict[str, Any] = {"kind": "Binding", "id": "welcome", "event_pattern": "group.member_joined",
                        "target_type": "agent", "target_id": "greeter"}


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"event_pattern": "group.*.joined"}, "event_pattern", "not an event pattern"),
    ({"event_pattern": "Message"}, "event_pattern", "not an event pattern"),
    ({"id": "has.dot"}, "id", "pattern"),
    ({"target_type": "webhook"}, "target_type", "'pipeline', 'agent' or 'discard'"),
    ({"target_id": None}, "(root)", "needs a target_id"),
    ({"target_type": "discard"}, "(root)", "takes no target_id"),
    ({"target_type": "pipeline", "target_id": "p"}, "(root)", "pipelines accept only message.*"),
    ({"priority": "10"}, "priority", "integer"),
    ({"enabled": "yes"}, "enabled", "boolean"),
    ({"colour": "red"}, "colour", "Extra inputs"),
    ({"filters": [{"field": "actor.name", "op": "eq", "value": "x"}]}, "filters.0", "unknown field"),
    ({"filters": [{"field": "data.", "op": "eq", "value": "x"}]}, "filters.0", "unknown field"),
    ({"filters": [{"field": "bot", "op": "like", "value": "x"}]}, "filters.0.op", "'eq'"),
    ({"filters": [{"field": "bot", "op": "regex", "value": "(unclosed"}]}, "filters.0", "does not compile"),
    ({"filters": [{"field": "bot", "op": "in", "value": "b1"}]}, "filters.0", "non-empty list"),
    ({"filters": [{"field": "bot", "op": "eq", "value": 5}]}, "filters.0", "compare it with a string"),
    ({"filters": [{"field": "actor.kind", "op": "eq", "value": "robot"}]}, "filters.0", "never 'robot'"),
    ({"filters": [{"field": "data.x", "op": "eq", "value": {"a": 1}}]}, "filters.0", "string, number"),
    ({"filters": [{"field": "data.x", "op": "starts_with", "value": 1}]}, "filters.0", "non-empty string"),
])
def test_invalid_binding_is_rejected_with_the_field_and_reason(change: dict[str, Any], field: str,
                                                               words: str) -> None:
    with pytest.raises(ResourceError) as caught:
        parse_resource(Binding, {**GOOD, **change})
    fields = [f for f, _ in caught.value.problems]
    assert field in fields, caught.value.problems
    assert words in str(caught.value)


def test_valid_binding_round_trips_canonically() -> None:
    a = parse_resource(Binding, GOOD)
    b = parse_resource(Binding, dict(reversed(list({**GOOD, "priority": 0, "filters": []}.items()))))
    assert canonical_json(a) == canonical_json(b)
    assert parse_resource(Binding, msgspec.json.decode(canonical_json(a))) == a


def test_pipeline_binding_on_prefix_or_any_pattern_is_accepted() -> None:
    for pattern in ("message.*", "*", "message.received"):
        parse_resource(Binding, {**GOOD, "event_pattern": pattern, "target_type": "pipeline"})


def test_agent_and_pipeline_documents() -> None:
    agent = parse_resource(Agent, {"kind": "Agent", "id": "welcome", "agent_kind": "playbook",
                                   "events": ["group.*"], "tools": ["im.polaris.qq.send_message"]})
    assert agent.accepts("group.member_joined") and not agent.accepts("message.received")
    with pytest.raises(ResourceError, match="not an event pattern"):
        parse_resource(Agent, {"id": "x", "agent_kind": "llm", "events": ["group.**"]})
    with pytest.raises(ResourceError, match="agent_kind"):
        parse_resource(Agent, {"id": "x", "agent_kind": "robot"})
    parse_resource(Pipeline, {"id": "chat", "stages": [{"name": "ai", "type": "llm", "config": {"m": 1}}]})


def test_kind_registry() -> None:
    assert kind_of("Binding").area == "bindings"
    assert kind_named("agents").kind == "Agent" and kind_named("pipeline").area == "pipelines"
    assert kind_of("System").id_field == "name"
    with pytest.raises(ResourceError, match="unknown kind"):
        kind_of("Widget")


def test_trace_keys_are_valid_and_never_collide() -> None:
    assert trace_key("abc-123") == "abc-123"
    encoded = trace_key("evt:42")
    assert encoded.startswith("=") and ":" not in encoded
    assert trace_key("a.b") == "a.b" and trace_key("a..b") != "a..b"


def test_run_id_is_deterministic_per_event_and_binding() -> None:
    assert run_id_for("m1", "b1") == run_id_for("m1", "b1")
    for message_id, binding_id in (("m1", "b1"), ("evt:你好", "welcome-new-members")):
        expected = uuid.uuid5(RUN_ID_NAMESPACE, f"{message_id}\n{binding_id}")
        assert run_id_for(message_id, binding_id) == str(expected)
    assert len({run_id_for("m1", "b1"), run_id_for("m1", "b2"), run_id_for("m2", "b1")}) == 3


def test_reply_target_is_frozen_from_the_event_or_absent() -> None:
    target = reply_target(event(session_id="group_1", bot="b", subject={"kind": "message", "id": "m7"}))
    assert target is not None and (target.app, target.session_id, target.message_id) == (
        "im.polaris.qq", "group_1", "m7")
    assert reply_target(event("schedule.triggered")) is None
    member = reply_target(event("group.member_joined", conversation="g1",
                                subject={"kind": "member", "id": "u1"}))
    assert member is not None and member.message_id is None
    assert (member.subject_kind, member.subject_id) == ("member", "u1")


def test_a_friend_request_without_a_session_keeps_its_subject_and_actor() -> None:
    target = reply_target(event("friend.request_received", subject={"kind": "friend_request", "id": "fr1"},
                                actor={"id": "u9", "kind": "user"}))
    assert target is not None
    assert (target.session_id, target.conversation) == (None, None)
    assert (target.subject_kind, target.subject_id, target.actor_id) == ("friend_request", "fr1", "u9")


@pytest.mark.parametrize("limit", [10_000_000, 100])
def test_run_carries_the_event_inline_or_by_reference(limit: int) -> None:
    doc = event_doc(session_id="s", synthetic=True, data={"text": "你好"})
    raw = msgspec.json.encode(doc)
    run = build_run(decode_event(raw), raw, binding_id="b1", target=RunTarget(type="agent", id="a1"),
                    timestamp="2026-06-19T04:00:00.000+00:00",
                    router_instance="r1", inline_limit=limit, store_bucket="AMP_RUN_EVENTS")
    decoded = decode_recorded_run(run.record)  # the run is its record (issue 38)
    assert decoded.header.method == "agent/run" and decoded.header.message_id == run.run_id
    assert decoded.payload.run_id == run_id_for(doc["header"]["message_id"], "b1")
    assert decoded.payload.synthetic is True
    assert decoded.payload.delivery.reply_target is not None
    if limit > len(raw):
        assert run.offload is None and decoded.payload.event_ref is None
        assert decoded.payload.event is not None and decoded.payload.event.payload.data == {"text": "你好"}
    else:
        assert decoded.payload.event is None and run.offload is not None
        assert decoded.payload.event_ref == run.offload and run.offload.size == len(raw)
