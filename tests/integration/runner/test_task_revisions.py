"""How many times a run writes its task (issue 38), read off the task bucket's own subject. A new
run's task is created at its first durable change, not when the run is taken. A playbook's write
(its reply) is not recorded `started` (the gateway's call ledger is its claim) and its outcome
waits for the task's next change — a playbook event that ends at once writes its task once,
settled with every outcome — while a run a model drove records each write `started`, then its
outcome, at once, in a pipeline too. A run that takes a while is stored running before it
changes anything."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.contracts.subjects import Subjects
from shared.jetstream.streams import tasks_bucket
from tests.fakes.openai_server import Conversation, Turn
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import ECHO, apply, bind, event, publish_events, settled, task_id_of
from tests.harness.waiting import poll


class TaskWrites:
    """Every write of one task as published to its key's subject (a core subscription sees each
    put the runner sends; no other writer touches a quiet test's task)."""

    def __init__(self) -> None:
        self.revisions: list[dict[str, Any]] = []

    async def watch(self, nc: NATS, subjects: Subjects, task_id: str) -> None:
        async def seen(msg: Msg) -> None:
            self.revisions.append(json.loads(msg.data))

        await nc.subscribe(f"$KV.{tasks_bucket(subjects).name}.{task_id}", cb=seen)
        await nc.flush()

    async def settled(self) -> list[dict[str, Any]]:
        """The writes once the last one settled the task (the stored one is read first)."""

        async def last() -> list[dict[str, Any]] | None:
            ended = self.revisions and self.revisions[-1]["state"] in {"succeeded", "partial", "failed"}
            return list(self.revisions) if ended else None

        return await poll(last, timeout=10, what="the task's settling write")


def _step(revision: dict[str, Any], step_id: str) -> str | None:
    return next((s["status"] for s in revision["steps"] if s["id"] == step_id), None)


def _shape(revisions: list[dict[str, Any]], *step_ids: str) -> list[tuple[str, tuple[str | None, ...]]]:
    """Each write as (state, the status of each named step in it)."""
    return [(r["state"], tuple(_step(r, s) for s in step_ids)) for r in revisions]


async def _run(snc: NATS, subjects: Subjects, case: str, target: str,
               target_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    await bind(snc, subjects, f"b-{case}", "message.received", target, target_id, case=case)
    doc = event("message.received", {"case": case, "text": "go"}, session_id=f"g-{case}")
    task_id = task_id_of(doc, f"b-{case}")
    writes = TaskWrites()
    await writes.watch(snc, subjects, task_id)
    await publish_events(snc.jetstream(), subjects, [doc])
    task = await settled(snc, subjects, task_id)
    return task, await writes.settled()


async def test_a_playbook_event_that_ends_at_once_writes_its_task_once(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rev-pb-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"v": 1}}],
                     "answer": "seen {{ steps.look.structured.v }}"}})
    task, revisions = await _run(snc, subjects, case, "agent", f"a-{case}")
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task, indent=1)[:3000]
    # created settled, with the read's and the reply's outcomes: the reply is not recorded
    # `started` first, and neither being taken nor its outcome has a revision of its own.
    assert _shape(revisions, "look", "deliver") == [("succeeded", ("finished", "finished"))]
    reply = next(s for s in task["steps"] if s["id"] == "deliver")
    assert reply["classification"] == "ok" and reply["call_id"], reply


async def test_a_model_driven_run_records_its_writes_at_once(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rev-llm-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:
        return chat.call("event_reply", text="on it") if chat.turn == 1 else chat.answer("done")

    stack.fake.script(case, script)
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "model": {"base_url": stack.fake.base_url, "model": case}})
    task, revisions = await _run(snc, subjects, case, "agent", f"a-{case}")
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task, indent=1)[:3000]
    # The agent replied itself (`m1.t1`), so no second reply: its outcome has a revision of its own.
    assert _shape(revisions, "m1.t1", "deliver") == [
        ("running", ("started", None)), ("running", ("finished", None)), ("succeeded", ("finished", None))]


async def test_a_pipeline_whose_ai_stage_is_a_model_records_its_reply_at_once(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rev-pl-{uuid.uuid4().hex[:6]}"
    stack.fake.script(case, lambda chat: chat.answer("hello"))
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["message.*"],
        "tools": [f"{ECHO}.echo"], "model": {"base_url": stack.fake.base_url, "model": case}})
    await apply(snc, subjects, "pipelines", {"kind": "Pipeline", "id": f"p-{case}", "stages": [
        {"name": "clean", "type": "preprocess", "config": {"strip": True}},
        {"name": "ai", "type": "agent", "config": {"agent": f"a-{case}"}},
        {"name": "out", "type": "output"}]})
    task, revisions = await _run(snc, subjects, case, "pipeline", f"p-{case}")
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task, indent=1)[:3000]
    assert _shape(revisions, "deliver") == [
        ("running", ("started",)), ("running", ("finished",)), ("succeeded", ("finished",))]


async def test_a_run_that_takes_a_while_is_stored_running_before_it_changes_anything(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    """The model thinks for 3 s: the task is listed `running` within a moment (tasks/watch.py), with
    no step yet, so an operator sees it and can cancel it; it settles afterwards as usual."""
    case = f"rev-slow-{uuid.uuid4().hex[:6]}"
    stack.fake.script(case, lambda chat: Turn(content="thought it over", delay=3.0))
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "model": {"base_url": stack.fake.base_url, "model": case}})
    task, revisions = await _run(snc, subjects, case, "agent", f"a-{case}")
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:3000]
    first = revisions[0]
    assert (first["state"], first["steps"]) == ("running", []), json.dumps(first, indent=1)[:3000]
    shown, ended = (datetime.fromisoformat(r["updated_at"]) for r in (first, revisions[-1]))
    assert (ended - shown).total_seconds() > 1.5, "stored while the model was still thinking"

