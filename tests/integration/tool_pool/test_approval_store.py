"""ApprovalStore on a real JetStream KV bucket (a real nats-server): expiry, at use and by the sweep."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from nats.aio.client import Client as NATS

from services.mcp_gateway.pool.approvals import ApprovalRefused, ApprovalStore
from shared.contracts.approval import Approval
from shared.contracts.toolcall import ToolCallContext
from shared.streams import approvals_bucket, ensure_bucket
from shared.subjects import Subjects

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


@pytest.mark.xfail(strict=True, reason=(
    "bug: ApprovalStore._expire_if_due (called by decide/request/consume) writes state `expired` to KV, "
    "and expire_due only reports approvals still stored as pending/granted, so an approval that a late "
    "decision finds expired is never reported and the gateway never publishes its `approval.expired`: "
    "the task waiting on it stays awaiting_approval"))
async def test_a_pending_approval_that_a_late_decision_finds_expired_is_still_reported_by_the_sweep(
        store: ApprovalStore) -> None:
    pending = await ask(store, "forgotten")
    await past_expiry(pending)
    with pytest.raises(ApprovalRefused) as late_grant:  # the operator grants a moment too late
        await store.decide(pending.id, grant=True, by="tester", note=None)
    assert late_grant.value.code == "approval_expired"
    # the sweep is the only place `approval.expired` is published from (services/mcp_gateway/__main__.py)
    assert [a.id for a in await store.expire_due()] == [pending.id]
