"""Fuzzing declarative resources: Binding, Agent, Pipeline and System documents through the
apply path's validation, and valid bindings against random events through the router's filter
evaluation and selection — no crash, no hang, every refusal with a reason naming the field.
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from aurora_cli.commands.apply import DocumentErrors, load_documents
from aurora_cli.output import CliError
from services.router.events import decode_event, encode_document
from services.router.selection import RouteTable, StaticProcessors, decide
from shared.contracts.agent import Agent, AgentRouting
from shared.contracts.binding import FIXED_FIELDS, Binding
from shared.contracts.pipeline import Pipeline, PipelineRouting
from shared.contracts.resource import ResourceError, ResourceModel, parse_resource
from shared.contracts.route import RouteStatus
from shared.contracts.system import System
from tests.unit.contracts.strategies import envelopes
from tests.unit.fuzz.strategies import (
    FUZZ,
    Mutation,
    alias_bomb,
    any_json,
    every_change,
    huge_numbers,
    mutated,
    odd_strings,
)

_ids = st.sampled_from(["welcome", "a1", "p1", "b-2", "x_y"])
_patterns = st.sampled_from(["*", "message.*", "message.received", "group.*", "group.member_joined", "tool.*"])
_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "x", "user", "hi", "0"])
# Path segments that data filters and event data share, so filters meet the values they name.
_segments = st.sampled_from(["text", "items", "0", "1", "²", "١", "k", "10"])
_data_fields = st.lists(_segments, min_size=1, max_size=3).map(lambda parts: "data." + ".".join(parts))
_STRING_FIELDS = tuple(f for f in FIXED_FIELDS if f != "actor.kind")
_filters = st.one_of(
    st.fixed_dictionaries({"field": st.sampled_from(_STRING_FIELDS), "op": st.sampled_from(["eq", "neq"]),
                           "value": st.sampled_from(["user", "im.polaris.qq", "x", ""])}),
    st.fixed_dictionaries({"field": st.just("actor.kind"), "op": st.sampled_from(["eq", "neq"]),
                           "value": st.sampled_from(["user", "system", "api"])}),
    st.fixed_dictionaries({"field": st.sampled_from(FIXED_FIELDS), "op": st.just("in"),
                           "value": st.lists(st.sampled_from(["user", "api"]), min_size=1, max_size=2)}),
    st.fixed_dictionaries({"field": _data_fields, "op": st.sampled_from(["eq", "neq", "contains"]), "value": _scalars}),
    st.fixed_dictionaries({"field": _data_fields, "op": st.just("in"),
                           "value": st.lists(_scalars, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"field": _data_fields | st.sampled_from(FIXED_FIELDS),
                           "op": st.sampled_from(["starts_with", "regex"]),
                           "value": st.sampled_from(["h", "^h", "i$", "[0-9]+", "(?i)HI", "x|y"])}),
)


def _binding_doc(target_type: str, target_id: str, pattern: str, **rest: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": "Binding", "target_type": target_type, "event_pattern": pattern, **rest}
    if target_type != "discard":
        doc["target_id"] = target_id
    return doc


bindings = st.builds(
    _binding_doc,
    st.sampled_from(["agent", "agent", "pipeline", "discard"]), _ids,
    _patterns, id=_ids,
    filters=st.lists(_filters, max_size=3), priority=st.integers(-3, 3), enabled=st.booleans(),
).filter(lambda doc: doc["target_type"] != "pipeline" or doc["event_pattern"] in ("*", "message.*", "message.received"))
_steps = st.fixed_dictionaries(
    {"id": st.sampled_from(["search", "lookup", "step_2"]), "tool": st.sampled_from(["weather.get", "event_reply"])},
    optional={"arguments": st.dictionaries(st.sampled_from(["q", "text"]),
                                           st.sampled_from(["{{ event.payload.summary }}", 1]), max_size=2),
              "when": st.just("event.payload.type == 'message.received'"),
              "on_error": st.sampled_from(["fail", "continue"]), "timeout_seconds": st.floats(1, 60)},
)
agents = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.just("Agent"), "id": _ids, "agent_kind": st.just("llm")},
        optional={"events": st.lists(_patterns, max_size=2), "tools": st.lists(st.just("weather.get"), max_size=1),
                  "model": st.fixed_dictionaries({"base_url": st.just("http://127.0.0.1:1/v1"), "model": st.just("m")},
                                                 optional={"api_key_env": st.just("OPENAI_API_KEY"),
                                                           "temperature": st.floats(0, 2)}),
                  "prompt": st.text(max_size=20), "max_tool_rounds": st.integers(1, 64), "enabled": st.booleans()}),
    st.fixed_dictionaries(
        {"kind": st.just("Agent"), "id": _ids, "agent_kind": st.just("playbook")},
        optional={"events": st.lists(_patterns, max_size=2),
                  "playbook": st.fixed_dictionaries({}, optional={
                      "steps": st.lists(_steps, max_size=2, unique_by=lambda s: s["id"]),
                      "answer": st.just("{{ steps }}")}),
                  "chat_approval": st.booleans()}),
)
pipelines = st.fixed_dictionaries(
    {"kind": st.just("Pipeline"), "id": _ids},
    optional={"enabled": st.booleans(), "stages": st.lists(st.one_of(
        st.fixed_dictionaries({"name": st.just("f"), "type": st.just("filter"),
                               "config": st.fixed_dictionaries({}, optional={"pattern": st.just("hi"),
                                                                             "min_length": st.integers(0, 5)})}),
        st.fixed_dictionaries({"name": st.just("ai"), "type": st.just("agent"), "config": st.fixed_dictionaries(
            {"agent": _ids})}),
        st.fixed_dictionaries({"name": st.just("out"), "type": st.just("output"), "config": st.just({})}),
    ), max_size=3, unique_by=lambda s: s["name"])},
)
systems = st.fixed_dictionaries(
    {"kind": st.just("System"), "name": st.sampled_from(["crm", "erp.v2"]), "base_url": st.just("http://127.0.0.1:1")},
    optional={"timeout_seconds": st.floats(0.1, 60), "auth": st.just({"value_env": "CRM_TOKEN"}),
              "contract": st.just({"success_field": "code"}), "circuit": st.just({"failure_threshold": 2})},
)
MODELS: dict[str, type[ResourceModel]] = {"Binding": Binding, "Agent": Agent, "Pipeline": Pipeline, "System": System}
resources = bindings | agents | pipelines | systems


def _parse(doc: Any) -> ResourceModel | ResourceError:
    """What apply (the CLI before sending, and each admin endpoint) does with one document."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    model = MODELS.get(kind) if isinstance(kind, str) else None
    try:
        return parse_resource(model or Binding, doc if isinstance(doc, dict) else {"value": doc})
    except ResourceError as exc:
        assert exc.problems and all(field and reason.strip() for field, reason in exc.problems), exc.problems
        return exc


