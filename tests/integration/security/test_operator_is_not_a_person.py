"""The shared `operator` identity may send every plain admin request, but never one on a person's
subject (`….u.<name>`): the services take the sender from that subject, so an operator able to
publish there could decide approvals as anyone."""

from __future__ import annotations

import pytest
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from shared.nats import write_through
from tests.harness.secure_nats import Connect

REFUSED = (NatsTimeoutError, TimeoutError, NoRespondersError)


@pytest.mark.parametrize("subject", ["amp.admin.approvals.grant.u.alice", "amp.admin.tools.call.u.alice",
                                     "amp.admin.users.add.u.root"])
async def test_the_operator_cannot_speak_as_a_person(connect: Connect, subject: str) -> None:
    operator = await connect("operator")
    await operator.clean()
    with pytest.raises(REFUSED):
        await operator.nc.request(subject, b"{}", timeout=0.5)
    await operator.refused(subject)


async def test_the_operator_still_sends_plain_admin_requests(connect: Connect) -> None:
    operator, gateway = await connect("operator"), await connect("mcp-gateway")

    async def answer_it(msg: Msg) -> None:
        await msg.respond(b'{"ok": true}')

    served = await gateway.nc.subscribe("amp.admin.approvals.list", cb=answer_it)
    await write_through.flush(gateway.nc)
    await operator.clean()
    answer = await operator.nc.request("amp.admin.approvals.list", b"{}", timeout=5)
    assert answer.data == b'{"ok": true}'
    await served.unsubscribe()
