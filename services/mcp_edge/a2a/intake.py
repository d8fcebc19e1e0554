"""An A2A message turned into the platform event that carries it, and where its task will be.

Pure: the handler (handler.py) publishes what `message_signal` returns and looks for the task
under the ids `candidate_task_ids` names. The router's run id is fixed by the event's message id
and the binding that routes it (`run_id_for`), so the edge need not watch every task to find
its own: it tries the run id of each enabled binding that could route the event to an agent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable

from a2a.types.a2a_pb2 import Message, Part
from google.protobuf.json_format import MessageToDict

from shared.clock import now_iso
from shared.contracts.a2a import A2A_MESSAGE_RECEIVED, EDGE_APP, A2AMessageData, A2APart
from shared.contracts.binding import Binding
from shared.contracts.envelope import Actor
from shared.contracts.event_pattern import matches
from shared.contracts.run import run_id_for
from shared.contracts.signals import PlatformEventSignal

SUMMARY_LIMIT = 200
TEXT_LIMIT = 100_000  # the event store's budget is the bridge's; this keeps one message reasonable


class EmptyMessage(ValueError):
    """A message with nothing Aurora can hand to an agent (no text, data or file URL)."""


def part_of(part: Part) -> A2APart | None:
    kind = part.WhichOneof("content")
    meta = {"filename": part.filename or None, "media_type": part.media_type or None}
    if kind == "text":
        return A2APart(kind="text", text=part.text, media_type=meta["media_type"])
    if kind == "data":
        return A2APart(kind="data", data=MessageToDict(part)["data"], media_type=meta["media_type"])
    if kind == "url":
        return A2APart(kind="file", url=part.url, **meta)
    return None  # raw bytes: not carried in an event (a file goes by URL)


def message_data(message: Message, *, agent: str, token_id: str) -> A2AMessageData:
    parts = tuple(p for p in (part_of(part) for part in message.parts) if p is not None)
    if not parts:
        raise EmptyMessage("the message has no text, data or file URL part (raw bytes are not accepted)")
    texts = [p.text for p in parts if p.kind == "text" and p.text]
    if not texts:  # data only: its JSON is the text a playbook or a model reads
        texts = [json.dumps(p.data, ensure_ascii=False) for p in parts if p.kind == "data"]
    text = "\n".join(texts)[:TEXT_LIMIT]
    return A2AMessageData(agent=agent, text=text, parts=parts, context_id=message.context_id or str(uuid.uuid4()),
                          message_id=message.message_id, token_id=token_id)


def message_signal(data: A2AMessageData, *, instance: str, event_id: str | None = None) -> PlatformEventSignal:
    """The signal the bridge makes the event of: its id is the event's message id. The actor is
    the token (`token:<id>`, kind api), as in the edge's tool calls' audit. No session,
    conversation or subject: the answer has no app to be delivered to, it stays the task's, and
    the A2A client reads it there (task_view.py)."""
    summary = data.text.replace("\n", " ")
    return PlatformEventSignal(
        signal_id=event_id or str(uuid.uuid4()),
        app=EDGE_APP,
        instance=instance[:64] or "default",
        observed_at=now_iso(),
        type=A2A_MESSAGE_RECEIVED,
        summary=f"A2A message to {data.agent}: {summary[:SUMMARY_LIMIT]}",
        data=data.to_data(),
        actor=Actor(id=f"token:{data.token_id}", kind="api"),
    )


def routing_bindings(stored: Iterable[bytes]) -> list[Binding]:
    """The enabled bindings (as the bindings bucket keeps them: JSON) that could route an
    `a2a.message.received` event to an agent; unreadable ones are skipped (the router's too)."""
    found: list[Binding] = []
    for raw in stored:
        try:
            binding = Binding.model_validate_json(raw)
        except ValueError:
            continue
        if binding.enabled and binding.target_type == "agent" and matches(binding.event_pattern,
                                                                          A2A_MESSAGE_RECEIVED):
            found.append(binding)
    return found


def candidate_task_ids(event_id: str, bindings: Iterable[Binding], agent: str) -> list[str]:
    """The run ids the router would give the event, one per binding; those targeting `agent`
    first (a binding may send the message to another agent: that is its task then)."""
    ordered = sorted(bindings, key=lambda b: (b.target_id != agent, -b.priority, b.id))
    return [run_id_for(event_id, b.id) for b in ordered]