@FUZZ
@given(resources)
def test_valid_documents_are_accepted(doc: dict[str, Any]) -> None:
    outcome = _parse(doc)
    assert not isinstance(outcome, ResourceError), outcome


@FUZZ
@given(mutated(resources) | st.tuples(resources, st.sampled_from(
    ["priority", "description", "id", "event_pattern", "tools", "events", "timeout_seconds"]),
    huge_numbers | odd_strings).map(lambda c: ({**c[0], c[1]: c[2]}, Mutation((c[1],), "replace", c[0]))))
def test_near_valid_documents_are_refused_naming_the_field(case: tuple[dict[str, Any], Mutation]) -> None:
    doc, mutation = case
    outcome = _parse(doc)
    if isinstance(outcome, ResourceError) and mutation.field and not isinstance(_parse(mutation.original),
                                                                                ResourceError):
        assert mutation.field in str(outcome) or mutation.field == "kind", (str(outcome), mutation)


@FUZZ
@given(any_json)
@example({"kind": "Agent", "id": "a", "agent_kind": "llm", "prompt": "x", "skills": [[[[[[[]]]]]]] * 2})
def test_any_document_is_a_resource_or_a_resource_error(doc: Any) -> None:
    _parse(doc)
    if isinstance(doc, dict):
        for kind in MODELS:
            _parse({**doc, "kind": kind})


