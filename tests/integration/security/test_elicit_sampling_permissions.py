"""Who may use what an app's requests during a call need, against deploy/nats-auth.conf: only the
gateway asks the runners' models (`amp.model.sample`) and only the runners answer; the gateway
hears users' `interaction.submitted` answers and no other events."""

from __future__ import annotations

from nats.aio.msg import Msg

from tests.harness.secure_nats import Connect

SAMPLE = "amp.model.sample"
ANSWERS = "amp.evt.*.interaction.submitted"


async def test_the_gateway_asks_and_the_runners_answer(connect: Connect) -> None:
    gateway, runner = await connect("mcp-gateway"), await connect("runner")
    async def answer(msg: Msg) -> None:
        await msg.respond(b'{"text": "hi"}')

    served = await runner.nc.subscribe(SAMPLE, queue="runners", cb=answer)
    await runner.clean()
    answers = await gateway.nc.subscribe(ANSWERS)
    reply = await gateway.nc.request(SAMPLE, b"{}", timeout=5)
    assert reply.data == b'{"text": "hi"}'
    await gateway.clean()
    await served.unsubscribe()
    await answers.unsubscribe()


async def test_nobody_else_asks_or_answers_the_models(connect: Connect) -> None:
    for user in ("runner", "operator", "consumer", "app-supervisor", "router", "event-bridge"):
        session = await connect(user)
        await session.nc.publish(SAMPLE, b"{}")
        assert await session.refused(SAMPLE), user
    for user in ("operator", "consumer", "app-supervisor", "router", "event-bridge", "mcp-gateway"):
        session = await connect(user)
        await session.nc.subscribe(SAMPLE)  # serving it would answer apps as an agent's model
        assert await session.refused(SAMPLE, action="subscription"), user


async def test_the_gateway_hears_answers_only(connect: Connect) -> None:
    gateway = await connect("mcp-gateway")
    await gateway.nc.subscribe("amp.evt.*.message.received")
    assert await gateway.refused("amp.evt.*.message.received", action="subscription")
