"""Approvals decided in the chat the event came from.

An agent whose operator allowed it (`chat_approval: true`) may have the user who caused an event
confirm its write in that conversation. The gateway — never a runner, which may not decide
approvals — asks there through the source app's `reply` capability (as `event_reply` would),
under the interaction id `apr.<approval id>`, and records where it asked and whom. The user's
answer comes back from the app as an `interaction.submitted` event; the gateway grants (1, yes,
allow) or denies (2, no, refuse) the approval only while it is pending and only when the answer
comes from the same app, conversation and user. The decision then travels like one made with
`aurora approvals grant`: `approval.granted` resumes the waiting task (`ChatDecisions`: and the
audit names the chat user who decided).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from services.mcp_gateway.approvals.store import ApprovalRefused, ApprovalStore
from services.mcp_gateway.background import BackgroundLoop
from shared.contracts.approval import Approval, ChatQuestion
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import INTERACTION_SUBMITTED
from shared.contracts.subjects import Subjects
from shared.i18n import N_, say
from shared.i18n.arguments import summarize
from shared.jetstream.consume_loop import ACK, AtLeastOnceConsumer, Outcome, Retry
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.chat_approvals")
PREFIX = "apr."
DURABLE = "gateway-chat-approvals"
STAGE = "mcp_gateway"  # dead letters: amp.dlq.mcp_gateway
ALLOW = ("1", "yes", "y", "allow", "ok", "是", "同意", "允许")
REFUSE = ("2", "no", "n", "refuse", "deny", "否", "拒绝")
# A tool's side effect as the question names it (message ids: see shared/i18n)
SIDE_EFFECTS = {"write": N_("a write"), "dangerous": N_("a dangerous action"), "read": N_("a read")}
_decode_event = msgspec.json.Decoder(EventEnvelope).decode


def interaction_id_for(approval_id: str) -> str:
    return f"{PREFIX}{approval_id}"


def approval_of(interaction_id: object) -> str | None:
    if isinstance(interaction_id, str) and interaction_id.startswith(PREFIX) and len(interaction_id) > len(PREFIX):
        return interaction_id[len(PREFIX):]
    return None


def question_text(approval: Approval, *, locale: str | None = None, schema: Mapping[str, Any] | None = None) -> str:
    """The question asked in the chat, in the conversation's language: who wants to call what,
    the arguments by their schema's titles (`schema`: the tool's input schema), and the two
    numbered answers. The interaction id travels beside the text (`event_reply`'s
    `interaction_id`), never in it: ids are for the console and the CLI."""
    effect = say(locale, SIDE_EFFECTS.get(approval.side_effect, N_("a change")))
    head = say(locale, "{agent} wants to call {tool} ({effect}).", agent=approval.agent, tool=approval.tool,
               effect=effect) if approval.agent else \
        say(locale, "Aurora wants to call {tool} ({effect}).", tool=approval.tool, effect=effect)
    summary = summarize(approval.arguments, schema, locale)
    arguments = say(locale, "Arguments: {summary}", summary=summary) if summary else say(locale, "No arguments.")
    allow, refuse = say(locale, "allow"), say(locale, "refuse")
    return "\n".join([head, arguments, f"1. {allow}", f"2. {refuse}",
                      say(locale, "(answer with the number of your choice)")])


def verdict(value: object) -> bool | None:
    """True: grant; False: deny; None: the answer says neither."""
    answer = str(value).strip().lower()
    if answer in ALLOW:
        return True
    if answer in REFUSE:
        return False
    return None


def answer_problem(asked: ChatQuestion | None, event: EventEnvelope) -> str | None:
    """Why this answer cannot decide the approval (None: it may)."""
    if asked is None:
        return "the approval was not asked for in a chat"
    payload = event.payload
    if event.header.source.app != asked.app:
        return f"the answer came from {event.header.source.app!r}, the question went to {asked.app!r}"
    if asked.session_id and payload.session_id != asked.session_id:
        return f"the answer came from conversation {payload.session_id!r}, not {asked.session_id!r}"
    if asked.conversation and payload.conversation != asked.conversation:
        return f"the answer came from conversation {payload.conversation!r}, not {asked.conversation!r}"
    answered_by = payload.actor.id if payload.actor is not None else None
    if not asked.actor_id or answered_by != asked.actor_id:
        return f"{answered_by!r} answered; only {asked.actor_id!r}, who caused the event, may"
    return None


def answers_consumer(subjects: Subjects, max_deliver: int = 5) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=DURABLE,
        description="gateway: users' answers to approvals asked for in a chat",
        deliver_policy=DeliverPolicy.NEW,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=30,
        max_deliver=max_deliver,
        filter_subject=f"{subjects.prefix}.evt.*.{INTERACTION_SUBMITTED}",
    )


class RecordsDecisions(Protocol):  # reporting.reports.Reporting
    def record_decision(self, approval: Approval, by: str, outcome: str, detail: str | None, *,
                        caller: str | None = None) -> None: ...


class PublishesDecisions(Protocol):  # reporting.platform_events.PlatformEvents
    async def publish_approval_decision(self, approval: Approval, verb: str) -> None: ...


def chat_caller(approval: Approval) -> str:
    """Who decided, for the audit: the chat user the bridge's event named, in the app asked."""
    asked = approval.asked_in_chat
    return f"chat:{asked.app}:{asked.actor_id}" if asked else "chat"


