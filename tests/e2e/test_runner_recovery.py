"""Runner processes that die or stop mid-run lose nothing.

- SIGKILL: the run comes back after the ack wait to another runner, which resumes the task from
  its step log — the model is not asked again for turns it already answered, and a reply the
  agent already sent is not sent again; a playbook's write whose outcome was not yet written is
  asked of the gateway again under its call id, not made again.
- SIGTERM: a runner lets short runs finish; a long one is handed back at its next step (nak) and
  another runner continues at once, without waiting for the ack wait.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NATS

from services.runner.tools.client import step_call_id
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.runner_stack import RunnerStack as Stack
from tests.harness.runner_stack import chat_log_of, runner_stack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    poll,
    publish_events,
    sent,
    settled,
    task,
    task_id_of,
)


def _stack(tmp_path: Path, **runner_env: str) -> Iterator[Stack]:
    with runner_stack(tmp_path, runners=2, runner_env=runner_env).running() as running:
        yield Stack(running, chat_log_of(tmp_path))


async def _holder(nc: NATS, subjects: Subjects, task_id: str, done: str) -> str:
    """The runner holding the task once step `done` is recorded."""
    for _ in range(300):
        found = await task(nc, subjects, task_id)
        if found is not None and any(s["id"] == done and s["status"] == "finished" for s in found["steps"]):
            return str(found["runner"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"step {done} of {task_id} never finished: {json.dumps(found)[:2000]}")


async def test_a_sigkilled_runner_loses_nothing_and_repeats_nothing(tmp_path: Path, subjects: Subjects) -> None:
    fake = FakeOpenAI().start()
    stack_iter = _stack(tmp_path)
    stack = next(stack_iter)
    nc = await nats.connect(stack.url)
    try:
        case = f"kill-{uuid.uuid4().hex[:6]}"

        def script(chat: Conversation) -> Turn:
            if chat.turn == 1:
                return chat.call("event_reply", text="on it")
            if chat.turn == 2:
                return chat.call("slow", seconds=4)
            return chat.answer("done after the slow read")

        fake.script(case, script)
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"], "tools": [f"{ECHO}.slow"],
            "model": {"base_url": fake.base_url, "model": case}})
        await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
        doc = event("message.received", {"case": case, "text": "check the pump"}, session_id=f"g-{case}")
        await publish_events(nc.jetstream(), subjects, [doc])
        task_id = task_id_of(doc, f"b-{case}")

        holder = await _holder(nc, subjects, task_id, "m1.t1")  # the agent's own reply is recorded
        await asyncio.sleep(1.0)  # now inside the slow read
        stack.processes[holder].kill()
        final = await settled(nc, subjects, task_id, timeout=40)

        assert final["state"] == "succeeded", json.dumps(final, indent=1)[:4000]
        assert final["attempts"] == 2 and final["runner"] != holder
        assert final["answer"] == "done after the slow read" and final["delivered"] is True
        assert [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"] == ["on it"]
        turns = [c.turn for c in fake.requests_for(case)]
        assert turns.count(1) == 1, turns  # the first turn came from the step log, not the model
        reply = next(s for s in final["steps"] if s["id"] == "m1.t1")
        assert reply["name"] == "event_reply" and reply["classification"] == "ok"
        assert not [s for s in final["steps"] if s["id"] == "deliver"]  # no second reply
    finally:
        await nc.close()
        fake.stop()
        next(stack_iter, None)


async def test_a_playbook_write_whose_outcome_was_not_yet_written_is_looked_up_not_made_again(
        tmp_path: Path, subjects: Subjects) -> None:
    """A playbook's write is not recorded `started` and its outcome waits for the task's next
    change (tool_steps): a runner killed after the write (the agent's reply), during the slow read
    that follows, leaves nothing of it in the task; the next runner takes the same path, makes the
    write again under the same call id (its first call's id is the same in every attempt), and
    the gateway's call ledger answers with the result it recorded: sent once."""
    stack_iter = _stack(tmp_path)
    stack = next(stack_iter)
    nc = await nats.connect(stack.url)
    try:
        case = f"pbkill-{uuid.uuid4().hex[:6]}"
        session = f"g-{case}"
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.slow"],
            "playbook": {"steps": [
                # a second's read first: the task's watch stores it (running, nothing done) before
                # the reply, so the reply's outcome waits for the task's next change (the last)
                {"id": "first", "tool": f"{ECHO}.slow", "arguments": {"seconds": 1}},
                {"id": "reply", "tool": "event_reply", "arguments": {"text": "on it"}},
                {"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": 4}},
            ], "answer": "said {{ steps.reply.structured.text }}, slept {{ steps.wait.structured.slept }} s"}})
        await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
        doc = event("message.received", {"case": case, "text": "check the pump"}, session_id=session)
        await publish_events(nc.jetstream(), subjects, [doc])
        task_id = task_id_of(doc, f"b-{case}")
        first_call = step_call_id(task_id, "reply", 1, first=True, side_effect="write")

        def replies() -> list[str]:
            return [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == session]

        async def replied() -> dict[str, Any] | None:
            found = await task(nc, subjects, task_id)
            return found if found is not None and replies() == ["on it"] else None

        await poll(replied, timeout=20, what="the agent's reply to reach the chat app")
        await asyncio.sleep(1.0)  # the runner has the reply's answer and sits in the slow read
        during = await task(nc, subjects, task_id)
        assert during is not None
        holder = str(during["runner"])
        # The kill lands in the window: the write was made, the task (stored by its watch) has no
        # step of it — not `started`, not its outcome.
        assert during["state"] == "running" and during["steps"] == [], json.dumps(during["steps"])
        assert replies() == ["on it"]
        stack.processes[holder].kill()
        final = await settled(nc, subjects, task_id, timeout=40)

        ending = {key: final[key] for key in ("state", "error", "answer", "transitions")}
        assert final["state"] == "succeeded", json.dumps(ending, indent=1)
        assert final["attempts"] == 2 and final["runner"] != holder
        assert replies() == ["on it"]  # once, and no second reply: the agent replied itself
        reply = next(s for s in final["steps"] if s["id"] == "reply")
        # asked again under the first attempt's call id: the ledger's recorded result, not a second send
        assert reply["classification"] == "ok" and reply["call_id"] == first_call, reply
        assert final["answer"] == "said on it, slept 4 s" and final["delivered"] is True
        assert not [s for s in final["steps"] if s["id"] == "deliver"]
    finally:
        await nc.close()
        next(stack_iter, None)


