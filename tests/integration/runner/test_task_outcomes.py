"""How a playbook's failures end its task, on the shared stack with real processes: a failing
step marked `on_error: continue` lets the run go on and the task ends `partial`, naming the
step; a read that outlives its step's `timeout_seconds` ends the task as a timeout; a write
whose call gets no answer in time is never made again and leaves the task `unverified`.

The echo app has no slow write tool (`slow` is read-only; `counter_increment` and
`unannotated_write` answer at once), so the timed-out write is an HTTP tool, imported from an
OpenAPI document into the stack's gateway, whose server (a real local HTTP server) answers
too late."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ECHO,
    TERMINAL,
    apply,
    bind,
    event,
    publish_events,
    quiet,
    sent,
    settled,
    task_id_of,
)
from tests.integration.mcp_gateway.systems.recording_server import Recorded, RecordingServer, Reply


async def _run_playbook(snc: NATS, subjects: Subjects, case: str, steps: list[dict[str, Any]],
                        answer: str | None, tools: list[str], *,
                        states: tuple[str, ...] = (*TERMINAL, "awaiting_approval")) -> dict[str, Any]:
    """Apply a playbook agent for `case`, bind it, publish one event, and wait for its task."""
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": tools, "playbook": {"steps": steps, "answer": answer}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "go"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    return await settled(snc, subjects, task_id_of(doc, f"b-{case}"), timeout=40, states=states)


def _steps(task: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in task["steps"]}


def _seconds(step: dict[str, Any]) -> float:
    return (datetime.fromisoformat(step["finished_at"]) - datetime.fromisoformat(step["started_at"])).total_seconds()


def _replies(stack: RunnerStack, case: str) -> list[str]:
    return [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"]


# -- on_error: continue ---------------------------------------------------------------------------

CONTINUING: list[dict[str, Any]] = [
    {"id": "broken", "tool": f"{ECHO}.fail", "on_error": "continue"},
    {"id": "after", "tool": f"{ECHO}.echo", "arguments": {"value": "still here"}},
]


async def test_a_failed_step_marked_continue_lets_the_run_go_on_and_the_task_ends_partial(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"pc-{uuid.uuid4().hex[:6]}"
    task = await _run_playbook(snc, subjects, case, CONTINUING,
                               "{{ steps.after.structured.value }} (broken: {{ steps.broken.status }})",
                               [f"{ECHO}.fail", f"{ECHO}.echo"])

    assert task["state"] == "partial", json.dumps(task, indent=1)[:3000]
    steps = _steps(task)
    assert steps["broken"]["classification"] == "tool_error"
    assert steps["broken"]["error"]["message"] == "intentional failure"
    assert steps["after"]["classification"] == "ok"  # the later step did run
    reason = task["transitions"][-1]["reason"]
    assert task["transitions"][-1]["to"] == "partial"
    assert f"step broken ({ECHO}.fail) ended tool_error" in reason and "intentional failure" in reason, reason
    assert "after" not in reason  # only the failed step is named
    # partial because of the step, not because the answer went astray: it was delivered
    assert task["answer"] == "still here (broken: tool_error)" and task["delivered"] is True
    assert _replies(stack, case) == ["still here (broken: tool_error)"]


async def test_the_same_failure_without_continue_stops_the_run_and_the_task_fails(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"pf-{uuid.uuid4().hex[:6]}"
    stopping = [{k: v for k, v in step.items() if k != "on_error"} for step in CONTINUING]
    task = await _run_playbook(snc, subjects, case, stopping, "{{ steps.after.structured.value }}",
                               [f"{ECHO}.fail", f"{ECHO}.echo"])

    assert task["state"] == "failed", json.dumps(task, indent=1)[:3000]
    assert task["error"]["code"] == "step_tool_error" and "step broken" in task["error"]["message"]
    assert "after" not in _steps(task)  # the run stopped at the failing step
    # nothing was changed, and the user hears that in one sentence; the error stays in the task
    assert task["delivered"] is True and _replies(stack, case) == ["抱歉，此请求未能完成，没有做任何更改。"]


async def test_a_failure_after_a_write_ends_partial_and_tells_the_user_what_is_done_and_what_not(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"pw-{uuid.uuid4().hex[:6]}"
    waiting = await _run_playbook(snc, subjects, case, [
        {"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}},
        {"id": "broken", "tool": f"{ECHO}.fail"},
    ], "never said", [f"{ECHO}.counter_increment", f"{ECHO}.fail"])
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting, indent=1)[:3000]
    await admin_request(snc, subjects, "approvals", "grant", {"id": waiting["approval_id"], "by": "alice"},
                        timeout=20)
    task = await settled(snc, subjects, waiting["id"], timeout=40, states=TERMINAL)

    assert task["state"] == "partial" and task["error"]["code"] == "step_tool_error", json.dumps(task)[:3000]
    [notice] = _replies(stack, case)
    # in the agent's language (the default); the app's error stays in the task, not in the sentence
    assert task["delivered"] is True and notice.startswith("部分完成。已完成：test.echo.counter_increment")
    assert f"未完成：{ECHO}.fail及其后的步骤" in notice and "intentional failure" not in notice
    assert "intentional failure" in task["error"]["message"]


# -- per-call timeouts ----------------------------------------------------------------------------

async def test_a_read_that_outlives_its_step_timeout_ends_the_task_as_a_timeout(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rt-{uuid.uuid4().hex[:6]}"
    task = await _run_playbook(snc, subjects, case, [
        {"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": 4}, "timeout_seconds": 0.5},
        {"id": "after", "tool": f"{ECHO}.echo", "arguments": {"value": "x"}},
    ], "slept {{ steps.wait.structured.slept }}", [f"{ECHO}.slow", f"{ECHO}.echo"])

    # a read with no answer in time: the run stops there; nothing was written, so it failed
    assert task["state"] == "failed", json.dumps(task, indent=1)[:3000]
    assert task["error"]["code"] == "step_timeout"
    assert f"step wait ({ECHO}.slow) ended timeout" in task["error"]["message"]
    wait = _steps(task)["wait"]
    assert wait["classification"] == "timeout" and wait["error"]["code"] == "timeout"
    assert wait["side_effect"] == "read" and wait["timeout_seconds"] == 0.5
    assert _seconds(wait) < 3.0, wait  # the step's own limit, not the tool's 4 s nor the 5 s default
    assert "after" not in _steps(task) and task["delivered"] is True  # told it could not be done
    # a read changes nothing, so its answer may have been lost: it was read again before giving up
    assert task["transitions"][-1]["reason"].endswith("(tried 3 times)"), task["transitions"][-1]


async def test_a_read_timeout_on_a_step_marked_continue_ends_the_task_partial(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rtc-{uuid.uuid4().hex[:6]}"
    task = await _run_playbook(snc, subjects, case, [
        {"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": 4}, "timeout_seconds": 0.5,
         "on_error": "continue"},
        {"id": "after", "tool": f"{ECHO}.echo", "arguments": {"value": "went on"}},
    ], "{{ steps.after.structured.value }}", [f"{ECHO}.slow", f"{ECHO}.echo"])

    assert task["state"] == "partial", json.dumps(task, indent=1)[:3000]
    assert f"step wait ({ECHO}.slow) ended timeout" in task["transitions"][-1]["reason"]
    assert _steps(task)["after"]["classification"] == "ok" and task["answer"] == "went on"


ORDERS_SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Slow orders (test)", "version": "1"},
    "paths": {"/orders": {"post": {
        "operationId": "createOrder", "summary": "Create an order",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["item"], "properties": {"item": {"type": "string"}}}}}},
        "responses": {"200": {"description": "the order"}},
    }}},
}
ANSWER_AFTER = 10.0  # seconds the orders server takes; the step allows 1 (a margin for a starved CPU)
# Below the runners' default tool timeout (5 s in RUNNER_ENV): a step that fell back to it fails.
STEP_LIMIT_MARGIN = 3.5


@pytest.fixture
def slow_orders() -> Iterator[RecordingServer]:
    def answer(_: Recorded) -> Reply:
        return Reply.json({"order": 7}, delay=ANSWER_AFTER)

    server = RecordingServer(answer).start()
    try:
        yield server
    finally:
        server.stop()


async def _http_write_tool(snc: NATS, subjects: Subjects, system: str, server: RecordingServer,
                           folder: Path) -> str:
    """An HTTP system at `server` whose POST /orders is a published write tool, keyed by `Idempotency-Key`."""
    spec = folder / f"{system}.yaml"
    spec.write_text(yaml.safe_dump(ORDERS_SPEC), encoding="utf-8")
    await admin_request(snc, subjects, "systems", "apply", {"document": {
        "kind": "System", "name": system, "type": "http", "base_url": server.url, "timeout_seconds": 10.0,
        "idempotency_header": "Idempotency-Key"}},
        timeout=20)
    imported = await admin_request(snc, subjects, "systems", "import_openapi",
                                   {"name": system, "base_url": server.url, "spec": str(spec),
                                    "document": spec.read_text(encoding="utf-8")}, timeout=20)
    tool = f"{system}.createOrder"
    assert imported["created"] == [tool], imported
    for action in ("review", "publish"):
        await admin_request(snc, subjects, "tools", action, {"name": tool}, timeout=20)
    found = await admin_request(snc, subjects, "tools", "get", {"id": tool}, timeout=20)
    assert found["side_effect"] == "write" and found["state"] == "PUBLISHED", found
    return tool


async def test_a_write_with_no_answer_in_time_is_not_made_again_and_the_task_is_unverified(
        stack: RunnerStack, snc: NATS, subjects: Subjects, slow_orders: RecordingServer, tmp_path: Path) -> None:
    case = f"wt-{uuid.uuid4().hex[:6]}"
    tool = await _http_write_tool(snc, subjects, f"orders-{case}", slow_orders, tmp_path)
    waiting = await _run_playbook(snc, subjects, case, [
        {"id": "order", "tool": tool, "arguments": {"item": "bolt"}, "timeout_seconds": 1.0},
    ], "ordered", [tool])
    # an agent's write waits for a person first; nothing has gone out yet
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting, indent=1)[:3000]
    assert slow_orders.requests == []
    task_id = waiting["id"]
    await admin_request(snc, subjects, "approvals", "grant", {"id": waiting["approval_id"], "by": "alice"},
                        timeout=20)

    task = await settled(snc, subjects, task_id, timeout=40, states=TERMINAL)
    assert task["state"] == "unverified", json.dumps(task, indent=1)[:3000]
    order = _steps(task)["order"]
    assert order["classification"] == "outcome_unknown" and order["error"]["code"] == "timeout", order
    assert order["side_effect"] == "write" and order["timeout_seconds"] == 1.0
    # given up after the step's own 1 s, not the runners' default 5 s (nor the server's 10 s answer)
    assert 1.0 <= _seconds(order) < STEP_LIMIT_MARGIN, order
    assert task["error"]["code"] == "outcome_unknown"
    check = task["check"]
    assert tool in check and '"item": "bolt"' in check and order["call_id"] in check, check
    assert "it was not repeated" in check
    # the user who asked is told, in the conversation: not confirmed, nothing else done, what to check
    [notice] = _replies(stack, case)
    assert task["delivered"] is True
    assert notice == f"无法确认 {tool} 是否已执行（响应丢失，且没有重试），请先到该系统核对，再决定是否重新提出。"

    # The write reached the system exactly once, with its call id as the idempotency key, and stays so:
    # once the runners hold nothing in flight (the run and the grant acknowledged, so neither
    # comes back after the ack wait) nothing has called it again, nor touched the task.
    posts = [r for r in slow_orders.requests if r.method == "POST" and r.path == "/orders"]
    assert len(posts) == 1 and json.loads(posts[0].body) == {"item": "bolt"}
    assert posts[0].header("Idempotency-Key") == order["call_id"]
    await quiet(snc, subjects)
    assert len(slow_orders.requests) == 1, slow_orders.requests
    later = await settled(snc, subjects, task_id, states=TERMINAL)
    assert later["state"] == "unverified" and later["transitions"] == task["transitions"]
