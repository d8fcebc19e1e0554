"""A run: what a runner runs, kept in the run's record (`RecordedRun`, key `run.<run id>` in
KV_AMP_RUN_RECORDS) — before issue 38 a message of its own on `amp.run.<pipeline|agent>.<id>`
(AMP_RUNS), which runners still drain after an upgrade (`RunEnvelope`, `decode_run`).

The envelope header is an AMP header with `method` `agent/run` or `pipeline/run` and
`message_id` = `run_id`. The event travels inline, or — when its encoding is larger than the
router's limit — in the JetStream Object Store, referenced by `event_ref`. The delivery
context carries the reply target frozen from the event (or none: nobody guesses one).

`RunPayload` is generic in the event's type so the router can inline the original event bytes
(`RunPayload[msgspec.Raw]`) without re-encoding, while readers decode `RunEnvelope`.
"""

from __future__ import annotations

import uuid
from typing import Generic, Literal, TypeVar

import msgspec

from shared.contracts.envelope import Actor, Envelope, EventEnvelope, Header, decode_bounded
from shared.ids import uuid5_text

METHOD_AGENT_RUN = "agent/run"
METHOD_PIPELINE_RUN = "pipeline/run"
RunTargetType = Literal["pipeline", "agent"]

# Fixed namespace: run ids are uuid5(namespace, "<event message_id>\n<binding id>").
RUN_ID_NAMESPACE = uuid.UUID("8f0e6a52-4c1d-5b7e-9a43-2d6c1f0b7e15")


def run_id_for(event_message_id: str, binding_id: str) -> str:
    """The same event routed by the same binding is always the same run:
    `uuid5(RUN_ID_NAMESPACE, "<message_id>\\n<binding_id>")`."""
    return uuid5_text(RUN_ID_NAMESPACE, f"{event_message_id}\n{binding_id}")


def method_for(target_type: RunTargetType) -> str:
    return METHOD_AGENT_RUN if target_type == "agent" else METHOD_PIPELINE_RUN


class RunTarget(msgspec.Struct, frozen=True, kw_only=True):
    type: RunTargetType
    id: str


class ObjectRef(msgspec.Struct, frozen=True, kw_only=True):
    """Where a large event is kept: an object in a JetStream Object Store bucket."""

    bucket: str
    name: str
    size: int


class ReplyTarget(msgspec.Struct, frozen=True, kw_only=True):
    """Where `event_*` delivery tools answer, frozen from the event that caused the run."""

    app: str
    instance: str = "default"
    bot: str | None = None
    workspace: str | None = None
    session_id: str | None = None
    conversation: str | None = None
    message_id: str | None = None  # the message the event is about, when its subject is one
    subject_kind: str | None = None  # what the event is about (`friend_request`, `message` …)
    subject_id: str | None = None
    actor_id: str | None = None  # who caused the event (`event_get_actor` looks them up)


class DeliveryContext(msgspec.Struct, frozen=True, kw_only=True):
    reply_target: ReplyTarget | None = None
    capabilities: tuple[str, ...] = ()


E = TypeVar("E")


class RunPayload(msgspec.Struct, Generic[E], frozen=True, kw_only=True):
    run_id: str
    target: RunTarget
    binding_id: str
    event: E | None = None
    event_ref: ObjectRef | None = None
    delivery: DeliveryContext = msgspec.field(default_factory=DeliveryContext)
    synthetic: bool = False


RunEnvelope = Envelope[RunPayload[EventEnvelope]]
"""A run as its consumers read it."""


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The router's record of a run it dispatched, kept in a bucket only the router writes.

    The gateway decides a tool call's agent, delivery target, source app and chat approver from
    this record, never from what the caller says (custody, not claims). Written before the run
    is published, from the event alone: the same run id always has the same record (hence the
    event's time, not the routing's). The run's task has the run's id
    (`services.runner.tasks.statemachine.new_task`).
    """

    run_id: str
    target: RunTarget
    binding_id: str
    event_message_id: str
    source_app: str
    source_instance: str = "default"
    session_id: str | None = None  # the event's conversation (approvals and audit name it)
    reply_target: ReplyTarget | None = None
    actor: Actor | None = None  # who caused the event: the only one who may answer a chat approval
    capabilities: tuple[str, ...] = ()
    synthetic: bool = False
    event_at: str  # the event's timestamp


class RecordedRun(RunRecord, frozen=True, kw_only=True):
    """A run record that is a run (the router writes it with `services.router.recorded_traces.
    TracedRunRecord`, these fields the same): its header, and the event inline or by reference.
    Custody decodes it as `RunRecord` and never sees these fields."""

    header: Header
    event: EventEnvelope | None = None
    event_ref: ObjectRef | None = None

    def run(self) -> RunEnvelope:
        """The run as a runner reads it (what AMP_RUNS carried)."""
        return Envelope(header=self.header, payload=RunPayload(
            run_id=self.run_id, target=self.target, binding_id=self.binding_id, event=self.event,
            event_ref=self.event_ref, synthetic=self.synthetic,
            delivery=DeliveryContext(reply_target=self.reply_target, capabilities=self.capabilities)))


_run_decoder = msgspec.json.Decoder(RunEnvelope)
_recorded_run_decoder = msgspec.json.Decoder(RecordedRun)


def decode_run(data: bytes) -> RunEnvelope:
    """Decode a run message; raises msgspec.DecodeError (ValidationError) naming the bad field."""
    return decode_bounded(_run_decoder, data)


def decode_recorded_run(data: bytes) -> RunEnvelope:
    """The run a run record holds; raises msgspec.DecodeError (ValidationError) naming the bad field."""
    return decode_bounded(_recorded_run_decoder, data).run()
