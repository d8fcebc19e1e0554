"""The one way tests give a hand-made tool call a run: write its run record as the router does;
and the one way they queue a hand-made run for the runners (`queue_run`: its record, which holds it).

The gateway decides every call on `amp.tool.call` from the router's record of the run it names
(services/mcp_gateway/calls/custody.py). A test that calls the gateway without going through a real
router writes that record here first — the same struct, the same write, the same
bucket — and sends `run_context(record)` (agent, run id, task id) as the call's context.
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from services.router.dispatch import reply_target as frozen_target
from shared.clock import now_iso
from shared.contracts.envelope import Actor, Envelope, EventEnvelope
from shared.contracts.run import RecordedRun, ReplyTarget, RunPayload, RunRecord, RunTarget
from shared.contracts.subjects import Subjects
from shared.jetstream.run_records import CREATE_ONLY, put_record, run_record_subject, run_records_filter
from shared.jetstream.streams import ensure_bucket, run_records_bucket


async def dispatched(nc: NATS, subjects: Subjects, *, agent: str | None = None, pipeline: str | None = None,
                     run_id: str | None = None, event: EventEnvelope | None = None,
                     reply_target: ReplyTarget | None = None, actor: Actor | None = None,
                     session_id: str | None = None, source_app: str = "tests", synthetic: bool = False,
                     capabilities: tuple[str, ...] = (), binding_id: str = "test-binding") -> RunRecord:
    """Record a run of `agent` (or of `pipeline`) as dispatched. With `event`, the target, actor,
    session and source come from the event exactly as the router freezes them."""
    assert (agent is None) != (pipeline is None), "a run is an agent's or a pipeline's"
    target = RunTarget(type="agent", id=agent) if agent is not None else RunTarget(type="pipeline", id=str(pipeline))
    message_id = str(uuid.uuid4())
    if event is not None:
        message_id, source_app = event.header.message_id, event.header.source.app
        reply_target, actor = frozen_target(event), event.payload.actor
        session_id, synthetic = event.payload.session_id, event.payload.synthetic
    record = RunRecord(
        run_id=run_id or f"run-{uuid.uuid4().hex}", target=target, binding_id=binding_id,
        event_message_id=message_id, source_app=source_app, session_id=session_id, reply_target=reply_target,
        actor=actor, capabilities=capabilities, synthetic=synthetic,
        event_at=event.header.timestamp if event is not None else now_iso(),
    )
    js = nc.jetstream()
    spec = run_records_bucket(subjects)
    await ensure_bucket(js, spec)
    await put_record(js, spec.name, record)
    return record


def run_context(record: RunRecord, **extra: Any) -> dict[str, Any]:
    """A call's context for this run, as the runner sends it (plus `extra`)."""
    agent = record.target.id if record.target.type == "agent" else None
    return {"agent": agent, "run_id": record.run_id, "task_id": record.run_id, **extra}


def runs_stream_name(subjects: Subjects) -> str:
    """Where runs are kept since issue 38: the run records' stream (runs are the records under `run.`)."""
    return f"KV_{run_records_bucket(subjects).name}"


async def run_count(js: JetStreamContext, subjects: Subjects) -> int:
    """How many runs the records bucket holds (records written before runs moved in are not runs)."""
    bucket = run_records_bucket(subjects).name
    try:
        info = await js.stream_info(f"KV_{bucket}", subjects_filter=run_records_filter(bucket))
    except NotFoundError:
        return 0
    return sum((info.state.subjects or {}).values())


async def queue_run(js: JetStreamContext, subjects: Subjects, run: Envelope[RunPayload[EventEnvelope]] | bytes, *,
                    run_id: str | None = None) -> int:
    """Queue a run as the router does: its run record, which holds it, created once. `run` may be
    bytes that are no run (then `run_id` names the key), for tests of what a runner refuses.
    Returns the record's stream sequence."""
    if isinstance(run, bytes):
        assert run_id is not None, "raw bytes need the run id to be kept under"
        data = run
    else:
        payload, run_id = run.payload, run.payload.run_id
        event = payload.event
        data = msgspec.json.encode(RecordedRun(
            run_id=payload.run_id, target=payload.target, binding_id=payload.binding_id,
            event_message_id=event.header.message_id if event is not None else str(uuid.uuid4()),
            source_app=event.header.source.app if event is not None else "tests",
            session_id=event.payload.session_id if event is not None else None,
            reply_target=payload.delivery.reply_target, actor=event.payload.actor if event is not None else None,
            capabilities=payload.delivery.capabilities, synthetic=payload.synthetic,
            event_at=event.header.timestamp if event is not None else now_iso(),
            header=run.header, event=event, event_ref=payload.event_ref))
    await ensure_bucket(js, run_records_bucket(subjects))
    ack = await js.publish(run_record_subject(run_records_bucket(subjects).name, run_id), data, headers=CREATE_ONLY)
    return int(ack.seq)
