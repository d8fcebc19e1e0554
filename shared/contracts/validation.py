"""Strict pydantic models of the AMP envelope, used where input enters Aurora (the edges).

They accept exactly the JSON the msgspec structs in `envelope.py` produce and reject anything
else with an error naming the field. Unknown keys are errors here: an edge is where a typo must
be caught, while the hot path (msgspec) ignores fields it does not know, so adding a field later
never breaks an older reader.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from shared.errors import EnvelopeError

APP_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
EVENT_TYPE_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$"
MESSAGE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
# Types only the platform may produce; an app claiming one is rejected by the bridge. Of the
# interaction namespace only the runner's question is the platform's: an answer
# (`interaction.submitted`) comes from the app the user answered in.
RESERVED_EVENT_PREFIXES = ("tool.", "app.", "task.", "approval.", "route.", "system.", "interaction.requested.",
                           "schedule.", "a2a.")


# RFC 3339 (what every consumer's parser reads), not the whole of ISO 8601 that Python's
# fromisoformat also takes (week dates, basic format without separators).
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})?$")


def check_timestamp(value: str) -> str:
    """`value` if it is an RFC 3339 timestamp with a UTC offset, else ValueError saying why."""
    try:
        if not _RFC3339.fullmatch(value):
            raise ValueError(value)
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError("must be an RFC 3339 timestamp, e.g. 2026-06-19T12:00:00+08:00") from exc
    if parsed.tzinfo is None:
        raise ValueError("must carry a UTC offset, e.g. +08:00 or Z")
    return value


Timestamp = Annotated[str, AfterValidator(check_timestamp)]
AppId = Annotated[str, Field(pattern=APP_ID_PATTERN)]
MessageId = Annotated[str, Field(pattern=MESSAGE_ID_PATTERN)]
EventType = Annotated[str, Field(pattern=EVENT_TYPE_PATTERN, max_length=128)]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class SourceModel(_Strict):
    app: AppId
    instance: Annotated[str, Field(min_length=1, max_length=64)] = "default"


class TraceModel(_Strict):
    traceparent: str | None = None
    tracestate: str | None = None


class HeaderModel(_Strict):
    protocol: Literal["amp/1.0"] = "amp/1.0"
    method: Annotated[str, Field(min_length=1)]
    message_id: MessageId
    timestamp: Timestamp
    source: SourceModel
    trace: TraceModel | None = None


class ActorModel(_Strict):
    id: Annotated[str, Field(min_length=1)]
    kind: Literal["user", "system", "api"]


class SubjectModel(_Strict):
    kind: Annotated[str, Field(min_length=1)]
    id: Annotated[str, Field(min_length=1)]


class EventPayloadModel(_Strict):
    type: EventType
    session_id: str | None = None
    summary: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    expire_at: Timestamp | None = None
    bot: str | None = None
    workspace: str | None = None
    conversation: str | None = None
    actor: ActorModel | None = None
    subject: SubjectModel | None = None
    source_event_type: str | None = None
    raw_ref: str | None = None
    synthetic: bool = False


class EventHeaderModel(HeaderModel):
    method: Literal["aurora/event"] = "aurora/event"


class AmpEvent(_Strict):
    """A complete, valid AMP event envelope."""

    header: EventHeaderModel
    payload: EventPayloadModel


class PartialHeaderModel(_Strict):
    """What a native app may send: every header field is optional; the bridge completes it."""

    protocol: Literal["amp/1.0"] | None = None
    method: Literal["aurora/event"] | None = None
    message_id: MessageId | None = None
    timestamp: Timestamp | None = None
    source: SourceModel | None = None
    trace: TraceModel | None = None


class NativeEvent(_Strict):
    """An `aurora/event` as a native app sends it, before the bridge completes it."""

    header: PartialHeaderModel = Field(default_factory=PartialHeaderModel)
    payload: EventPayloadModel


def problems_of(error: ValidationError) -> list[tuple[str, str]]:
    """(dotted field path, reason) for every problem pydantic found."""
    return [
        (".".join(str(part) for part in item["loc"]) or "(root)", item["msg"])
        for item in error.errors(include_url=False)
    ]


def validate_event(raw: bytes | str | dict[str, Any]) -> AmpEvent:
    """Parse and strictly validate a complete event; raise EnvelopeError naming each field."""
    try:
        return AmpEvent.model_validate(_standard_json(raw))
    except ValidationError as exc:
        raise EnvelopeError(problems_of(exc)) from exc


def validate_native_event(raw: bytes | str | dict[str, Any]) -> NativeEvent:
    """Parse and strictly validate a native app's (possibly partial) `aurora/event`."""
    try:
        return NativeEvent.model_validate(_standard_json(raw))
    except ValidationError as exc:
        raise EnvelopeError(problems_of(exc)) from exc


_json_decoder = msgspec.json.Decoder()


def _standard_json(raw: bytes | str | dict[str, Any]) -> Any:
    """Parse as standard JSON, the only thing the hot path (msgspec) reads.

    pydantic's own JSON parser also takes `NaN`, `Infinity` and numbers beyond float range,
    which msgspec refuses and would re-encode as `null`: an envelope accepted here must read
    the same everywhere. Dicts go through JSON too, so they mean exactly what they would on the
    wire. Strict validation of the parsed value is then the same as strict JSON validation.
    """
    try:
        if isinstance(raw, dict):
            raw = json.dumps(raw, allow_nan=False)
        return _json_decoder.decode(raw)
    except (ValueError, TypeError, RecursionError) as exc:  # msgspec errors are ValueErrors
        raise EnvelopeError([("(root)", f"not standard JSON: {exc}")]) from exc


def is_reserved_type(event_type: str) -> bool:
    """`tool.x`, and the bare namespace `tool` too: the whole namespace is the platform's."""
    return (event_type + ".").startswith(RESERVED_EVENT_PREFIXES)


def event_type_pattern() -> re.Pattern[str]:
    return re.compile(EVENT_TYPE_PATTERN)
