"""The chat app's native events: one pure builder per IM event, shared by the `simulate_*` tools and
the web page's `POST /events`, so both emit exactly the same `aurora/event` notification.

A webhook body is one flat JSON object whose `type` picks the event; `parse_body` validates it and
raises `BadEvent` naming the field to fix (never a half-built event).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from apps.common import event_params

# An id a person could type: no blanks (it ends up in subjects, filters and log lines).
Id = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\s]+$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=4000, pattern=r"\S")]
Note = Annotated[str, StringConstraints(max_length=1000)]


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def raw_message_type(session_id: str) -> str:
    """The OneBot-style raw name a QQ adapter would report."""
    return "message.group" if session_id.startswith("group") else "message.private"


@dataclass(frozen=True)
class Emission:
    """One event the app is about to emit, and what the page should remember of it."""

    event_type: str
    data: dict[str, Any]
    summary: str
    session_id: str | None
    actor: tuple[str, str]  # (id, kind)
    subject: tuple[str, str]  # (kind, id)
    raw_type: str
    # Shown on the page only, never put into the event (e.g. where a friend request was made).
    shown_in: str | None = None
    ids: dict[str, str] = field(default_factory=dict)  # what the caller gets back (message_id, request_id)

    def params(self, bot: str) -> dict[str, Any]:
        """The `aurora/event` params: a partial AMP envelope with the real routing fields."""
        params = event_params(self.event_type, self.data, summary=self.summary, session_id=self.session_id)
        params["payload"].update(
            bot=bot,
            actor={"id": self.actor[0], "kind": self.actor[1]},
            subject={"kind": self.subject[0], "id": self.subject[1]},
            source_event_type=self.raw_type,
        )
        return params


def message_received(session_id: str, text: str, user_id: str) -> Emission:
    message_id = new_id("in")
    return Emission("message.received", {"text": text}, f"{user_id} wrote in {session_id}", session_id,
                    (user_id, "user"), ("message", message_id), raw_message_type(session_id),
                    ids={"message_id": message_id})


def friend_request(user_id: str, note: str, shown_in: str | None = None) -> Emission:
    request_id = new_id("fr")
    return Emission("friend.request_received", {"note": note}, f"{user_id} sent a friend request", None,
                    (user_id, "user"), ("friend_request", request_id), "request.friend", shown_in=shown_in,
                    ids={"request_id": request_id})


def interaction_answer(interaction_id: str, value: str, session_id: str, user_id: str) -> Emission:
    return Emission("interaction.submitted", {"interaction_id": interaction_id, "value": value},
                    f"{user_id} answered {interaction_id}", session_id, (user_id, "user"),
                    ("interaction", interaction_id), "message.interaction")


def member_joined(session_id: str, user_id: str) -> Emission:
    return Emission("group.member_joined", {"user_id": user_id}, f"{user_id} joined {session_id}", session_id,
                    (user_id, "user"), ("member", user_id), "notice.group_increase")


def message_deleted(session_id: str, message_id: str, user_id: str | None) -> Emission:
    """A recall: the actor is whoever deleted it, the IM itself when nobody is named; no text."""
    actor = (user_id, "user") if user_id else ("im", "system")
    who = user_id or "the IM"
    return Emission("message.deleted", {}, f"{who} deleted {message_id} in {session_id}", session_id, actor,
                    ("message", message_id), "notice.group_recall" if session_id.startswith("group")
                    else "notice.friend_recall")


# -- webhook bodies -----------------------------------------------------------------------------
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class MessageBody(_Body):
    type: Literal["message.received"]
    session_id: Id
    text: Text
    user_id: Id = "u1"


class MemberJoinedBody(_Body):
    type: Literal["group.member_joined"]
    session_id: Id
    user_id: Id


class FriendRequestBody(_Body):
    type: Literal["friend.request_received"]
    user_id: Id
    note: Note = ""
    # Where the page shows the request and its answer; not part of the event (a friend request
    # belongs to no conversation).
    shown_in: Id | None = None


class AnswerBody(_Body):
    type: Literal["interaction.submitted"]
    session_id: Id
    interaction_id: Id
    value: Text
    user_id: Id = "u1"


class DeletedBody(_Body):
    type: Literal["message.deleted"]
    session_id: Id
    message_id: Id
    user_id: Id | None = None


Body = Annotated[MessageBody | MemberJoinedBody | FriendRequestBody | AnswerBody | DeletedBody,
                 Field(discriminator="type")]
_BODY: TypeAdapter[Body] = TypeAdapter(Body)
EVENT_TYPES = ("message.received", "group.member_joined", "friend.request_received", "interaction.submitted",
               "message.deleted")


class BadEvent(ValueError):
    """A webhook body that is not one of the app's events: `problems` are (field, what to fix)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{where}: {what}" for where, what in problems))


def parse_body(body: Any) -> Emission:
    """The emission a webhook body asks for, or BadEvent naming each field to fix."""
    if not isinstance(body, dict):
        raise BadEvent([("(body)", f"must be a JSON object, got {type(body).__name__}")])
    if body.get("type") not in EVENT_TYPES:
        got = body.get("type")
        raise BadEvent([("type", f"must be one of {', '.join(EVENT_TYPES)}; got {got!r}")])
    try:
        parsed = _BODY.validate_python(body)
    except ValidationError as exc:
        # loc[0] is the union's tag (the event type): the field is what follows it.
        raise BadEvent([(".".join(str(p) for p in item["loc"][1:]) or "(body)", _reason(item))
                        for item in exc.errors(include_url=False)]) from None
    return emission_for(parsed)


def _reason(item: Any) -> str:
    if item["type"] == "string_pattern_mismatch":
        return "must not be blank" if item["loc"][-1] in ("text", "value") else "must be an id without blanks"
    if item["type"] == "extra_forbidden":
        return "unknown field (remove it)"
    return str(item["msg"])


def emission_for(body: Body) -> Emission:
    if isinstance(body, MessageBody):
        return message_received(body.session_id, body.text, body.user_id)
    if isinstance(body, MemberJoinedBody):
        return member_joined(body.session_id, body.user_id)
    if isinstance(body, FriendRequestBody):
        return friend_request(body.user_id, body.note, body.shown_in)
    if isinstance(body, AnswerBody):
        return interaction_answer(body.interaction_id, body.value, body.session_id, body.user_id)
    return message_deleted(body.session_id, body.message_id, body.user_id)
