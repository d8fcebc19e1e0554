"""Tasks as a SIGKILLed runner leaves them, made deterministic: the task written to KV at the
moment of the kill, its run message published again for another runner to resume; and a call
as the dead runner made it through the gateway."""

from __future__ import annotations

from typing import Any

import msgspec
from nats.aio.client import Client as NATS

from services.mcp_gateway.calls.ledger_rules import LedgerEntry, digest_of, ledger_key
from shared.contracts.envelope import Envelope, EventEnvelope, Header, Source
from shared.contracts.run import METHOD_AGENT_RUN, DeliveryContext, RunPayload
from shared.contracts.subjects import Subjects
from shared.contracts.task import Task, TaskStep, Transition, encode_task
from shared.contracts.toolcall import ToolCallContext, ToolCallEnvelope, ToolCallRequest, ToolCallResult, decode_result
from shared.jetstream.streams import call_ledger_bucket, ensure_bucket, tasks_bucket
from tests.harness.run_records import queue_run
from tests.harness.runs import CHAT, record_run
from tests.harness.tool_calls import LONG_AGO


async def left_by_a_dead_runner(nc: NATS, subjects: Subjects, run: RunPayload[EventEnvelope], steps: list[TaskStep],
                                agent_id: str) -> None:
    """The task a killed runner left behind (attempt 1 of `dead-runner`), then its run again."""
    assert run.event is not None
    task = Task(id=run.run_id, run_id=run.run_id, state="running", target=run.target, binding_id=run.binding_id,
                created_at=LONG_AGO, updated_at=LONG_AGO, agent=agent_id, event_id=run.event.header.message_id,
                event_type=run.event.payload.type, session_id=run.event.payload.session_id, source_app=CHAT,
                delivery=run.delivery, event=run.event, attempts=1, runner="dead-runner", steps=tuple(steps),
                transitions=(Transition(to="running", at=LONG_AGO, by="dead-runner"),))
    await record_run(nc, run, subjects)
    js = nc.jetstream()
    kv = await js.key_value(tasks_bucket(subjects).name)
    await kv.create(task.id, encode_task(task))
    message = Envelope(header=Header(method=METHOD_AGENT_RUN, message_id=run.run_id, timestamp=LONG_AGO,
                                     source=Source(app="aurora.router")), payload=run)
    await queue_run(js, subjects, message)


async def called_by_a_dead_runner(nc: NATS, subjects: Subjects, run: RunPayload[Any], delivery: DeliveryContext,
                                  agent_id: str, *, call_id: str, step_id: str, tool: str,
                                  arguments: dict[str, Any]) -> ToolCallResult:
    """A call of the run's task as its runner made it before it died (the run's record written
    first, as the router does)."""
    await record_run(nc, run, subjects)
    request = ToolCallEnvelope(
        header=Header(method="tools/call", message_id=call_id, timestamp=LONG_AGO, source=Source(app="aurora.runner")),
        payload=ToolCallRequest(tool=tool, arguments=arguments, context=ToolCallContext(
            agent=agent_id, run_id=run.run_id, task_id=run.run_id, step_id=step_id,
            delivery={**msgspec.to_builtins(delivery), "source_app": CHAT})))
    reply = await nc.request(subjects.tool_call, msgspec.json.encode(request), timeout=15)
    return decode_result(reply.data).payload


async def abandoned_in_the_ledger(nc: NATS, subjects: Subjects, call_id: str, tool: str, run_id: str,
                                  arguments: dict[str, Any] | None = None) -> None:
    """The ledger entry of a call a gateway was executing when it died (a target that does not
    deduplicate): asked again, it is in doubt. `arguments`: the call's, when the entry keeps
    their digest (else an entry as written before digests were kept)."""
    kv = await ensure_bucket(nc.jetstream(), call_ledger_bucket(subjects))
    digest = digest_of(ToolCallRequest(tool=tool, arguments=arguments)) if arguments is not None else None
    entry = LedgerEntry(state="executing", owner="dead-gateway", tool=tool, run_id=run_id, task_id=run_id,
                        deduplicates=False, target="echo", started_at=LONG_AGO, deadline=0.0,
                        arguments_digest=digest)
    await kv.create(ledger_key(call_id), msgspec.json.encode(entry))