# --------------------------------------------------------------------------- aurora apply -f


_texts = st.one_of(
    st.text(max_size=200),
    st.lists(resources | mutated(resources).map(lambda case: case[0]), min_size=1, max_size=3).map(
        lambda docs: yaml.safe_dump_all(docs, allow_unicode=True)),
    st.sampled_from(["kind: Binding\nid: [unclosed\n", "- a\n- b\n", "kind: Agent\n---\n---\n",
                     "kind: Binding\nid: b\nevent_pattern: '*'\ntarget_type: discard\ndescription: 2026-06-19\n",
                     "a: &a [*a, *a]\nkind: Binding\n"]),
)
ALIAS_BOMB = alias_bomb("kind: Agent\nid: a\nagent_kind: playbook\nplaybook:\n  steps:\n  - id: s\n    tool: t\n"
                        "    arguments:\n", "      ")


@FUZZ
@given(_texts)
@example(ALIAS_BOMB)
def test_any_file_is_documents_or_errors_naming_file_and_document(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "resources.yml"
        path.write_text(text, encoding="utf-8")
        try:
            documents = load_documents(path)
        except DocumentErrors as exc:
            assert exc.problems and all(p.startswith(f"{path}: document ") for p in exc.problems), exc.problems
            return
        except CliError as exc:  # unreadable, not YAML, or empty
            assert str(exc).startswith(f"{path}:"), str(exc)
            return
        for document in documents:
            assert not isinstance(_parse(document.body), ResourceError)


def test_nesting_deeper_than_the_yaml_parser_recurses_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.yml"
    path.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    with pytest.raises(CliError, match=rf"{path}: not valid YAML: .*nest(ed deeper than 100 levels|ing depth)"):
        load_documents(path)


def test_an_alias_bomb_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    with pytest.raises(DocumentErrors, match=r"playbook\.steps\.0\.arguments"):
        load_documents(path)


# --------------------------------------------------------------------------- router: filters and selection

_data = st.recursive(
    _scalars | st.sampled_from(["hi there", "HI", "x y", "12"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_segments, children, max_size=3),
    max_leaves=10,
)


@st.composite
def _events(draw: st.DrawFn) -> bytes:
    doc = draw(envelopes())
    doc["payload"]["type"] = draw(st.sampled_from(["message.received", "group.member_joined", "tool.succeeded",
                                                   "message.deleted"]))
    doc["payload"]["data"] = draw(st.dictionaries(_segments, _data, max_size=3))
    return json.dumps(doc).encode()


_processors = StaticProcessors(
    agents={"welcome": AgentRouting(id="welcome", events=("message.*",)),
            "a1": AgentRouting(id="a1", events=("*",), enabled=False),
            "x_y": AgentRouting(id="x_y", events=("nonsense pattern", ""))},
    pipelines={"p1": PipelineRouting(id="p1"), "b-2": PipelineRouting(id="b-2", enabled=False)},
)
_NOW = datetime(2026, 6, 19, tzinfo=UTC)


@FUZZ
@given(st.lists(bindings, max_size=5, unique_by=lambda doc: doc["id"]), _events())
@example([_binding_doc("agent", "welcome", "*", id="b", filters=[{"field": "data.items.²", "op": "eq", "value": 1}])],
         json.dumps({"header": {"protocol": "amp/1.0", "method": "aurora/event", "message_id": "m",
                                "timestamp": "2026-06-19T12:00:00Z", "source": {"app": "a"}},
                     "payload": {"type": "message.received", "data": {"items": [1]}}}).encode())
def test_routing_any_event_ends_in_one_status_with_reasons(docs: list[dict[str, Any]], raw: bytes) -> None:
    parsed = [_parse(doc) for doc in docs]  # a refused one (e.g. actor.kind eq 'x') is never routed with
    table = RouteTable(b for b in parsed if isinstance(b, Binding))
    event = decode_event(encode_document(json.loads(raw)))
    hot = decide(event, table, _processors, now=_NOW)
    dry = decide(event, table, _processors, now=_NOW, explain=True)
    assert hot.status in get_args(RouteStatus)
    # The hot path and a dry run choose alike; a dry run explains every binding.
    assert (hot.status, hot.binding_id, hot.target) == (dry.status, dry.binding_id, dry.target)
    assert len(dry.steps) == len(table)
    assert all(step.reason.strip() for step in (*hot.steps, *dry.steps))
    if hot.status != "dispatched":
        assert hot.reason


FULL_DOCUMENTS: list[dict[str, Any]] = [
    {"kind": "Binding", "id": "welcome-new", "event_pattern": "group.member_joined", "target_type": "agent",
     "target_id": "welcome", "priority": 10, "enabled": True, "description": "d",
     "filters": [{"field": "source.app", "op": "eq", "value": "im.polaris.qq"},
                 {"field": "data.items.0", "op": "in", "value": [1, "a"]},
                 {"field": "actor.kind", "op": "neq", "value": "system"},
                 {"field": "data.text", "op": "regex", "value": "^hi"}]},
    {"kind": "Agent", "id": "welcome", "agent_kind": "playbook", "events": ["group.*"],
     "tools": ["im.polaris.qq.send_message"], "allowed_platform_tools": [], "enabled": True,
     "playbook": {"steps": [{"id": "greet", "kind": "tool", "tool": "im.polaris.qq.send_message",
                             "arguments": {"text": "{{ event.payload.summary }}"}, "on_error": "continue",
                             "timeout_seconds": 10, "verify": {"tool": "im.polaris.qq.get", "expect": "result.ok"}},
                            {"id": "ask", "kind": "interaction", "question": "ok?", "options": ["yes", "no"]}],
                  "answer": "done"}},
    {"kind": "Agent", "id": "helper", "agent_kind": "llm", "events": ["message.*"], "prompt": "be kind",
     "model": {"base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key_env": "KEY", "temperature": 0.5,
               "max_tokens": 100, "timeout_seconds": 30}, "max_tool_rounds": 4, "tool_result_limit": 1000},
    {"kind": "Pipeline", "id": "chat", "stages": [
        {"name": "f", "type": "filter", "config": {"pattern": "hi", "min_length": 1}},
        {"name": "ai", "type": "agent", "config": {"agent": "helper"}},
        {"name": "out", "type": "output", "config": {"deliver": True}}]},
    {"kind": "System", "name": "crm", "type": "http", "base_url": "http://127.0.0.1:1", "timeout_seconds": 5,
     "auth": {"header": "Authorization", "scheme": "Bearer", "value_env": "CRM_TOKEN"},
     "contract": {"success_field": "code", "success_values": [0], "message_field": "msg"},
     "probe": {"path": "/health", "method": "GET"}, "circuit": {"failure_threshold": 2, "cooldown_seconds": 5}},
]


@pytest.mark.parametrize("full", FULL_DOCUMENTS, ids=[f"{d['kind']}-{d.get('id', d.get('name'))}"
                                                      for d in FULL_DOCUMENTS])
def test_every_single_change_to_a_document_is_refused_naming_the_field(full: dict[str, Any]) -> None:
    assert not isinstance(_parse(full), ResourceError)
    for doc, mutation in every_change(full):
        outcome = _parse(doc)
        if isinstance(outcome, ResourceError) and mutation.field and mutation.field != "kind":
            assert mutation.field in str(outcome), (str(outcome), mutation)
