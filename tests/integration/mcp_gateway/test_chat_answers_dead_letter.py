"""A chat answer the gateway keeps failing to handle reaches AMP_DLQ with its reason.

The real `ChatAnswers` runs on the test's nats-server with `max_deliver=2` (the gateway's is 5;
the same code path, one retry after 2 s instead of four after 2–8 s). Deciding the approval
works, but publishing the decision fails every time: its subject has no stream (as when
JetStream refuses the publish), so each delivery fails and the last one is dead-lettered.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from services.mcp_gateway.approvals.in_chat import DURABLE, ChatAnswers, interaction_id_for
from services.mcp_gateway.approvals.store import ApprovalStore
from shared.contracts.approval import Approval, ChatQuestion
from shared.contracts.subjects import Subjects
from shared.jetstream import deadletter
from shared.jetstream.streams import approvals_bucket, ensure_bucket, ensure_streams, events_stream, fabric_streams
from tests.integration.event_bridge.helpers import read_stream, wait_for_count

APP = "im.polaris.qq"


def answer(approval_id: str) -> bytes:
    return msgspec.json.encode({
        "header": {"method": "aurora/event", "message_id": "answer-1", "timestamp": datetime.now(UTC).isoformat(),
                   "source": {"app": APP}},
        "payload": {"type": "interaction.submitted", "session_id": "g1", "actor": {"id": "u7", "kind": "user"},
                    "data": {"interaction_id": interaction_id_for(approval_id), "value": "1"}},
    })


async def test_an_answer_that_keeps_failing_is_dead_lettered_after_its_last_delivery(
    nc: NATS, subjects: Subjects
) -> None:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    kv = await ensure_bucket(js, approvals_bucket(subjects))
    store = ApprovalStore(kv)
    now = datetime.now(UTC)
    approval = Approval(id="apr-1", tool="im_send", args_hash="h", task_id="t-1", requested_at=now.isoformat(),
                        expires_at=(now + timedelta(hours=1)).isoformat(),
                        asked_in_chat=ChatQuestion(interaction_id=interaction_id_for("apr-1"), app=APP,
                                                   session_id="g1", actor_id="u7", asked_at=now.isoformat()))
    await kv.put(approval.id, msgspec.json.encode(approval))
    decisions: list[str] = []

    async def publish_decision(decided: Approval, verb: str) -> None:
        decisions.append(verb)
        await js.publish("nowhere.decision", b"{}")  # no stream: NoStreamResponseError

    answers = ChatAnswers(js, subjects, store, events_stream(subjects).name, publish_decision, max_deliver=2)
    async with answers:  # started, its durable consumer exists
        assert await _exists(js)
        ack = await js.publish(subjects.event(APP, "interaction.submitted"), answer(approval.id))
        await wait_for_count(js, "AMP_DLQ", 1, timeout=20)
    [letter] = await read_stream(nc, "AMP_DLQ")
    assert letter.subject == "amp.dlq.mcp_gateway"
    reason = letter.headers[deadletter.REASON]
    assert reason.startswith("gave up after 2 deliveries: the answer could not be handled: "), reason
    assert "NoStreamResponseError" in reason, reason
    assert letter.headers[deadletter.ORIGINAL_STREAM] == "AMP_EVENTS"
    assert letter.headers[deadletter.ORIGINAL_SEQUENCE] == str(ack.seq)
    assert decisions == ["granted", "granted"]  # tried on each delivery, then given up
    info = await js.consumer_info("AMP_EVENTS", DURABLE)
    assert info.num_ack_pending == 0 and info.num_pending == 0  # terminated, not left to redeliver


async def _exists(js: JetStreamContext) -> bool:
    try:
        await js.consumer_info("AMP_EVENTS", DURABLE)
    except NotFoundError:
        return False
    return True
