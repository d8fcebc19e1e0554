"""`aurora events tail|emit`: watch the events stream, and send a native event the way an app does."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, replace
from typing import Annotated, Any

import msgspec
import typer
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from nats.js.errors import NoStreamResponseError, NotFoundError

from aurora_cli.output import (
    EXIT_USAGE,
    CliError,
    cli_errors,
    connected,
    json_line,
    note,
    print_json,
    run,
    settings_or_fail,
    stdout,
)
from shared.clock import now_iso
from shared.config.settings import NatsSettings
from shared.contracts.signals import NativeEventSignal, decode_signal
from shared.contracts.subjects import Subjects, app_token, check_token
from shared.contracts.validation import is_reserved_type, validate_native_event
from shared.errors import EnvelopeError, SubjectError
from shared.jetstream.deadletter import REASON, STAGE
from shared.nats.signal_publisher import new_signal_id, publish_signal

app = typer.Typer(help="Watch AMP events and emit native ones.", no_args_is_help=True)

EXCERPT = 100


# --------------------------------------------------------------------------- pure helpers


def resolve_event_filter(subjects: Subjects, raw: str | None) -> str:
    """The subject filter to tail: default `<prefix>.evt.>`; a filter without the prefix is
    taken relative to it (`*.message.>` → `amp.evt.*.message.>`)."""
    base = f"{subjects.prefix}.evt"
    if raw is None or raw.strip() == "":
        return subjects.events_all
    value = raw.strip()
    if value == base or value.startswith(base + "."):
        subject = value if value != base else subjects.events_all
    elif value.startswith(subjects.prefix + "."):
        raise CliError(f"{value!r} is not an event subject: events live under {base}.>",
                       exit_code=EXIT_USAGE)
    else:
        subject = f"{base}.{value}"
    tokens = subject.split(".")
    for index, token in enumerate(tokens):
        if token == "" or any(c.isspace() for c in token):
            raise CliError(f"invalid subject filter {subject!r}: empty token or whitespace",
                           exit_code=EXIT_USAGE)
        if token == ">" and index != len(tokens) - 1:
            raise CliError(f"invalid subject filter {subject!r}: '>' must be the last token",
                           exit_code=EXIT_USAGE)
        if token not in ("*", ">") and ("*" in token or ">" in token):
            raise CliError(f"invalid subject filter {subject!r}: wildcards must be whole tokens",
                           exit_code=EXIT_USAGE)
    return subject


def parse_data(raw: str | None) -> dict[str, Any]:
    """`--data` must be a JSON object."""
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"--data is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                       exit_code=EXIT_USAGE) from exc
    if not isinstance(value, dict):
        raise CliError(f"--data must be a JSON object, not {type(value).__name__}",
                       exit_code=EXIT_USAGE)
    return value


def build_native_event(
    event_type: str,
    *,
    app_id: str,
    data: dict[str, Any],
    session_id: str | None = None,
    summary: str | None = None,
    synthetic: bool = False,
    expire_at: str | None = None,
    message_id: str | None = None,
) -> dict[str, Any]:
    """An `aurora/event` as a native app sends it, validated as strictly as the bridge will.

    The CLI chooses `header.message_id` itself, so it can print the id the event will carry
    without asking any service (the bridge keeps an id the app chose).
    """
    try:
        app_token(app_id)
    except SubjectError as exc:
        raise CliError(f"--app: {exc}", exit_code=EXIT_USAGE) from exc
    payload: dict[str, Any] = {"type": event_type, "data": data, "synthetic": synthetic}
    for key, value in (("session_id", session_id), ("summary", summary), ("expire_at", expire_at)):
        if value is not None:
            payload[key] = value
    event = {"header": {"message_id": message_id or str(uuid.uuid4())}, "payload": payload}
    try:
        validate_native_event(event)
    except EnvelopeError as exc:
        raise CliError(f"invalid event: {exc}", exit_code=EXIT_USAGE) from exc
    if is_reserved_type(event_type):
        raise CliError(
            f"invalid event: type {event_type!r} is reserved for the platform; apps may not emit it",
            exit_code=EXIT_USAGE,
        )
    return event


def event_line(subject: str, data: bytes) -> str:
    """One readable line: time, subject, type, source app, summary or a data excerpt."""
    try:
        event = json.loads(data)
        header, payload = event["header"], event["payload"]
        clock = str(header.get("timestamp", ""))[11:23] or "-"
        source = header.get("source") or {}
        app_id = str(source.get("app", "?"))
        if source.get("instance", "default") != "default":
            app_id += f"/{source['instance']}"
        detail = payload.get("summary") or json_line(payload.get("data", {}))
        flags = " [synthetic]" if payload.get("synthetic") else ""
        return f"{clock}  {subject}  {payload.get('type', '?')}  {app_id}  {_excerpt(str(detail))}{flags}"
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"-  {subject}  (not an AMP event)  {_excerpt(data.decode(errors='replace'))}"


def event_json(subject: str, data: bytes) -> Any:
    """The event exactly as stored; bytes that are not JSON are shown with their subject."""
    try:
        return json.loads(data)
    except ValueError:
        return {"subject": subject, "error": "not JSON", "raw": data.decode(errors="replace")}


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1] + "…"


# --------------------------------------------------------------------------- tail


@app.command()
def tail(
    subject_filter: Annotated[str | None, typer.Argument(
        metavar="[SUBJECT_FILTER]",
        help="Subject filter, default <prefix>.evt.>; relative filters like '*.message.>' are "
             "taken under <prefix>.evt.")] = None,
    from_start: Annotated[bool, typer.Option(
        "--from-start", help="Replay every stored event first (default: only new ones).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON event per line.")] = False,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", min=1, help="Stop after this many events.")] = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0.0, help="Stop after this many seconds (an error if --count was not reached).")] = None,
) -> None:
    """Print events from the events stream as they arrive."""
    settings = settings_or_fail()
    subjects = settings.subjects
    with cli_errors():
        subject = resolve_event_filter(subjects, subject_filter)
    run(_tail(settings.nats, subjects, subject, from_start, as_json, count, timeout))


async def _tail(nats_settings: NatsSettings, subjects: Subjects, subject: str, from_start: bool,
                as_json: bool, count: int | None, timeout: float | None) -> None:
    stream = subjects.stream("EVENTS")
    async with connected(nats_settings) as nc:
        js = nc.jetstream()
        sub = await _ordered(js, stream, subject, DeliverPolicy.ALL if from_start else DeliverPolicy.NEW)
        note(f"tailing {subject} on {stream} ({'from the start' if from_start else 'new events only'})")
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = 0
        try:
            while count is None or seen < count:
                wait = 1.0 if deadline is None else deadline - time.monotonic()
                if wait <= 0:
                    break
                try:
                    msg = await sub.next_msg(timeout=min(wait, 1.0))
                except (TimeoutError, NatsTimeoutError):
                    continue
                seen += 1
                if as_json:
                    print_json(event_json(msg.subject, msg.data))
                else:
                    stdout.print(event_line(msg.subject, msg.data), markup=False)
        finally:
            await sub.unsubscribe()
        if count is not None and seen < count:
            raise CliError(f"timed out after {timeout}s with {seen} of {count} events")


async def _ordered(js: JetStreamContext, stream: str, subject: str, policy: DeliverPolicy) -> Any:
    """An ephemeral ordered consumer: no state left behind, gaps are repaired by the client."""
    try:
        return await js.subscribe(subject, stream=stream, ordered_consumer=True, deliver_policy=policy)
    except NotFoundError as exc:
        raise CliError(
            f"stream {stream} does not exist yet: start the event-bridge (`make dev`) first"
        ) from exc


# --------------------------------------------------------------------------- emit


@dataclass(frozen=True)
class Emitted:
    message_id: str
    signal_id: str
    subject: str
    status: str = "published"
    reason: str | None = None
    stream_sequence: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "signal_id": self.signal_id, "subject": self.subject,
                "status": self.status, "reason": self.reason, "stream_sequence": self.stream_sequence}


@app.command()
def emit(
    event_type: Annotated[str, typer.Argument(metavar="TYPE", help="Dotted event type, e.g. message.received.")],
    app_id: Annotated[str, typer.Option("--app", help="The app id the event comes from, e.g. im.polaris.qq.")],
    data: Annotated[str | None, typer.Option("--data", help="Event data as a JSON object.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="payload.session_id")] = None,
    summary: Annotated[str | None, typer.Option("--summary", help="payload.summary")] = None,
    synthetic: Annotated[bool, typer.Option("--synthetic", help="Mark the event as synthetic.")] = False,
    instance: Annotated[str, typer.Option("--instance", help="The app instance.")] = "default",
    expire_at: Annotated[str | None, typer.Option(
        "--expire-at", help="payload.expire_at (RFC 3339); the bridge drops expired events.")] = None,
    wait: Annotated[bool, typer.Option(
        "--wait", help="Wait until the event is stored in the events stream or dead-lettered.")] = False,
    wait_timeout: Annotated[float, typer.Option("--wait-timeout", min=0.1, help="Seconds --wait waits.")] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Send a native aurora/event through the signal path and print its message_id."""
    settings = settings_or_fail()
    with cli_errors():
        event = build_native_event(
            event_type, app_id=app_id, data=parse_data(data), session_id=session, summary=summary,
            synthetic=synthetic, expire_at=expire_at)
        try:
            check_token(instance, "--instance")
        except SubjectError as exc:
            raise CliError(str(exc), exit_code=EXIT_USAGE) from exc
    signal = NativeEventSignal(signal_id=new_signal_id(), app=app_id, instance=instance,
                               observed_at=now_iso(), event=event)
    subject = settings.subjects.event(app_id, event_type)
    result = run(_emit(settings.nats, settings.subjects, signal, subject, wait, wait_timeout))
    if as_json:
        print_json(result.as_dict())
    else:
        stdout.print(result.message_id, markup=False)
        if result.status == "stored":
            note(f"stored in {settings.subjects.stream('EVENTS')} as {result.subject} "
                 f"(sequence {result.stream_sequence})")
        elif result.status == "dead_lettered":
            note(f"dead-lettered by the event-bridge: {result.reason}")
        elif result.status == "timeout":
            note(f"not seen within {wait_timeout}s: is the event-bridge running?")
    if result.status in ("dead_lettered", "timeout"):
        raise typer.Exit(1)