class ChatDecisions:
    """What a decision made in the chat leaves: an audit record naming the chat user (as
    `aurora approvals grant` leaves one naming the person), then `approval.granted` / `.denied`,
    which the waiting task resumes on."""

    def __init__(self, audit: RecordsDecisions, events: PublishesDecisions) -> None:
        self._audit = audit
        self._events = events

    async def __call__(self, approval: Approval, verb: str) -> None:
        self._audit.record_decision(approval, approval.decided_by or "the chat user", verb, approval.note,
                                    caller=chat_caller(approval))
        await self._events.publish_approval_decision(approval, verb)


class ChatAnswers(BackgroundLoop):
    """Consumes `interaction.submitted` events and decides the approvals they answer; a part of
    the gateway: started, its durable consumer exists and its loop runs until `stop()`."""

    def __init__(self, js: JetStreamContext, subjects: Subjects, approvals: ApprovalStore, stream: str,
                 publish_decision: Callable[[Approval, str], Awaitable[None]], *, max_deliver: int = 5) -> None:
        super().__init__("the chat answers to approvals", "gateway-chat-answers")
        self._approvals = approvals
        self._publish_decision = publish_decision
        # An answer that keeps failing (NATS trouble deciding or publishing) is dead-lettered
        # after its last delivery, never dropped.
        self.consumer = AtLeastOnceConsumer(js, subjects, stream=stream, config=answers_consumer(subjects, max_deliver),
                                            stage=STAGE)

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        # The consumer stops after the loop that fetches from it (the exit stack unwinds newest first).
        await self.consumer.start()
        parts.push_async_callback(self.consumer.stop)
        await super()._start(parts)

    async def _loop(self, halt: asyncio.Event) -> None:
        await self.consumer.run_each(halt, self._handle, concurrency=1)

    async def _handle(self, msg: Msg) -> Outcome:
        try:
            await self.answered(msg.data)
        except Exception as exc:  # NATS trouble deciding or publishing: the answer comes again
            log.warning("an approval answer could not be handled; it will come again", error=str(exc))
            return Retry(f"the answer could not be handled: {type(exc).__name__}: {exc}")
        return ACK

    async def answered(self, data: bytes) -> Approval | None:
        """Decide the approval this answer is for, when it may; the decided approval or None."""
        try:
            event = _decode_event(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        body = event.payload.data if isinstance(event.payload.data, dict) else {}
        approval_id = approval_of(body.get("interaction_id"))
        if approval_id is None:
            return None  # an interaction of a run: the runners' to resume
        found = await self._approvals.get(approval_id)
        if found is None:
            return None
        approval = found[0]
        problem = answer_problem(approval.asked_in_chat, event)
        grant = verdict(body.get("value"))
        if problem is not None or grant is None:
            log.info("a chat answer did not decide the approval", approval=approval_id,
                     reason=problem or f"the answer {str(body.get('value'))[:40]!r} is neither allow nor refuse")
            return None
        actor = event.payload.actor
        by = f"{actor.kind} {actor.id} in the chat" if actor is not None else "the user in the chat"
        verb = "granted" if grant else "denied"
        try:
            decided = await self._approvals.decide(approval_id, grant=grant, by=by, note=f"answered {body['value']!r}")
        except ApprovalRefused as exc:
            if exc.approval is None or exc.approval.state != verb or exc.approval.decided_by != by:
                log.info("a chat answer came after the approval was decided", approval=approval_id, reason=str(exc))
                return None
            decided = exc.approval  # decided by this very answer before its event went out: send it again
        await self._publish_decision(decided, verb)
        return decided
