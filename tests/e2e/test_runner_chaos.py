"""Hundreds of runs on 4 runner processes while one of them is SIGKILLed every few seconds (and
started again): every run ends in a terminal state and every side effect — the reply each run
sends to its own chat session, counted by the chat app in its append-only log — happens at most
once; exactly once for every task that says it delivered.

`make test-slow` runs 400 and then the full 2,000; the default suite keeps a runner SIGKILLed
mid-run in tests/e2e/test_runner_recovery.py.
A task may end `unverified` only when a runner died between recording a reply as started and
sending it, with no audit record of the call; it then says what to check and the reply was not
sent twice — the test counts and prints those.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections import Counter
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.contracts.task import TERMINAL_STATES, decode_task
from shared.jetstream.kvmirror import read_all
from shared.jetstream.streams import audit_stream, tasks_bucket
from tests.harness.runner_stack import chat_log_of, runner_stack
from tests.harness.runs import (
    ECHO,
    RUNNER_ENV,
    apply,
    bind,
    event,
    publish_events,
    sent,
    task_id_of,
)

RUNNERS = 4
CONCURRENCY = int(RUNNER_ENV["AURORA_RUNNER_CONCURRENCY"])  # runs one runner holds at once
KILL_EVERY = 2.0  # seconds; the first one a second after the runs are published


async def audit_call_ids(nc: NATS, subjects: Subjects) -> set[str]:
    """The call id of every audit record the gateway wrote."""
    js = nc.jetstream()
    stream = audit_stream(subjects).name
    info = await js.stream_info(stream)
    ids: set[str] = set()
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        if msg.data:
            ids.add(json.loads(msg.data)["call_id"])
    return ids


@pytest.mark.slow
@pytest.mark.parametrize("runs", [400, 2000])
async def test_every_run_ends_and_every_reply_is_sent_at_most_once_while_runners_die(
        tmp_path: Path, subjects: Subjects, runs: int) -> None:
    chat_log = chat_log_of(tmp_path)
    with runner_stack(tmp_path, runners=RUNNERS).running() as stack:
        runners = stack.of("runner")
        nc = await nats.connect(stack.url)
        case = f"chaos-{uuid.uuid4().hex[:6]}"
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": "chaos", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
            "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"n": "{{ event.data.n }}"}}],
                         "answer": "run {{ steps.look.structured.n }} done"}})
        await bind(nc, subjects, "chaos", "message.received", "agent", "chaos", case=case)
        docs = [event("message.received", {"case": case, "n": n, "text": "go"}, session_id=f"s-{n}")
                for n in range(runs)]
        ids = {task_id_of(doc, "chaos"): n for n, doc in enumerate(docs)}
        kv = await nc.jetstream().key_value(tasks_bucket(subjects).name)

        started = time.monotonic()
        await publish_events(nc.jetstream(), subjects, docs)
        kills = 0
        rng = random.Random(7)
        deadline = started + (120 if runs <= 400 else 600)
        next_kill = started + 1.0
        tasks = {}
        while True:
            tasks = {key: decode_task(value) for key, value in (await read_all(kv)).items() if key in ids}
            if len(tasks) == runs and all(t.state in TERMINAL_STATES for t in tasks.values()):
                break
            assert time.monotonic() < deadline, (
                f"{sum(t.state in TERMINAL_STATES for t in tasks.values())} of {runs} runs ended; "
                f"states {Counter(t.state for t in tasks.values())}")
            if time.monotonic() >= next_kill:
                victim = rng.choice(runners)
                victim.kill()
                victim.start()
                kills += 1
                next_kill = time.monotonic() + KILL_EVERY
            await asyncio.sleep(0.5)
        elapsed = time.monotonic() - started

        states = Counter(t.state for t in tasks.values())
        replies = Counter(r["session_id"] for r in sent(chat_log))
        resumed = sum(1 for t in tasks.values() if t.attempts > 1)
        audited = sum(1 for t in tasks.values() for s in t.steps if s.note and "gateway audit" in s.note)
        print(f"\n{runs} runs on {RUNNERS} runners in {elapsed:.1f}s with {kills} SIGKILLs: {dict(states)}; "
              f"{resumed} resumed after a crash ({audited} replies' outcomes recovered from the audit); "
              f"{sum(replies.values())} replies")

        assert kills >= 1 and resumed > 0, "the chaos did not hit any run"
        assert set(states) <= {"succeeded", "unverified"}, states
        duplicated = {s: c for s, c in replies.items() if c > 1}
        assert not duplicated, f"replies sent twice: {duplicated}"
        audited_calls = await audit_call_ids(nc, subjects)
        lost = 0
        for task_id, n in ids.items():
            task = tasks[task_id]
            count = replies.get(f"s-{n}", 0)
            if task.state == "succeeded":
                assert task.delivered and count == 1, (task_id, task.delivered, count)
                assert task.answer == f"run {n} done"
                continue
            # unverified: a kill hit this task between recording its reply as started and the
            # gateway answering it — it was resumed, its reply step is still `started`, and the
            # gateway has no record of that call; the check names the step
            deliver = task.step("deliver")
            assert task.attempts > 1, (task_id, task.attempts)
            assert deliver is not None and deliver.status == "started", (task_id, deliver)
            assert deliver.call_id not in audited_calls, (task_id, deliver.call_id)
            assert task.check and "the reply" in task.check and "step deliver" in task.check, task.check
            assert count <= 1, (task_id, task.check, count)
            lost += count == 0
        # A kill can only lose the replies its runner had in flight: at most its concurrency each.
        print(f"{lost} replies lost with their runner ({states['unverified']} unverified)")
        assert lost <= kills * CONCURRENCY, (lost, kills)
        assert sum(replies.values()) == states["succeeded"] + states["unverified"] - lost
        await nc.close()

