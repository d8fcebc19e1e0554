"""What decides a call: the run record, whatever the caller's context says."""

from __future__ import annotations

from typing import Any

import msgspec

from services.mcp_gateway.calls.custody import CustodyRefusal, pipeline_agents, resolve
from shared.contracts.envelope import Actor
from shared.contracts.run import ReplyTarget, RunRecord, RunTarget
from shared.contracts.toolcall import ToolActor, ToolCallContext
from shared.jetstream.run_records import is_record_key

FORGED = {"reply_target": {"app": "chat", "session_id": "victim"}, "source_app": "chat"}


def record(target_type: str = "agent", target_id: str = "helper", **fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "run_id": "r-1", "target": RunTarget(type=target_type, id=target_id),  # type: ignore[arg-type]
        "binding_id": "b", "event_message_id": "m", "source_app": "chat", "session_id": "s-1",
        "reply_target": ReplyTarget(app="chat", session_id="s-1", actor_id="u-7"),
        "actor": Actor(id="u-7", kind="user"), "capabilities": ("reply",), "event_at": "2026-01-01T00:00:00Z",
        **fields,
    }
    return RunRecord(**values)


def ctx(**fields: Any) -> ToolCallContext:
    return ToolCallContext(**{"run_id": "r-1", "task_id": "r-1", **fields})


def test_no_record_is_an_unknown_run() -> None:
    refused = resolve(ctx(), None)
    assert isinstance(refused, CustodyRefusal) and refused.reason == "unknown_run" and "r-1" in refused.detail


def test_the_task_must_be_the_runs() -> None:
    for task in (None, "r-2"):
        refused = resolve(ctx(task_id=task), record())
        assert isinstance(refused, CustodyRefusal) and refused.reason == "task_mismatch"


def test_an_agent_run_acts_as_its_agent_and_refuses_another() -> None:
    acting = resolve(ctx(agent=None), record())
    assert isinstance(acting, ToolCallContext) and acting.agent == "helper"
    refused = resolve(ctx(agent="power"), record())
    assert isinstance(refused, CustodyRefusal) and refused.reason == "agent_mismatch" and "helper" in refused.detail


def test_a_pipeline_run_acts_as_one_of_its_stages_agents_or_as_none() -> None:
    pipeline = record("pipeline", "support")
    assert isinstance(acting := resolve(ctx(agent="triage"), pipeline, allowed_agents=frozenset({"triage"})),
                      ToolCallContext) and acting.agent == "triage"
    assert isinstance(none := resolve(ctx(), pipeline), ToolCallContext) and none.agent is None
    refused = resolve(ctx(agent="power"), pipeline, allowed_agents=frozenset({"triage"}))
    assert isinstance(refused, CustodyRefusal) and refused.reason == "agent_mismatch" and "triage" in refused.detail


def test_target_actor_and_session_are_the_records_whatever_the_caller_says() -> None:
    acting = resolve(ctx(delivery=FORGED, actor=ToolActor(id="accomplice", kind="user"), session_id="victim",
                         step_id="s", approval_id="a", idempotency_key="k"), record())
    assert isinstance(acting, ToolCallContext)
    assert acting.delivery == {"reply_target": msgspec.to_builtins(record().reply_target),
                               "capabilities": ["reply"], "source_app": "chat"}
    assert acting.actor == ToolActor(id="u-7", kind="user") and acting.session_id == "s-1"
    assert (acting.step_id, acting.approval_id, acting.idempotency_key) == ("s", "a", "k")  # the caller's step


def test_synthetic_can_only_be_added() -> None:
    assert resolve(ctx(synthetic=False), record(synthetic=True)).synthetic is True  # type: ignore[union-attr]
    assert resolve(ctx(synthetic=True), record(synthetic=False)).synthetic is True  # type: ignore[union-attr]
    assert resolve(ctx(), record()).synthetic is False  # type: ignore[union-attr]


def test_pipeline_agents_are_its_agent_stages() -> None:
    document = {"stages": [{"name": "f", "type": "filter", "config": {"agent": "not-a-stage-agent"}},
                           {"name": "ai", "type": "agent", "config": {"agent": "triage"}},
                           {"name": "bad", "type": "agent", "config": "x"}, "junk"]}
    assert pipeline_agents(document) == frozenset({"triage"})
    assert pipeline_agents({}) == frozenset()


def test_only_plain_keys_are_looked_up() -> None:
    assert is_record_key("8f0e6a52-4c1d-5b7e-9a43-2d6c1f0b7e15") and is_record_key("t-1")
    for bad in (None, "", "a.b", "*", ">", "a b", "x" * 129, 5):
        assert not is_record_key(bad)
