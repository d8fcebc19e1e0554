"""The other users of deploy/nats-auth.conf: each may do its service's job and no one else's."""

from __future__ import annotations

import json

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ConsumerConfig

from shared.contracts.subjects import Subjects
from shared.jetstream.deadletter import dead_letter
from shared.jetstream.streams import ensure_streams, fabric_streams
from shared.nats import write_through
from shared.nats.bus import NOT_WRITTEN_HEADER, unheard_token
from tests.harness.secure_nats import Connect, SecureNats, request_until_answered

SUBJECTS = Subjects("amp")
REFUSED = (NatsTimeoutError, TimeoutError, NoRespondersError)
EVENT = SUBJECTS.event("im.polaris.qq", "message.received")


async def test_apps_are_not_nats_users(secure: SecureNats) -> None:
    """No anonymous access, and a service's user does not work with another's password."""
    for user, password in ((None, None), ("runner", secure.credentials.passwords["operator"])):
        nc = NATS()
        try:
            with pytest.raises(nats.errors.Error, match="Authorization Violation"):
                await nc.connect(secure.url, user=user, password=password, allow_reconnect=False, connect_timeout=2)
        finally:
            await nc.close()  # the refused connection's socket, which nats-py leaves open


async def test_only_the_gateway_and_the_supervisor_speak_mcp(connect: Connect) -> None:
    gateway, supervisor = await connect("mcp-gateway"), await connect("app-supervisor")
    c2s, s2c = SUBJECTS.mcp("demo.notes", "default", "c2s"), SUBJECTS.mcp("demo.notes", "default", "s2c")
    to_app = await supervisor.nc.subscribe(c2s)
    from_app = await gateway.nc.subscribe(s2c)
    await gateway.nc.subscribe(SUBJECTS.mcp("demo.notes", "default", "proc"))
    await supervisor.nc.subscribe(SUBJECTS.mcp("demo.notes", "default", "sess"))
    for session in (gateway, supervisor):
        await write_through.flush(session.nc)
    await gateway.nc.publish(c2s, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    assert json.loads((await to_app.next_msg(timeout=2)).data)["method"] == "ping"
    await supervisor.nc.publish(s2c, b'{"jsonrpc": "2.0", "id": 1, "result": {}}')
    assert json.loads((await from_app.next_msg(timeout=2)).data)["id"] == 1
    await gateway.clean()
    await supervisor.clean()
    # The supervisor relays; it does not play the gateway towards an app (nor the reverse).
    await supervisor.nc.publish(c2s, b"{}")
    await supervisor.refused(c2s)
    await gateway.nc.publish(s2c, b"{}")
    await gateway.refused(s2c)
    for user in ("operator", "consumer", "event-bridge", "router"):
        other = await connect(user)
        await other.nc.publish(c2s, b"{}")
        await other.refused(c2s)


async def test_the_supervisor_may_tell_the_gateway_once_that_a_call_was_not_written(connect: Connect) -> None:
    """A call's reply subject is in the gateway's own inbox: the supervisor that received the call
    may answer there once (`allow_responses`, the `Aurora-Not-Written` of docs/design.md), and
    nobody else may publish there at all."""
    gateway, supervisor = await connect("mcp-gateway"), await connect("app-supervisor")
    c2s = SUBJECTS.mcp("demo.notes", "default", "c2s")
    to_app = await supervisor.nc.subscribe(c2s)
    inbox = gateway.nc.new_inbox()
    told = await gateway.nc.subscribe(f"{inbox}.*")
    await write_through.flush(supervisor.nc)
    await write_through.flush(gateway.nc)
    await gateway.nc.publish(c2s, b'{"jsonrpc": "2.0", "id": "aurora-1", "method": "tools/call"}',
                             reply=f"{inbox}.aurora-1")
    call = await to_app.next_msg(timeout=2)
    await supervisor.nc.publish(call.reply, headers={NOT_WRITTEN_HEADER: "its session did not begin here"})
    said = await told.next_msg(timeout=2)
    assert said.subject == f"{inbox}.aurora-1" and unheard_token(said) == "aurora-1"
    await supervisor.clean()
    await gateway.clean()
    await supervisor.nc.publish(call.reply, headers={NOT_WRITTEN_HEADER: "again"})  # one answer per call
    await supervisor.refused(call.reply)
    runner = await connect("runner")
    await runner.nc.publish(f"{inbox}.aurora-1", headers={NOT_WRITTEN_HEADER: "forged"})
    await runner.refused(f"{inbox}.aurora-1")


async def test_the_gateway_serves_tool_calls(connect: Connect) -> None:
    gateway = await connect("mcp-gateway")

    async def answer(msg: object) -> None:
        await msg.respond(b'{"payload": {"status": "denied"}}')  # type: ignore[attr-defined]

    await gateway.nc.subscribe(SUBJECTS.tool_call, queue="q", cb=answer)
    await gateway.nc.subscribe(SUBJECTS.mcp_all)  # every app's traffic is its to read
    await write_through.flush(gateway.nc)
    await gateway.refused(SUBJECTS.mcp_all, action="subscription")
    operator = await connect("operator")
    reply = await request_until_answered(operator, SUBJECTS.tool_call, b"{}")
    assert json.loads(reply.data)["payload"]["status"] == "denied"
    await operator.clean()


async def test_the_bridge_publishes_events_and_dead_letters(connect: Connect) -> None:
    bridge = await connect("event-bridge")
    js = bridge.nc.jetstream(timeout=2)
    await ensure_streams(js, fabric_streams(SUBJECTS))
    ack = await js.publish(EVENT, b'{"header": {}, "payload": {}}', headers={"Nats-Msg-Id": "e-1"})
    assert ack.stream == "AMP_EVENTS"
    await dead_letter(js, SUBJECTS, stage="event_bridge", data=b"?", reason="bad", original_subject="amp.sig.x.y")
    assert (await js.stream_info("AMP_DLQ")).state.messages == 1
    await bridge.clean()
    for subject in (SUBJECTS.run("agent", "x"), SUBJECTS.tool_call, SUBJECTS.dlq("router")):
        await bridge.nc.publish(subject, b"{}")
        await bridge.refused(subject)
    with pytest.raises(REFUSED):
        await bridge.nc.jetstream(timeout=0.5).delete_stream("AMP_EVENTS")
    await bridge.refused("$JS.API.STREAM.DELETE.AMP_EVENTS")


async def test_the_consumer_reads_events_and_publishes_nothing(connect: Connect) -> None:
    bridge, consumer = await connect("event-bridge"), await connect("consumer")
    await ensure_streams(bridge.nc.jetstream(), fabric_streams(SUBJECTS))
    live = await consumer.nc.subscribe(SUBJECTS.events_all)
    cjs = consumer.nc.jetstream(timeout=2)
    # A durable of its own, named with its prefix (the example in docs/guides/consumer.md).
    durable = await cjs.pull_subscribe(SUBJECTS.events_all, durable="consumer_my_app", stream="AMP_EVENTS")
    await write_through.flush(consumer.nc)
    await bridge.nc.jetstream().publish(EVENT, b'{"n": 1}', headers={"Nats-Msg-Id": "e-1"})
    assert (await live.next_msg(timeout=2)).data == b'{"n": 1}'
    (stored,) = await durable.fetch(1, timeout=2)
    await stored.ack_sync(timeout=2)
    await consumer.clean()

    await consumer.nc.publish(EVENT, b"{}")
    await consumer.refused(EVENT)
    cjs = consumer.nc.jetstream(timeout=0.5)  # a refused request is only a timeout
    with pytest.raises(REFUSED):
        await cjs.publish(SUBJECTS.signal("im.polaris.qq", "native_event"), b"{}")
    await consumer.refused("amp.sig.im_polaris_qq.native_event")
    with pytest.raises(REFUSED):  # nor move the router's cursor
        await cjs.add_consumer("AMP_EVENTS", ConsumerConfig(durable_name="router", filter_subject="amp.evt.x"))
    await consumer.refused("$JS.API.CONSUMER.DURABLE.CREATE.AMP_EVENTS.router")
    with pytest.raises(REFUSED):  # the legacy create, the one whose body names the consumer
        await cjs.subscribe(SUBJECTS.events_all, ordered_consumer=True)
    await consumer.refused("$JS.API.CONSUMER.CREATE.AMP_EVENTS")
    for subject in (SUBJECTS.tool_call, SUBJECTS.admin("approvals", "list")):
        with pytest.raises(REFUSED):
            await consumer.nc.request(subject, b"{}", timeout=0.3)
        await consumer.refused(subject)


async def test_the_operator_administers_but_never_speaks_mcp(connect: Connect) -> None:
    operator, bridge = await connect("operator"), await connect("event-bridge")
    await ensure_streams(bridge.nc.jetstream(), fabric_streams(SUBJECTS))
    js = operator.nc.jetstream(timeout=2)
    await js.publish(SUBJECTS.signal("im.polaris.qq", "native_event"), b"{}", headers={"Nats-Msg-Id": "s-1"})
    assert {info.config.name for info in await js.streams_info()} >= {"AMP_EVENTS", "AMP_SIGNALS", "AMP_DLQ"}
    await operator.clean()
    # `aurora dlq replay` may send an app's event back to its subject, never a platform service's.
    await js.publish(EVENT, b"{}", headers={"Nats-Msg-Id": "e-1"})
    await operator.clean()
    for subject in (SUBJECTS.mcp("demo.notes", "default", "c2s"), SUBJECTS.signal("aurora.gateway", "platform_event"),
                    SUBJECTS.signal("aurora.runner", "platform_event"),
                    SUBJECTS.event("aurora.gateway", "approval.granted"),
                    SUBJECTS.event("aurora.runner", "task.failed")):
        await operator.nc.publish(subject, b"{}")
        await operator.refused(subject)
    await operator.nc.subscribe(SUBJECTS.tool_call)
    await operator.refused(SUBJECTS.tool_call, action="subscription")


SERVICE_USERS = ("event-bridge", "app-supervisor", "mcp-gateway", "router", "runner", "scheduler")


@pytest.mark.parametrize("user", SERVICE_USERS)
async def test_no_service_reads_replies_meant_for_another_user(connect: Connect, user: str) -> None:
    session = await connect(user)
    own = f"_INBOX_{user}.>"
    await session.nc.subscribe(own)
    await session.clean()  # its own inbox is its own
    others = ["_INBOX.>", ">", *(f"_INBOX_{other}.>" for other in (*SERVICE_USERS, "operator") if other != user)]
    for inbox in others:
        await session.nc.subscribe(inbox)
        await session.refused(inbox, action="subscription")


@pytest.mark.parametrize("user", ["mcp-edge", "consumer", "operator"])
async def test_the_relays_status_inboxes_are_read_by_their_own_service_alone(connect: Connect, user: str) -> None:
    """The supervisor's and the gateway's inboxes carry the relay's 503s (a line or a call that
    reached nobody); a user outside the services may not read them either."""
    session = await connect(user)
    for inbox in ("_INBOX_app-supervisor.>", "_INBOX_mcp-gateway.>"):
        await session.nc.subscribe(inbox)
        await session.refused(inbox, action="subscription")


async def test_an_operator_reply_travels_on_the_operator_inbox_that_only_the_operator_can_read(
        connect: Connect) -> None:
    gateway, runner = await connect("mcp-gateway"), await connect("runner")
    seen_by: list[str] = []

    async def answer(msg: object) -> None:
        seen_by.append(msg.reply)  # type: ignore[attr-defined]
        await msg.respond(b'{"payload": {"status": "ok"}}')  # type: ignore[attr-defined]

    await gateway.nc.subscribe(SUBJECTS.operator_tool_call, cb=answer)
    await write_through.flush(gateway.nc)
    operator = await connect("operator")
    reply = await request_until_answered(operator, SUBJECTS.operator_tool_call, b"{}")
    assert json.loads(reply.data) == {"payload": {"status": "ok"}}
    assert seen_by and all(subject.startswith("_INBOX_operator.") for subject in seen_by), seen_by
    await runner.nc.subscribe(seen_by[0])
    await runner.refused(seen_by[0], action="subscription")
    await operator.clean()
    await gateway.clean()
