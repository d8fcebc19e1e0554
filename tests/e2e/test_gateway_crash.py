"""The gateway SIGKILLed with replies in flight, and started again (issue 13, "a gateway crash
leaves every in-flight call `unverified`").

Two runners each hold 8 runs whose replies a chat app has already sent — it answers slowly —
when the gateway dies. The runners' answers are lost; they ask again under the same call ids.
The new gateway finds each call `executing` in its call ledger under an instance that is gone:
the chat app's `send_message` deduplicates on the idempotency key, so the call is sent again
under the same key, the app answers with the message it sent the first time, and every reply
is delivered exactly once (counted in the app's own log). The same replies through a chat app
that does not declare deduplication cannot be known: those tasks end `unverified`, saying what
to check, and nothing was sent twice.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import nats
import pytest

from shared.contracts.subjects import Subjects
from shared.contracts.task import TERMINAL_STATES, Task, decode_task
from shared.jetstream.kvmirror import read_all
from shared.jetstream.streams import tasks_bucket
from tests.harness.runs import (
    CHAT_PLATFORM,
    ECHO,
    RUNNER_ENV,
    apply,
    bind,
    event,
    publish_events,
    sent,
    stdio,
    task_id_of,
)
from tests.harness.stack import StackBuilder

PYTHON = sys.executable
APPS = Path(__file__).resolve().parents[1] / "apps"
CHAT, PLAIN = "test.chat", "test.plainchat"  # the second declares no deduplication
PER_RUNNER = 8
PLAIN_RUNS = 4
DEDUP_RUNS = 2 * PER_RUNNER - PLAIN_RUNS  # all of them in flight at once
SEND_DELAY = 4.0  # the app's answer takes this long: the gateway dies while it waits


def _chat(log: Path, package: str, *, deduplicates: bool) -> dict[str, object]:
    mcp: dict[str, object] = {"env": {"CHAT_LOG_FILE": str(log)}}
    if deduplicates:
        mcp["idempotency_key_tools"] = ["send_message"]
    return stdio([PYTHON, "-m", "apps.aurora_app_chat"], package=package, mcp=mcp, platform=CHAT_PLATFORM,
                 startup={"send_delay_seconds": SEND_DELAY})


async def _tasks(kv: object, ids: set[str]) -> dict[str, Task]:
    return {key: decode_task(value) for key, value in (await read_all(kv)).items() if key in ids}  # type: ignore[arg-type]


@pytest.mark.timeout(240)
async def test_replies_in_flight_when_the_gateway_dies_are_delivered_exactly_once(
        tmp_path: Path, subjects: Subjects) -> None:
    chat_log, plain_log = tmp_path / "chat-sent.jsonl", tmp_path / "plain-sent.jsonl"
    apps = {
        "chat": _chat(chat_log, CHAT, deduplicates=True),
        "plainchat": _chat(plain_log, PLAIN, deduplicates=False),
        "echo": stdio([PYTHON, str(APPS / "echo_app.py")], package=ECHO),
    }
    # Each runner holds PER_RUNNER runs at once, as in the try.
    runner_env = {**RUNNER_ENV, "AURORA_RUNNER_CONCURRENCY": str(PER_RUNNER)}
    builder = StackBuilder(tmp_path).apps(apps).bridge().supervisor().gateway().router().runners(2, **runner_env)
    with builder.running() as stack:
        gateway = stack["gateway"]
        nc = await nats.connect(stack.url)
        case = f"crash-{uuid.uuid4().hex[:6]}"
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": "crash", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
            "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"n": "{{ event.data.n }}"}}],
                         "answer": "run {{ steps.look.structured.n }} done"}})
        await bind(nc, subjects, "crash", "message.received", "agent", "crash", case=case)
        docs = [event("message.received", {"case": case, "n": n, "text": "go"}, session_id=f"s-{n}",
                      app=CHAT if n < DEDUP_RUNS else PLAIN)
                for n in range(DEDUP_RUNS + PLAIN_RUNS)]
        ids = {task_id_of(doc, "crash"): n for n, doc in enumerate(docs)}
        kv = await nc.jetstream().key_value(tasks_bucket(subjects).name)
        await publish_events(nc.jetstream(), subjects, docs)

        # The positive sign that every reply is in flight: the apps have sent them all, and
        # their answers (SEND_DELAY) are still on the way.
        deadline = time.monotonic() + 60
        while len(sent(chat_log)) < DEDUP_RUNS or len(sent(plain_log)) < PLAIN_RUNS:
            assert time.monotonic() < deadline, (len(sent(chat_log)), len(sent(plain_log)))
            await asyncio.sleep(0.05)
        tasks = await _tasks(kv, set(ids))
        assert not any(t.state in TERMINAL_STATES for t in tasks.values()), Counter(t.state for t in tasks.values())
        gateway.kill()
        gateway.start()

        deadline = time.monotonic() + 150
        while True:
            tasks = await _tasks(kv, set(ids))
            if len(tasks) == len(ids) and all(t.state in TERMINAL_STATES for t in tasks.values()):
                break
            assert time.monotonic() < deadline, Counter(t.state for t in tasks.values())
            await asyncio.sleep(0.5)

        replies = Counter(r["session_id"] for r in sent(chat_log))
        states = dict(Counter(t.state for t in tasks.values()))
        print(f"\n{len(ids)} replies in flight when the gateway died: {states}; "
              f"{gateway.logs().count('call sent again under its idempotency key')} sent again under their key")
        plain_replies = Counter(r["session_id"] for r in sent(plain_log))
        for task_id, n in ids.items():
            found = tasks[task_id]
            deliver = found.step("deliver")
            if n < DEDUP_RUNS:
                assert found.state == "succeeded" and found.delivered, (n, found.state, found.check, deliver)
                assert found.answer == f"run {n} done"
                assert replies[f"s-{n}"] == 1, (n, replies)
            else:
                assert found.state == "unverified", (n, found.state, deliver)
                assert found.check and "does not deduplicate" in found.check and "step deliver" in found.check, (
                    found.check)
                assert plain_replies[f"s-{n}"] == 1, (n, plain_replies)  # sent once, never again
        assert sum(replies.values()) == DEDUP_RUNS and sum(plain_replies.values()) == PLAIN_RUNS
        await nc.close()
