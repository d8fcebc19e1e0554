"""A write call's two reads at the gateway overlap: the call ledger's entry for the call id is
asked for before the run's record has been read, so the call waits for one read, not two
(`CallPipeline.answer`, `CallLedger.look_up`). Watched on the wire: the test's own
connection sees every JetStream API request and reply in the order nats-server routes them."""

from __future__ import annotations

import json
import uuid

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.contracts.subjects import Subjects
from shared.nats.inline_subscription import subscribe_inline
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import apply, bind, event, publish_events, settled, task_id_of


async def test_a_reply_calls_ledger_read_starts_before_the_run_record_is_read(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"reads-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {"kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook",
                                          "events": ["*"], "playbook": {"steps": [], "answer": "noted"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    seen: list[tuple[str, str, bytes]] = []  # (subject, reply, data) in the order they were routed

    def note(msg: Msg) -> None:
        seen.append((msg.subject, msg.reply, msg.data))

    # Noted in the read loop, as they arrive: two callback subscriptions would each run in a task
    # of their own, and a reply could be noted before the request it answers.
    # A read is a direct get on one server (the key in its subject), a message get on a cluster
    # (the key in its body).
    watching = [await subscribe_inline(snc, "$JS.API.STREAM.MSG.GET.>", note),
                await subscribe_inline(snc, "$JS.API.DIRECT.GET.>", note),
                await subscribe_inline(snc, "_INBOX.>", note)]
    await snc.flush()
    doc = event("message.received", {"case": case, "text": "hi"}, session_id=f"group-{case}")
    run_id = task_id_of(doc, f"b-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task = await settled(snc, subjects, run_id)
    for subscription in watching:
        await subscription.unsubscribe()
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task)[:2000]

    def key_read(subject: str, data: bytes) -> str:  # a direct get names it in its subject
        return str(json.loads(data).get("last_by_subj", "")) if data else subject

    def position(wanted: str, subject_part: str) -> int:
        return next(i for i, (subject, _, data) in enumerate(seen)
                    if subject_part in subject and wanted in key_read(subject, data))

    record_read = position(f".{run_id}", "RUN_RECORDS")
    inbox = seen[record_read][1]
    record_answered = next(i for i in range(record_read + 1, len(seen)) if seen[i][0] == inbox)
    ledger_read = next(i for i, (subject, reply, _) in enumerate(seen)
                       if "CALL_LEDGER" in subject and reply.rsplit(".", 1)[0] == inbox.rsplit(".", 1)[0])
    assert ledger_read < record_answered, [(s, r) for s, r, _ in seen[record_read:record_answered + 3]]
