"""ApprovalStore on a real JetStream KV bucket (a real nats-server): expiry, at use and by the sweep."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from nats.aio.client import Client as NATS

from services.mcp_gateway.approvals.store import ApprovalRefused, ApprovalStore
from shared.contracts.approval import Approval
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallContext
from shared.jetstream.streams import approvals_bucket, ensure_bucket

TTL = 0.6
TOOL = "orders.createOrder"


@pytest.fixture
async def store(nc: NATS, subjects: Subjects) -> ApprovalStore:
    return ApprovalStore(await ensure_bucket(nc.jetstream(), approvals_bucket(subjects)), ttl_seconds=TTL)


async def ask(store: ApprovalStore, item: str, task: str = "t-1") -> Approval:
    approval, created = await store.request(TOOL, {"item": item}, ToolCallContext(agent="buyer", task_id=task),
                                            "write")
    assert created and approval.state == "pending"
    return approval


async def past_expiry(approval: Approval) -> None:
    left = (datetime.fromisoformat(approval.expires_at) - datetime.now(UTC)).total_seconds()
    assert left > 0, "the approval expired before the test could decide it; TTL too short for this machine"
    await asyncio.sleep(left + 0.1)


async def test_a_granted_approval_is_used_before_its_expiry_and_refused_after_it(store: ApprovalStore) -> None:
    early, late = await ask(store, "early"), await ask(store, "late")
    for approval in (early, late):
        assert (await store.decide(approval.id, grant=True, by="tester", note=None)).state == "granted"
    used = await store.consume(early.id, TOOL, {"item": "early"}, "t-1")
    assert used.state == "consumed"

    await past_expiry(late)
    with pytest.raises(ApprovalRefused) as refused:
        await store.consume(late.id, TOOL, {"item": "late"}, "t-1")
    assert refused.value.code == "approval_expired"
    found = await store.get(late.id)
    assert found is not None and found[0].state == "expired" and found[0].decided_by == "tester"
    with pytest.raises(ApprovalRefused) as again:  # and stays refused
        await store.consume(late.id, TOOL, {"item": "late"}, "t-1")
    assert again.value.code == "approval_expired"
    consumed = await store.get(early.id)
    assert consumed is not None and consumed[0].state == "consumed"  # a used approval never expires


async def test_the_sweep_expires_undecided_and_unused_approvals_once(store: ApprovalStore) -> None:
    pending, granted = await ask(store, "pending"), await ask(store, "granted")
    await store.decide(granted.id, grant=True, by="tester", note=None)
    assert await store.expire_due() == []  # nothing is due yet
    await past_expiry(granted)
    swept = await store.expire_due()
    assert sorted(a.id for a in swept) == sorted([pending.id, granted.id])
    assert {a.state for a in swept} == {"expired"}
    assert await store.expire_due() == []  # each expiry is reported once
    assert [a.id for a in await store.find("expired")] == [pending.id, granted.id]
    with pytest.raises(ApprovalRefused) as refused:
        await store.consume(granted.id, TOOL, {"item": "granted"}, "t-1")
    assert refused.value.code == "approval_expired"
    with pytest.raises(ApprovalRefused) as late_grant:
        await store.decide(pending.id, grant=True, by="tester", note=None)
    assert late_grant.value.code == "approval_expired"


async def test_every_expiry_is_reported_once_whoever_notices_it_first(store: ApprovalStore) -> None:
    """The sweep, a decision a moment too late, a call presenting an expired grant: whichever
    finds an approval past its expiry first moves it to `expired` and reports it (its task waits
    on `approval.expired`); nobody reports it a second time."""
    reported: list[str] = []
    store.on_expired = lambda approval: reported.append(approval.id)
    late_decision, late_use, swept = await ask(store, "decide"), await ask(store, "use"), await ask(store, "sweep")
    await store.decide(late_use.id, grant=True, by="tester", note=None)
    await past_expiry(swept)
    with pytest.raises(ApprovalRefused):
        await store.decide(late_decision.id, grant=True, by="tester", note=None)
    with pytest.raises(ApprovalRefused):
        await store.consume(late_use.id, TOOL, {"item": "use"}, "t-1")
    assert reported == [late_decision.id, late_use.id]
    await store.expire_due()
    await store.expire_due()
    assert reported == [late_decision.id, late_use.id, swept.id]
