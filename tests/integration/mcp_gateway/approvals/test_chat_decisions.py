"""A decision made in the chat, reported by `ChatDecisions` through the gateway's real outboxes
over a real nats-server: the audit names the chat user who decided (not a person's account), and
`approval.granted` is published for the waiting task to resume on."""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime, timedelta

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from services.mcp_gateway.approvals.in_chat import ChatDecisions, interaction_id_for
from services.mcp_gateway.calls.redaction import GatewayRedaction
from services.mcp_gateway.pool.audit import AuditItem, audit_publisher
from services.mcp_gateway.reporting.outbox import Outbox
from services.mcp_gateway.reporting.platform_events import PlatformEvents
from services.mcp_gateway.reporting.reports import Reporting
from shared.contracts.approval import Approval, ChatQuestion
from shared.contracts.audit import AuditRecord
from shared.contracts.signals import SignalBase
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import audit_stream, ensure_streams, fabric_streams, signals_stream
from shared.nats.acked_publish import AckedPublisher
from shared.nats.signal_publisher import send_signal
from shared.redaction import Redactor
from tests.harness.waiting import poll
from tests.integration.event_bridge.helpers import read_stream

APP = "im.polaris.qq"


def decided_in_chat() -> Approval:
    now = datetime.now(UTC)
    return Approval(id="apr-1", tool="im_send", args_hash="h", task_id="t-1", requested_at=now.isoformat(),
                    expires_at=(now + timedelta(hours=1)).isoformat(), state="granted",
                    decided_by="user u7 in the chat", note="answered '1'",
                    asked_in_chat=ChatQuestion(interaction_id=interaction_id_for("apr-1"), app=APP,
                                               session_id="g1", actor_id="u7", asked_at=now.isoformat()))


async def test_a_decision_in_the_chat_is_audited_as_the_chat_user_and_published(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, [*fabric_streams(subjects), audit_stream(subjects)])
    redaction = GatewayRedaction(Redactor(), dict)
    published: list[dict[str, object]] = []  # the signals stream is a work queue: heard as they are stored

    async def hear(msg: Msg) -> None:
        published.append(msgspec.json.decode(msg.data))

    heard = await nc.subscribe(signals_stream(subjects).subjects[0], cb=hear)
    async with (AckedPublisher(nc) as acks,
                Outbox[AuditItem]("audit", audit_publisher(acks, subjects)) as audit,
                Outbox[SignalBase]("signals", functools.partial(send_signal, acks, subjects)) as signals):
        events = PlatformEvents(nc, subjects, signals, redaction)
        decisions = ChatDecisions(Reporting(signals, audit, redaction), events)
        await decisions(decided_in_chat(), "granted")
    # Stopped: the outboxes flushed what they held.
    [stored] = await read_stream(nc, audit_stream(subjects).name)
    record = msgspec.json.decode(stored.data, type=AuditRecord)
    assert (record.caller, record.status, record.approval_id) == (f"chat:{APP}:u7", "approval_granted", "apr-1")
    assert record.input_summary == "decided by user u7 in the chat: answered '1'"
    await poll(lambda: asyncio.sleep(0, published), what="the decision's signal")
    await heard.unsubscribe()
    [signal] = published
    assert (signal["type"], signal["subject_id"]) == ("approval.granted", "apr-1"), signal
