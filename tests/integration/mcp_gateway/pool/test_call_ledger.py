"""The gateway's call ledger through the running gateway and a real app: a call asked again
under its call id runs once and gets the first result."""

from __future__ import annotations

import asyncio
import uuid

from tests.harness.tool_pool import Pool
from tests.integration.mcp_gateway.pool.helpers import AGENT


async def _count(pool: Pool, key: str) -> int:
    counted = await pool.call("echo.counter_get", {"key": key})
    assert counted["status"] == "ok", counted
    return int(counted["structured"]["count"])


async def test_a_call_asked_twice_with_the_same_id_runs_once(pool: Pool) -> None:
    key = f"k-{uuid.uuid4().hex[:6]}"
    first = await pool.call("echo.counter_increment", {"key": key}, call_id=f"{key}-call")
    again = await pool.call("echo.counter_increment", {"key": key}, call_id=f"{key}-call")
    assert first["status"] == "ok" and first["structured"]["count"] == 1, first
    assert again == first
    assert await _count(pool, key) == 1
    # At the same time, from several callers: still once.
    together = await asyncio.gather(*(pool.call("echo.counter_increment", {"key": key}, call_id=f"{key}-burst")
                                      for _ in range(8)))
    assert await _count(pool, key) == 2
    answered = [r for r in together if r["status"] == "ok"]
    assert answered and all(r == answered[0] for r in answered), together
    assert all(r["status"] == "ok" or r["error"]["code"] == "call_in_progress" for r in together), together
    # A new id is a new call.
    other = await pool.call("echo.counter_increment", {"key": key}, call_id=f"{key}-other")
    assert other["structured"]["count"] == 3


async def test_an_approved_write_asked_again_gets_its_result_without_a_second_approval(pool: Pool) -> None:
    key, task = f"k-{uuid.uuid4().hex[:6]}", f"t-{uuid.uuid4().hex[:6]}"
    asked = await pool.call("echo.counter_increment", {"key": key}, agent=AGENT, task_id=task)
    assert asked["status"] == "needs_approval", asked
    await pool.admin("approvals", "grant", {"id": asked["approval_id"], "by": "tester"})
    call_id = f"{task}-approved"
    first = await pool.call("echo.counter_increment", {"key": key}, agent=AGENT, task_id=task,
                            approval_id=asked["approval_id"], call_id=call_id)
    again = await pool.call("echo.counter_increment", {"key": key}, agent=AGENT, task_id=task,
                            approval_id=asked["approval_id"], call_id=call_id)
    assert first["status"] == "ok" and again == first, (first, again)
    assert await _count(pool, key) == 1
    # The same call id from another run is not that run's call: refused, not answered.
    stolen = await pool.call("echo.counter_increment", {"key": key}, agent=AGENT, call_id=call_id)
    assert stolen["status"] == "denied" and stolen["error"]["code"] == "call_id_reused", stolen
    assert "structured" not in stolen or stolen["structured"] is None


async def test_a_write_asked_again_with_other_arguments_is_refused_not_sent(pool: Pool) -> None:
    """A resumed run's reads may answer differently, so its write asked again under the same call
    id may carry other arguments: that is another call, refused — the first is not answered as if
    it were this one, and this one is not sent."""
    key, other = f"k-{uuid.uuid4().hex[:6]}", f"k-{uuid.uuid4().hex[:6]}"
    first = await pool.call("echo.counter_increment", {"key": key}, call_id=f"{key}-call")
    assert first["status"] == "ok" and first["structured"]["count"] == 1, first
    changed = await pool.call("echo.counter_increment", {"key": other}, call_id=f"{key}-call")
    assert changed["status"] == "denied" and changed["error"]["code"] == "call_id_reused", changed
    assert "other arguments" in changed["error"]["message"], changed
    assert await _count(pool, other) == 0 and await _count(pool, key) == 1
    same = await pool.call("echo.counter_increment", {"key": key}, call_id=f"{key}-call")
    assert same == first and await _count(pool, key) == 1
