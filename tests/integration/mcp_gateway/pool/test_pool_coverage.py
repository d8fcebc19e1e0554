"""The tool pool's reports and refusals, end to end: a real gateway process against a real
nats-server and a real HTTP server (published OpenAPI tools, an agent bound to them).

What is checked is what other services see: the call's reply, the audit record on AMP_AUDIT,
the gateway's `platform_event` signals on AMP_SIGNALS (no event-bridge runs here, so the
signal is the last hop) and the agent's available set (`agents tools`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.tool_pool import Pool, call, published_to, read_stream, wait_until_available
from tests.integration.mcp_gateway.pool.helpers import gateway_with_orders
from tests.integration.mcp_gateway.systems.recording_server import Recorded, RecordingServer, Reply

AGENT = "buyer"
READ, WRITE = "orders.getDevice", "orders.createOrder"
COOLDOWN = 3.0  # the circuit's cool-down: long enough to look at an open circuit, short enough to wait out

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Orders (coverage)", "version": "1"},
    "paths": {
        "/devices/{id}": {"get": {
            "operationId": "getDevice", "summary": "Get a device",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "the device"}},
        }},
        "/orders": {"post": {
            "operationId": "createOrder", "summary": "Create an order",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["item"], "properties": {"item": {"type": "string"}}}}}},
            "responses": {"200": {"description": "the order"}},
        }},
    },
}


def answer(request: Recorded) -> Reply:
    if request.path == "/devices/404":  # HTTP 200, but the business says no
        return Reply.json({"code": 1, "msg": "no such device"})
    if request.path == "/devices/500":  # HTTP 200 without the contract's success field
        return Reply.json({"data": {"id": 500}})
    if request.path.startswith("/devices/"):
        return Reply.json({"code": 0, "data": {"id": int(request.path.rsplit("/", 1)[1])}})
    return Reply.json({"code": 0, "data": {"order": 7}})


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recording = RecordingServer(answer).start()
    yield recording
    recording.stop()


@pytest.fixture
def gateway_env() -> dict[str, str]:
    """Extra environment for the gateway process (a test parametrizes it to change it)."""
    return {}


@pytest.fixture
async def orders(nc: NATS, subjects: Subjects, spawn: Any, tmp_path: Path, server: RecordingServer,
                 gateway_env: dict[str, str]) -> AsyncIterator[Pool]:
    """A gateway with the HTTP system `orders` (business contract `code == 0`, circuit opening
    after 2 transport failures), its two tools published, and agent `buyer` bound to both."""
    pool, imported = await gateway_with_orders(nc, subjects, spawn, tmp_path, base_url=server.url, spec=SPEC,
                                               cooldown=COOLDOWN, env=gateway_env)
    assert sorted(imported["created"]) == [WRITE, READ], imported
    await published_to(pool, AGENT, READ, WRITE)
    yield pool


def gateway_signals(subjects: Subjects) -> str:
    subject = subjects.signal("aurora.gateway", "platform_event")
    assert subject == "amp.sig.aurora_gateway.platform_event"
    return subject


# -- 1. a 200 that breaks the business contract ----------------------------------------------------

async def test_a_200_against_the_business_contract_is_a_business_error_in_reply_and_audit(
        orders: Pool, server: RecordingServer) -> None:
    failed_id, failed = await call(orders, READ, {"id": 404})
    unconfirmed_id, unconfirmed = await call(orders, READ, {"id": 500})
    ok_id, ok = await call(orders, READ, {"id": 5})
    assert [r.path for r in server.requests] == ["/devices/404", "/devices/500", "/devices/5"]  # all answered 200
    assert failed["status"] == "business_error", failed
    assert failed["error"]["code"] == "business_error" and failed["error"]["message"] == "no such device"
    assert unconfirmed["status"] == "business_error" and unconfirmed["error"]["code"] == "contract_violation"
    assert ok["status"] == "ok" and ok["error"] is None

    records: dict[str, dict[str, Any]] = {}

    def all_three(record: dict[str, Any]) -> bool:
        records[record["call_id"]] = record
        return {failed_id, unconfirmed_id, ok_id} <= set(records)

    await read_stream(orders.nc, "AMP_AUDIT", orders.subjects.audit("orders"), all_three)
    audited = records[failed_id]
    assert audited["status"] == "business_error" and audited["error_code"] == "business_error", audited
    assert audited["error_message"] == "no such device" and audited["tool"] == READ and audited["system"] == "orders"
    assert audited["caller"] == "operator" and audited["side_effect"] == "read"
    assert records[unconfirmed_id]["status"] == "business_error"
    assert records[unconfirmed_id]["error_code"] == "contract_violation"
    assert records[ok_id]["status"] == "ok" and records[ok_id]["error_code"] is None


# -- 2. circuit changes become platform events ---------------------------------------------------

async def test_an_opening_circuit_is_published_as_a_gateway_platform_event(
        orders: Pool, server: RecordingServer) -> None:
    server.stop()
    for _ in range(2):
        _, dead = await call(orders, READ, {"id": 1})
        assert dead["status"] == "unavailable" and dead["error"]["code"] != "circuit_open", dead
    _, blocked = await call(orders, READ, {"id": 1})
    assert blocked["status"] == "unavailable" and blocked["error"]["code"] == "circuit_open", blocked

    def circuit_open(signal: dict[str, Any]) -> bool:
        return signal.get("type") == "system.circuit_open"

    read, signal = await read_stream(orders.nc, "AMP_SIGNALS", gateway_signals(orders.subjects), circuit_open)
    assert read[-1][0].subject == "amp.sig.aurora_gateway.platform_event"
    assert signal["kind"] == "platform_event" and signal["app"] == "aurora.gateway"
    assert (signal["subject_kind"], signal["subject_id"]) == ("system", "orders")
    data = signal["data"]
    assert data["system"] == "orders" and (data["from"], data["to"]) == ("closed", "open"), data
    assert data["circuit"] == "open" and data["failures"] == 2, data
    # it is the first change of this circuit, published once
    circuit_signals = [d["type"] for _, d in read if d.get("type", "").startswith("system.circuit_")]
    assert circuit_signals == ["system.circuit_open"], circuit_signals


# -- 3. a write held for approval says so --------------------------------------------------------

async def test_a_write_held_for_approval_publishes_approval_requested_once(orders: Pool,
                                                                           server: RecordingServer) -> None:
    arguments = {"item": "bolt"}
    _, held = await call(orders, WRITE, arguments, agent=AGENT, task_id="t-req")
    assert held["status"] == "needs_approval" and held["side_effect"] == "write", held
    approval_id = held["approval_id"]
    _, again = await call(orders, WRITE, arguments, agent=AGENT, task_id="t-req")
    assert again["status"] == "needs_approval" and again["approval_id"] == approval_id  # the same approval
    assert not any(r.path == "/orders" for r in server.requests)  # nothing was written
    # a later, different request marks where the gateway's signals for the first ones must be
    _, marker = await call(orders, WRITE, {"item": "marker"}, agent=AGENT, task_id="t-req")

    def marker_requested(signal: dict[str, Any]) -> bool:
        return signal.get("type") == "approval.requested" and signal.get("subject_id") == marker["approval_id"]

    read, _ = await read_stream(orders.nc, "AMP_SIGNALS", gateway_signals(orders.subjects), marker_requested)
    requested = [d for _, d in read if d.get("type") == "approval.requested" and d["subject_id"] == approval_id]
    assert len(requested) == 1, [d for _, d in read]  # asking again found the same approval: no second signal
    signal = requested[0]
    assert signal["app"] == "aurora.gateway" and signal["subject_kind"] == "approval"
    data = signal["data"]
    assert data["id"] == approval_id and data["tool"] == WRITE and data["state"] == "pending"
    # the run's task has the run's id (the gateway refuses a call whose task is not its run's)
    assert data["agent"] == AGENT and data["task_id"] == "t-req" and data["run_id"] == "t-req"
    assert data["arguments"] == arguments and data["side_effect"] == "write"


# -- 4. a granted approval expires if it is not used in time -------------------------------------

TTL = 3.0


@pytest.mark.parametrize("gateway_env", [{
    "AURORA_APPROVAL_TTL_SECONDS": str(TTL),
    "AURORA_APPROVAL_SWEEP_SECONDS": "3600",  # the sweeper runs once at start: only the call checks expiry
}], ids=["ttl-3s"])
async def test_a_granted_approval_used_after_its_expiry_is_refused_at_call_time(
        orders: Pool, server: RecordingServer) -> None:
    _, late = await call(orders, WRITE, {"item": "late"}, agent=AGENT, task_id="t-exp")
    _, prompt = await call(orders, WRITE, {"item": "prompt"}, agent=AGENT, task_id="t-exp")
    assert late["status"] == prompt["status"] == "needs_approval", (late, prompt)
    for held in (late, prompt):
        granted = await orders.admin("approvals", "grant", {"id": held["approval_id"], "by": "tester"})
        assert granted["state"] == "granted"
    # used within its time, a granted approval lets the write through (this gateway honours grants)
    _, used = await call(orders, WRITE, {"item": "prompt"}, agent=AGENT, task_id="t-exp",
                         approval_id=prompt["approval_id"])
    assert used["status"] == "ok", used
    assert [r.path for r in server.requests] == ["/orders"]

    expires_at = datetime.fromisoformat(late["structured"]["expires_at"])
    await asyncio.sleep(max(0.0, expires_at.timestamp() - time.time()) + 0.3)
    stored = await orders.admin("approvals", "get", {"id": late["approval_id"]})
    assert stored["state"] == "granted"  # nothing expired it meanwhile: the call must notice
    _, refused = await call(orders, WRITE, {"item": "late"}, agent=AGENT, task_id="t-exp",
                            approval_id=late["approval_id"])
    assert refused["status"] == "denied" and refused["error"]["code"] == "approval_expired", refused
    assert refused["approval_id"] == late["approval_id"]
    assert [r.path for r in server.requests] == ["/orders"]  # the late write never went out
    stored = await orders.admin("approvals", "get", {"id": late["approval_id"]})
    assert stored["state"] == "expired", stored


# -- 6. an open circuit takes the system's tools out of the agent's set -------------------------

async def test_an_open_circuit_takes_its_tools_from_the_agent_until_the_cooldown_passes(
        orders: Pool, server: RecordingServer) -> None:
    port = server.port
    server.stop()
    for _ in range(2):
        _, dead = await call(orders, READ, {"id": 1}, agent=AGENT)
        assert dead["status"] == "unavailable", dead
    opened = time.monotonic()
    view = await orders.admin("agents", "tools", {"agent": AGENT})
    _, refused = await call(orders, READ, {"id": 1}, agent=AGENT)
    assert time.monotonic() - opened < COOLDOWN, "too slow to look inside the cool-down"
    available = {t["name"] for t in view["available"]}
    assert READ not in available and WRITE not in available, view
    reasons = {e["tool"]: e["reason"] for e in view["excluded"]}
    assert reasons[READ] == reasons[WRITE] == "circuit_open", view["excluded"]
    detail = next(e["detail"] for e in view["excluded"] if e["tool"] == READ)
    assert "orders" in detail and "open" in detail
    # left out of the available set, so not sent: unavailable (the caller's run waits and asks again)
    assert refused["status"] == "unavailable" and refused["error"]["code"] == "circuit_open", refused

    revived = RecordingServer(answer, port=port).start()
    try:
        await asyncio.sleep(max(0.0, COOLDOWN - (time.monotonic() - opened)) + 0.2)
        view = await wait_until_available(orders, AGENT, READ, WRITE, timeout=2.0)
        assert not any(e["reason"] == "circuit_open" for e in view["excluded"]), view["excluded"]
        _, trial = await call(orders, READ, {"id": 9}, agent=AGENT)
        assert trial["status"] == "ok" and trial["structured"]["data"] == {"id": 9}, trial
        status = {s["name"]: s for s in await orders.admin("systems", "status")}
        assert status["orders"]["circuit"] == "closed"
    finally:
        revived.stop()
