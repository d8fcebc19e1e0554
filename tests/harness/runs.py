"""Runs as the tests drive them: the stack's app configs, agents and bindings applied, events published, tasks
settled, the chat log read (any test package: runner, elicit, security, e2e, chaos, bench)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from services.runner.config import RunnerConfig
from services.runner.tasks.resumer import DURABLE as RESUME
from shared.clock import now_iso
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import DeliveryContext, ReplyTarget, RunPayload, RunTarget, run_id_for
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.harness.apps_config import APPS as APPS
from tests.harness.apps_config import ECHO as ECHO
from tests.harness.apps_config import FAST_RESTART as FAST_RESTART
from tests.harness.apps_config import stdio as stdio
from tests.harness.apps_config import write_apps as write_apps
from tests.harness.processes import logged as logged  # one wait-for-log for every test
from tests.harness.run_records import dispatched, runs_stream_name
from tests.harness.runner_stack import ALARMS as ALARMS
from tests.harness.runner_stack import ASSETS as ASSETS
from tests.harness.runner_stack import CHAT as CHAT
from tests.harness.runner_stack import CHAT_PLATFORM as CHAT_PLATFORM
from tests.harness.runner_stack import RUNNER_ENV as RUNNER_ENV
from tests.harness.runner_stack import assets_calls as assets_calls
from tests.harness.runner_stack import assets_calls_log as assets_calls_log
from tests.harness.runner_stack import stack_apps as stack_apps
from tests.harness.waiting import NOT_SERVING_YET, consumed
from tests.harness.waiting import poll as poll  # one poll helper for every test

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def event(event_type: str, data: dict[str, Any], *, app: str = CHAT, session_id: str | None = None,
          conversation: str | None = None, message_id: str | None = None, subject_message: bool = True,
          synthetic: bool = False) -> dict[str, Any]:
    """A complete AMP event, as the bridge stores it."""
    mid = message_id or str(uuid.uuid4())
    payload: dict[str, Any] = {"type": event_type, "data": data, "synthetic": synthetic,
                               "actor": {"id": "user-7", "kind": "user"}}
    if session_id is not None:
        payload["session_id"] = session_id
    if conversation is not None:
        payload["conversation"] = conversation
    if subject_message:
        payload["subject"] = {"kind": "message", "id": f"msg-{mid[:8]}"}
    return {"header": {"protocol": "amp/1.0", "method": "aurora/event", "message_id": mid,
                       "timestamp": now_iso(), "source": {"app": app, "instance": "default"}},
            "payload": payload}


async def publish_events(js: JetStreamContext, subjects: Subjects, events: Iterable[dict[str, Any]],
                         *, window: int = 500) -> None:
    """Into AMP_EVENTS with `Nats-Msg-Id` = message id, exactly like the bridge."""
    pending = []
    for doc in events:
        subject = subjects.event(doc["header"]["source"]["app"], doc["payload"]["type"])
        pending.append(await js.publish_async(subject, json.dumps(doc, ensure_ascii=False).encode(),
                                              headers={"Nats-Msg-Id": doc["header"]["message_id"]}))
        if len(pending) >= window:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)


def task_id_of(doc: dict[str, Any], binding_id: str) -> str:
    return run_id_for(doc["header"]["message_id"], binding_id)


async def apply(nc: NATS, subjects: Subjects, area: str, document: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await admin_request(nc, subjects, area, "apply", {"document": document}, timeout=20)
    return result


async def bind(nc: NATS, subjects: Subjects, binding_id: str, pattern: str, target_type: str, target_id: str,
               *, case: str) -> None:
    """A binding for the events whose `data.case` is `case` (keeps the tests of one stack apart)."""
    filters = [{"field": "data.case", "op": "eq", "value": case}]
    await apply(nc, subjects, "bindings", {"kind": "Binding", "id": binding_id, "event_pattern": pattern,
                                          "filters": filters, "target_type": target_type,
                                          "target_id": target_id, "priority": 10})


async def task(nc: NATS, subjects: Subjects, task_id: str) -> dict[str, Any] | None:
    """The task; None while there is none yet, or while no runner answers (the tests stop and
    start runners, and a runner that is stopping can take a request it no longer answers). Any
    other error fails the test."""
    try:
        found: dict[str, Any] = await admin_request(nc, subjects, "tasks", "get", {"id": task_id})
    except NOT_SERVING_YET:
        return None
    except AdminRequestError as exc:
        if exc.code == "not_found":
            return None
        raise
    return found


TERMINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")


async def settled(nc: NATS, subjects: Subjects, task_id: str, *, timeout: float = 30.0,
                  states: tuple[str, ...] = (*TERMINAL, "awaiting_approval")) -> dict[str, Any]:
    """The task once it is in one of `states`."""

    last: dict[str, Any] | None = None

    async def found() -> dict[str, Any] | None:
        nonlocal last
        last = await task(nc, subjects, task_id)
        return last if last is not None and last["state"] in states else None

    try:
        return await poll(found, timeout=timeout, what=f"task {task_id} in {states}", interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the task: {json.dumps(last)[:3000]}") from None


def sent(chat_log: Path) -> list[dict[str, Any]]:
    if not chat_log.exists():
        return []
    return [json.loads(line) for line in chat_log.read_text(encoding="utf-8").splitlines() if line.strip()]



async def stored_events(nc: NATS, subject: str, wanted: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """Every event stored so far on `subject` (wildcards allowed) for which `wanted` holds, in
    stream order, each with its NATS headers under `_headers`."""
    sub = await nc.jetstream().subscribe(subject, ordered_consumer=True)
    found: list[dict[str, Any]] = []
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=0.5)
            except Exception:
                return found
            doc = json.loads(msg.data)
            if wanted(doc):
                found.append({**doc, "_headers": dict(msg.headers or {})})
    finally:
        await sub.unsubscribe()


async def stored_event(nc: NATS, subjects: Subjects, app: str, event_type: str,
                       wanted: Callable[[dict[str, Any]], bool], *, timeout: float = 20.0) -> int:
    """Wait until the latest `event_type` event of `app` in AMP_EVENTS is one `wanted` holds
    for (the bridge has stored it); its stream sequence."""
    js = nc.jetstream()
    stream, subject = subjects.stream("EVENTS"), subjects.event(app, event_type)

    async def latest() -> int:
        try:
            msg = await js.get_last_msg(stream, subject)
        except NotFoundError:
            return 0
        return int(msg.seq or 0) if msg.data and wanted(json.loads(msg.data)) else 0

    return await poll(latest, timeout=timeout, what=f"{event_type} of {app} in {stream}")


async def handled(nc: NATS, subjects: Subjects, durable: str, *, through: int = 0) -> None:
    """Every signal so far made an event by the bridge, then every event so far for consumer
    `durable` (the runners' `runner-resume`, the gateway's `gateway-chat-approvals`) handled and
    acknowledged: what those could still do to a task is done."""
    js = nc.jetstream()
    await consumed(js, subjects.stream("SIGNALS"), "event-bridge")
    await consumed(js, subjects.stream("EVENTS"), durable, through=through)


async def quiet(nc: NATS, subjects: Subjects) -> None:
    """Nothing left in flight for the runners: every signal so far bridged, every approval and
    answer event handled, every run acknowledged. A reply or call that has not happened by now
    will not happen."""
    await handled(nc, subjects, RESUME)
    await consumed(nc.jetstream(), runs_stream_name(subjects), RunnerConfig().durable)


def run_parts(case: str, agent_id: str, *, data: dict[str, Any] | None = None) -> tuple[
        EventEnvelope, DeliveryContext, RunPayload[EventEnvelope]]:
    """A chat message's event, its reply target and the agent run the router would publish for it."""
    session = f"g-{case}"
    doc = event("message.received", {"case": case, "text": "hi", **(data or {})}, session_id=session)
    envelope = msgspec.convert(doc, EventEnvelope)
    delivery = DeliveryContext(reply_target=ReplyTarget(app=CHAT, session_id=session))
    run = RunPayload(run_id=f"run-{case}", target=RunTarget(type="agent", id=agent_id), binding_id=f"b-{case}",
                     event=envelope, delivery=delivery)
    return envelope, delivery, run


async def record_run(nc: NATS, run: RunPayload[EventEnvelope], subjects: Subjects) -> None:
    """The run's record, as the router writes it before publishing a run."""
    assert run.event is not None
    await dispatched(nc, subjects, agent=run.target.id, run_id=run.run_id, source_app=CHAT,
                     reply_target=run.delivery.reply_target, actor=run.event.payload.actor,
                     session_id=run.event.payload.session_id, binding_id=run.binding_id)