async def _emit(nats_settings: NatsSettings, subjects: Subjects, signal: NativeEventSignal, subject: str,
                wait: bool, wait_timeout: float) -> Emitted:
    message_id = str(signal.event["header"]["message_id"])
    async with connected(nats_settings) as nc:
        js = nc.jetstream()
        watchers = await _watch(js, subjects, subject) if wait else None
        try:
            await publish_signal(js, subjects, signal)
        except (NoRespondersError, NoStreamResponseError) as exc:
            raise CliError(
                f"no stream stores {subjects.signal(signal.app, 'native_event')}: start the stack "
                "(`make dev`) or the event-bridge first"
            ) from exc
        emitted = Emitted(message_id=message_id, signal_id=signal.signal_id, subject=subject)
        if watchers is None:
            return emitted
        try:
            return await _await_outcome(nc, watchers, emitted, wait_timeout)
        finally:
            for sub in watchers:
                await sub.unsubscribe()


async def _watch(js: JetStreamContext, subjects: Subjects, subject: str) -> tuple[Any, Any]:
    """Watch for our event and for dead letters, from before the signal is published."""
    events = await _ordered(js, subjects.stream("EVENTS"), subject, DeliverPolicy.NEW)
    dead = await _ordered(js, subjects.stream("DLQ"), subjects.dlq("event_bridge"), DeliverPolicy.NEW)
    return events, dead


async def _await_outcome(nc: NATS, watchers: tuple[Any, Any], emitted: Emitted, timeout: float) -> Emitted:
    events, dead = watchers
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for sub in (events, dead):
            try:
                msg: Msg = await sub.next_msg(timeout=0.1)
            except (TimeoutError, NatsTimeoutError):
                continue
            if sub is events and _message_id(msg.data) == emitted.message_id:
                return replace(emitted, status="stored", stream_sequence=msg.metadata.sequence.stream)
            if sub is dead and _signal_id(msg.data) == emitted.signal_id:
                headers = msg.headers or {}
                reason = f"{headers.get(REASON, 'no reason given')} (stage {headers.get(STAGE, '?')})"
                return replace(emitted, status="dead_lettered", reason=reason)
        await asyncio.sleep(0)
    return replace(emitted, status="timeout")


def _message_id(data: bytes) -> str | None:
    try:
        return str(json.loads(data)["header"]["message_id"])
    except (ValueError, KeyError, TypeError):
        return None


def _signal_id(data: bytes) -> str | None:
    try:
        return decode_signal(data).signal_id
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
