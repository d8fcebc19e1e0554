"""Governance at the gateway: approvals consumed once, writes recognised, systems switched off."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from typing import Any

import msgspec
import pytest
from nats.aio.msg import Msg

from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.toolcall import METHOD_CALL, ToolCallContext, ToolCallEnvelope, ToolCallRequest, decode_result
from shared.nats import write_through
from shared.nats.admin_service import AdminRequestError
from tests.harness.run_records import dispatched, run_context
from tests.harness.tool_pool import Pool, audit_records
from tests.harness.waiting import poll
from tests.integration.mcp_gateway.pool.helpers import AGENT


async def test_an_unannotated_mcp_tool_is_a_write_and_needs_approval(pool: Pool) -> None:
    write = await pool.call("echo.unannotated_write", {"x": 1}, agent=AGENT, task_id="t-1")
    assert write["status"] == "needs_approval", write
    assert write["side_effect"] == "write" and write["approval_id"]
    read = await pool.call("echo.echo", {"value": 1}, agent=AGENT, task_id="t-1")
    assert read["status"] == "ok", read


async def test_one_approval_lets_exactly_one_of_fifty_concurrent_calls_run(pool: Pool) -> None:
    asked = await pool.call("echo.counter_increment", {"key": "k"}, agent=AGENT, task_id="t-50")
    assert asked["status"] == "needs_approval"
    approval_id = asked["approval_id"]
    granted = await pool.admin("approvals", "grant", {"id": approval_id, "by": "tester", "note": "ok"})
    # A name in the body decides nothing: the plain subject's sender is the `operator` identity.
    assert granted["state"] == "granted" and granted["decided_by"] == "operator"

    results = await asyncio.gather(*(
        pool.call("echo.counter_increment", {"key": "k"}, agent=AGENT, task_id="t-50", approval_id=approval_id)
        for _ in range(50)
    ))
    statuses = sorted(r["status"] for r in results)
    assert statuses.count("ok") == 1, statuses
    assert {r["error"]["code"] for r in results if r["status"] != "ok"} == {"approval_used"}
    count = await pool.call("echo.counter_get", {"key": "k"}, agent=AGENT)
    assert count["structured"]["count"] == 1, count

    replay = await pool.call("echo.counter_increment", {"key": "k"}, agent=AGENT, task_id="t-50",
                             approval_id=approval_id)
    assert replay["status"] == "denied" and replay["error"]["code"] == "approval_used"


async def test_an_approval_fits_only_its_own_arguments_and_task(pool: Pool) -> None:
    asked = await pool.call("echo.counter_increment", {"key": "a"}, agent=AGENT, task_id="t-2")
    approval_id = asked["approval_id"]
    await pool.admin("approvals", "grant", {"id": approval_id})
    other_args = await pool.call("echo.counter_increment", {"key": "b"}, agent=AGENT, task_id="t-2",
                                 approval_id=approval_id)
    assert other_args["error"]["code"] == "approval_mismatch"
    other_task = await pool.call("echo.counter_increment", {"key": "a"}, agent=AGENT, task_id="t-3",
                                 approval_id=approval_id)
    assert other_task["error"]["code"] == "approval_mismatch"
    denied = await pool.call("echo.counter_increment", {"key": "c"}, agent=AGENT, task_id="t-4")
    await pool.admin("approvals", "deny", {"id": denied["approval_id"]})
    after_deny = await pool.call("echo.counter_increment", {"key": "c"}, agent=AGENT, task_id="t-4",
                                 approval_id=denied["approval_id"])
    assert after_deny["error"]["code"] == "approval_denied"
    fitting = await pool.call("echo.counter_increment", {"key": "a"}, agent=AGENT, task_id="t-2",
                              approval_id=approval_id)
    assert fitting["status"] == "ok", fitting


async def test_disabling_a_system_takes_its_tools_away_at_once(private_pool: Pool) -> None:
    """On a stack of its own: it changes what every caller of the gateway sees."""
    before = await private_pool.admin("agents", "tools", {"agent": AGENT})
    assert "echo.echo" in {t["name"] for t in before["available"]}
    await private_pool.admin("systems", "disable", {"name": "echo"})
    started = time.monotonic()
    after = await private_pool.admin("agents", "tools", {"agent": AGENT})
    call = await private_pool.call("echo.echo", {"value": 1}, agent=AGENT)
    assert time.monotonic() - started < 1.0
    assert after["available"] == [] or all(t["name"].startswith(("event_", "platform_")) for t in after["available"])
    assert {e["reason"] for e in after["excluded"] if e["tool"].startswith("echo.")} == {"system_disabled"}
    assert call["status"] == "denied" and call["error"]["code"] == "system_disabled"
    await private_pool.admin("systems", "enable", {"name": "echo"})
    assert (await private_pool.call("echo.echo", {"value": 1}, agent=AGENT))["status"] == "ok"


async def test_a_deprecated_tool_leaves_the_available_set_and_is_refused(private_pool: Pool) -> None:
    """On a stack of its own: it changes what every caller of the gateway sees."""
    await private_pool.admin("tools", "deprecate", {"name": "echo.echo", "note": "replaced"})
    tools = await private_pool.admin("agents", "tools", {"agent": AGENT})
    assert "echo.echo" not in {t["name"] for t in tools["available"]}
    assert any(e["tool"] == "echo.echo" and e["reason"] == "not_published" for e in tools["excluded"])
    call = await private_pool.call("echo.echo", {"value": 1}, agent=AGENT)
    assert call["status"] == "denied" and call["error"]["code"] == "deprecated"


async def test_an_unbound_tool_is_denied_to_the_agent_but_not_to_the_operator(pool: Pool) -> None:
    agent_call = await pool.call("echo.fail", {}, agent=AGENT)
    assert agent_call["status"] == "denied" and agent_call["error"]["code"] == "not_bound"
    operator_call = await pool.call("echo.fail", {})
    assert operator_call["status"] == "tool_error"


async def test_every_call_leaves_one_audit_record_with_secrets_redacted(pool: Pool) -> None:
    ok = await pool.call("echo.echo", {"value": {"password": "hunter2", "n": 1}}, call_id="gov-ok", agent=AGENT,
                         task_id="t-a", run_id="r-a", session_id="s-a")
    denied = await pool.call("echo.fail", {}, call_id="gov-denied", agent=AGENT)
    assert ok["status"] == "ok" and denied["status"] == "denied"
    # A later call's record is the sign that the gateway has audited the first two (a second
    # record of either would have been written with its first).
    assert (await pool.call("echo.echo", {"value": "marker"}, call_id="gov-marker"))["status"] == "ok"

    async def audited() -> list[dict[str, Any]]:
        records = await audit_records(pool)
        return records if any(r["call_id"] == "gov-marker" for r in records) else []

    records = await poll(audited, what="the marker call's audit record")
    per_call = Counter(r["call_id"] for r in records)
    assert per_call["gov-ok"] == 1 and per_call["gov-denied"] == 1, per_call
    by_id = {r["call_id"]: r for r in records}
    assert by_id["gov-ok"]["status"] == "ok" and by_id["gov-ok"]["caller"] == f"agent:{AGENT}"
    assert by_id["gov-ok"]["task_id"] == "t-a"
    assert "hunter2" not in by_id["gov-ok"]["input_summary"] and "[redacted]" in by_id["gov-ok"]["input_summary"]
    assert by_id["gov-denied"]["status"] == "denied" and by_id["gov-denied"]["error_code"] == "not_bound"


async def test_a_decision_is_published_before_its_answer_and_deciding_again_publishes_it_again(
        pool: Pool) -> None:
    """Waiting tasks resume on `approval.granted`: it is on the signals stream by the time the
    grant is answered, and a second grant (refused) sends it again under the same id, for the case
    where a gateway died between deciding and publishing."""
    asked = await pool.call("echo.counter_increment", {"key": "pub"}, agent=AGENT, task_id="t-pub")
    approval_id = asked["approval_id"]
    published: list[tuple[str | None, dict[str, Any]]] = []

    async def on_signal(msg: Msg) -> None:
        signal = json.loads(msg.data)
        if signal.get("type") == "approval.granted":
            published.append(((msg.headers or {}).get("Nats-Msg-Id"), signal))

    sub = await pool.nc.subscribe(pool.subjects.signal("aurora.gateway", "platform_event"), cb=on_signal)
    await write_through.flush(pool.nc)
    await pool.admin("approvals", "grant", {"id": approval_id, "by": "tester"})
    await write_through.flush(pool.nc)
    assert [s["data"]["id"] for _, s in published] == [approval_id]
    with pytest.raises(AdminRequestError, match="already granted"):
        await pool.admin("approvals", "grant", {"id": approval_id, "by": "tester"})
    await write_through.flush(pool.nc)
    # Published again under the same id (the bridge keeps it once), one no app can predict: the
    # approval's public id and verb plus a tag made from its hidden salt.
    assert len(published) == 2 and published[0][0] == published[1][0]
    assert published[0][0].startswith(f"approval-{approval_id}-granted-")
    assert "decision_salt" not in published[0][1]["data"]
    with pytest.raises(AdminRequestError, match="already granted"):
        await pool.admin("approvals", "deny", {"id": approval_id})
    await write_through.flush(pool.nc)
    assert len(published) == 2  # a contrary decision is refused and publishes nothing
    await sub.unsubscribe()


async def test_a_call_refused_before_any_tool_is_looked_at_is_audited_too(pool: Pool) -> None:
    """An agent-less call on the runners' subject (a pipeline run's, with no AI stage acting):
    refused (`operator_only`), and on the record."""
    run = await dispatched(pool.nc, pool.subjects, pipeline="no-agent")
    envelope = ToolCallEnvelope(
        header=Header(method=METHOD_CALL, message_id=f"anon-{uuid.uuid4().hex[:8]}", timestamp=now_iso(),
                      source=Source(app="aurora.test")),
        payload=ToolCallRequest(tool="echo.counter_increment", arguments={"key": "anon"},
                                context=ToolCallContext(**run_context(run))),
    )
    reply = await pool.nc.request(pool.subjects.tool_call, msgspec.json.encode(envelope), timeout=20)
    result = decode_result(reply.data).payload
    assert result.status == "denied" and result.error is not None and result.error.code == "operator_only"
    sub = await pool.nc.jetstream().subscribe("amp.audit.>", ordered_consumer=True)
    deadline = time.monotonic() + 10
    record: dict[str, Any] | None = None
    while record is None and time.monotonic() < deadline:
        try:
            msg = await sub.next_msg(timeout=1)
        except Exception:
            continue
        candidate = json.loads(msg.data)
        if candidate["call_id"] == envelope.header.message_id:
            record = candidate
    await sub.unsubscribe()
    assert record is not None, "no audit record for the refused call"
    assert record["status"] == "denied" and record["error_code"] == "operator_only"
    # The run's record vouches for the caller: an agent-less run, named by its run id.
    assert record["caller"] == f"run:{run.run_id}" and record["tool"] == "echo.counter_increment"


async def test_a_synthetic_run_never_reaches_a_pool_write(pool: Pool) -> None:
    """A bound, published write called for a synthetic event: `suppressed`, with what would have
    run, and the app's counter does not move; a read still runs."""
    before = (await pool.call("echo.counter_get", {"key": "syn"}, agent=AGENT))["structured"]["count"]
    write = await pool.call("echo.counter_increment", {"key": "syn"}, agent=AGENT, task_id="t-syn", synthetic=True)
    assert write["status"] == "suppressed", write
    assert write["structured"] == {"would_call": "echo.counter_increment", "arguments": {"key": "syn"}}
    assert write["approval_id"] is None  # no approval is even asked for
    read = await pool.call("echo.counter_get", {"key": "syn"}, agent=AGENT, synthetic=True)
    assert read["status"] == "ok" and read["structured"]["count"] == before


async def test_an_agent_may_bind_one_capability_twice_only_once_a_reviewer_picked_the_winner(pool: Pool) -> None:
    for name in ("echo.echo", "echo.counter_get"):
        await pool.admin("tools", "mark", {"name": name, "capability": "test.lookup", "preferred": False})
    agent = {"kind": "Agent", "id": "doubled", "agent_kind": "playbook", "events": ["*"],
             "tools": ["echo.echo", "echo.counter_get"]}
    with pytest.raises(AdminRequestError, match=r"'test\.lookup' is provided by") as refused:
        await pool.admin("agents", "apply", {"document": agent})
    assert refused.value.code == "duplicate_capability"
    await pool.admin("tools", "mark", {"name": "echo.echo", "preferred": True})
    applied = await pool.admin("agents", "apply", {"document": agent})
    assert applied["result"] == "created"
    tools = await pool.admin("agents", "tools", {"agent": "doubled"})
    assert {e["tool"]: e["reason"] for e in tools["excluded"]}.get("echo.counter_get") == "duplicate_capability"
    for name in ("echo.echo", "echo.counter_get"):  # the other tests' agents bind these tools too
        await pool.admin("tools", "mark", {"name": name, "capability": "", "preferred": False})
