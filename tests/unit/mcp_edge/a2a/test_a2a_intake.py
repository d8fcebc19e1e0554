"""An A2A message as the edge's platform event, and where its task will be."""

from __future__ import annotations

import json

import msgspec
import pytest
from a2a.types.a2a_pb2 import Message, Part, Role
from google.protobuf.struct_pb2 import Value

from services.event_bridge.mapping import Rejected, map_signal
from services.mcp_edge.a2a.intake import (
    EmptyMessage,
    candidate_task_ids,
    message_data,
    message_signal,
    routing_bindings,
)
from shared.contracts.binding import Binding
from shared.contracts.run import run_id_for


def message(*parts: Part, context_id: str = "ctx-9") -> Message:
    return Message(message_id="m-1", context_id=context_id, role=Role.ROLE_USER, parts=list(parts))


def test_text_and_data_parts_are_kept_in_order() -> None:
    data_value = Value()
    data_value.struct_value.update({"order": 7})
    data = message_data(message(Part(text="look up"), Part(data=data_value), Part(text="order 7")),
                        agent="orders", token_id="tok1")
    assert data.text == "look up\norder 7"
    assert [p.kind for p in data.parts] == ["text", "data", "text"]
    assert data.parts[1].data == {"order": 7}
    assert (data.agent, data.context_id, data.message_id, data.token_id) == ("orders", "ctx-9", "m-1", "tok1")


def test_data_alone_becomes_its_json_text() -> None:
    value = Value()
    value.struct_value.update({"q": "pumps"})
    assert message_data(message(Part(data=value)), agent="a", token_id="t").text == '{"q": "pumps"}'


def test_a_message_without_usable_parts_is_refused() -> None:
    with pytest.raises(EmptyMessage):
        message_data(message(Part(raw=b"\x00\x01")), agent="a", token_id="t")


def test_a_missing_context_gets_one() -> None:
    assert message_data(message(Part(text="hi"), context_id=""), agent="a", token_id="t").context_id


def test_the_bridge_makes_it_an_event_of_the_edge() -> None:
    data = message_data(message(Part(text="hello")), agent="orders", token_id="tok1")
    event = map_signal(message_signal(data, instance="edge-1", event_id="ev-1"), subject_app_token="aurora_edge")
    assert not isinstance(event, Rejected), event
    assert event.header.message_id == "ev-1" and event.header.source.app == "aurora.edge"
    payload = event.payload
    assert payload.type == "a2a.message.received" and payload.data["text"] == "hello"
    assert payload.actor is not None and payload.actor.id == "token:tok1"
    assert payload.subject is None and payload.conversation is None  # no reply target: the answer stays the task's


def test_an_app_may_not_send_a2a_events() -> None:
    data = message_data(message(Part(text="hello")), agent="orders", token_id="tok1")
    forged = msgspec.structs.replace(message_signal(data, instance="i"), app="test.chat")
    assert isinstance(map_signal(forged, subject_app_token="test_chat"), Rejected)


def test_candidates_are_the_routing_bindings_run_ids_this_agents_first() -> None:
    documents = [
        {"kind": "Binding", "id": "other", "event_pattern": "a2a.*", "target_type": "agent", "target_id": "x",
         "priority": 50},
        {"kind": "Binding", "id": "mine", "event_pattern": "a2a.message.received", "target_type": "agent",
         "target_id": "orders"},
        {"kind": "Binding", "id": "off", "event_pattern": "a2a.>", "target_type": "agent", "target_id": "orders",
         "enabled": False},
        {"kind": "Binding", "id": "chat", "event_pattern": "message.received", "target_type": "agent",
         "target_id": "orders"},
        {"kind": "Binding", "id": "bad"},
        {"kind": "Binding", "id": "filtered", "event_pattern": "a2a.message.received", "target_type": "agent",
         "target_id": "orders", "filters": [{"field": "data.agent", "op": "eq", "value": "orders"}]},
    ]
    bindings = routing_bindings(json.dumps(d).encode() for d in documents)
    assert sorted(b.id for b in bindings) == ["filtered", "mine", "other"]
    assert candidate_task_ids("ev-1", bindings, "orders") == [
        run_id_for("ev-1", "filtered"), run_id_for("ev-1", "mine"), run_id_for("ev-1", "other")]
    assert isinstance(bindings[0], Binding)