def _counted(stack: Stack, key: str) -> int:
    """How many times the echo app's counter_increment ran for `key` (its append-only file)."""
    path = stack.chat_log.with_name("echo-counter.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return sum(1 for line in lines if line.strip() and json.loads(line)["key"] == key)


async def test_a_granted_write_whose_resuming_runner_dies_after_it_is_taken_over(
        tmp_path: Path, subjects: Subjects) -> None:
    """A granted write, made by the runner that resumed the task, then that runner SIGKILLed in
    the slow read after it (the write's outcome not written yet): the grant's event comes again
    and another runner takes the task over, looks the write up and finishes — made once."""
    stack_iter = _stack(tmp_path)
    stack = next(stack_iter)
    nc = await nats.connect(stack.url)
    try:
        case = f"grkill-{uuid.uuid4().hex[:6]}"
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
            "tools": [f"{ECHO}.counter_increment", f"{ECHO}.slow"],
            "playbook": {"steps": [
                {"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}},
                {"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": 4}},
            ], "answer": "counted {{ steps.count.structured.count }}, slept {{ steps.wait.structured.slept }} s"}})
        await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
        doc = event("message.received", {"case": case, "text": "count"}, session_id=f"g-{case}")
        await publish_events(nc.jetstream(), subjects, [doc])
        task_id = task_id_of(doc, f"b-{case}")
        waiting = await settled(nc, subjects, task_id, timeout=20, states=("awaiting_approval",))
        await admin_request(nc, subjects, "approvals", "grant", {"id": waiting["approval_id"], "by": "alice"},
                            timeout=20)

        async def written() -> bool:
            return _counted(stack, case) == 1

        await poll(written, timeout=20, what="the granted write to reach the echo app")
        await asyncio.sleep(1.0)  # the resuming runner has the write's answer and sits in the slow read
        during = await task(nc, subjects, task_id)
        assert during is not None and during["state"] == "running", during
        assert [(s["id"], s["status"]) for s in during["steps"]] == [("count", "started")], during["steps"]
        holder = str(during["runner"])
        stack.processes[holder].kill()
        final = await settled(nc, subjects, task_id, timeout=40)

        ending = {key: final[key] for key in ("state", "error", "answer", "attempts", "transitions")}
        assert final["state"] == "succeeded", json.dumps(ending, indent=1)
        assert final["attempts"] == 3 and final["runner"] != holder  # run, resumed on the grant, taken over
        assert _counted(stack, case) == 1  # the write was made once
        count = next(s for s in final["steps"] if s["id"] == "count")
        assert "recovered by asking the gateway again" in (count["note"] or ""), count
        assert final["answer"] == "counted 1, slept 4 s" and final["delivered"] is True
        assert [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"] == [final["answer"]]
    finally:
        await nc.close()
        next(stack_iter, None)


async def test_sigterm_finishes_short_runs_and_hands_long_ones_back(tmp_path: Path, subjects: Subjects) -> None:
    stack_iter = _stack(tmp_path, AURORA_RUNNER_ACK_WAIT_SECONDS="60", AURORA_RUNNER_FINISH_GRACE_SECONDS="3",
                        AURORA_RUNNER_TOOL_TIMEOUT_SECONDS="15")
    stack = next(stack_iter)
    nc = await nats.connect(stack.url)
    loop = asyncio.get_running_loop()
    try:
        case = f"term-{uuid.uuid4().hex[:6]}"
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
            "tools": [f"{ECHO}.slow", f"{ECHO}.echo"],
            "playbook": {"steps": [
                {"id": "first", "tool": f"{ECHO}.echo", "arguments": {"v": 1}},
                {"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": "{{ event.data.seconds }}"}},
            ], "answer": "slept {{ steps.wait.structured.slept }}"}})
        await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)

        # A run shorter than the grace finishes where it is.
        short = event("message.received", {"case": case, "seconds": 1, "text": "a"}, session_id=f"g-{case}-s")
        await publish_events(nc.jetstream(), subjects, [short])
        short_id = task_id_of(short, f"b-{case}")
        holder = await _poll_runner(nc, subjects, short_id)
        process = stack.processes[holder]
        assert await loop.run_in_executor(None, process.terminate, 20.0) == 0, process.logs()[-3000:]
        done_short = await settled(nc, subjects, short_id, timeout=10)
        assert done_short["state"] == "succeeded" and done_short["attempts"] == 1, json.dumps(done_short)[:3000]
        assert done_short["runner"] == holder and "handing runs back" not in process.logs()
        process.start()
        await process.ready()

        # A longer one is handed back at its next step and taken at once by the other runner.
        long = event("message.received", {"case": case, "seconds": 8, "text": "b"}, session_id=f"g-{case}-l")
        await publish_events(nc.jetstream(), subjects, [long])
        long_id = task_id_of(long, f"b-{case}")
        holder = await _poll_runner(nc, subjects, long_id)
        process = stack.processes[holder]
        assert await loop.run_in_executor(None, process.terminate, 20.0) == 0, process.logs()[-3000:]
        done_long = await settled(nc, subjects, long_id, timeout=40)  # far less than the 60 s ack wait
        assert done_long["state"] == "succeeded", json.dumps(done_long, indent=1)[:4000]
        assert done_long["attempts"] == 2 and done_long["runner"] != holder
        reasons = [t["reason"] for t in done_long["transitions"] if t["to"] == "queued" and t["by"] == holder]
        assert reasons == ["run received", "handed back: the runner is stopping"]
        assert "handing runs back" in process.logs()
    finally:
        await nc.close()
        next(stack_iter, None)


async def _poll_runner(nc: NATS, subjects: Subjects, task_id: str) -> str:
    """The runner of the task, once it runs."""

    async def running() -> str | None:
        found = await task(nc, subjects, task_id)
        return str(found["runner"]) if found is not None and found["state"] == "running" else None

    return await poll(running, timeout=10, what=f"{task_id} to run")
