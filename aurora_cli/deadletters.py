"""Pure logic of `aurora dlq`: a dead letter read from its headers, the filters, and what a replay
sends. No I/O here (aurora_cli/commands/dlq.py does the NATS side)."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from aurora_cli.output import EXIT_USAGE, CliError
from shared.contracts.signals import PLATFORM_EVENT_NAMESPACES
from shared.contracts.subjects import app_token
from shared.jetstream import deadletter as dl

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
REPLAYED_FROM = "Aurora-Dlq-Replayed-From"
# deploy/nats-auth.conf refuses the operator these apps' signals and events.
PLATFORM_APP_TOKENS = frozenset(app_token(app) for app in PLATFORM_EVENT_NAMESPACES)


def parse_duration(option: str, raw: str | None) -> timedelta | None:
    """`10m`, `1h`, `30s`, `2d` → a timedelta; anything else is a usage error naming the option."""
    if raw is None:
        return None
    found = _DURATION.match(raw)
    if found is None:
        raise CliError(f"{option} {raw!r}: give a number and a unit s, m, h or d (e.g. 10m, 1h)",
                       exit_code=EXIT_USAGE)
    return timedelta(seconds=float(found.group(1)) * _UNITS[found.group(2)])


@dataclass(frozen=True)
class DeadLetter:
    seq: int  # its sequence in AMP_DLQ: what show, replay and purge name
    subject: str
    stage: str
    reason: str
    at: datetime | None
    original_subject: str
    stream: str | None
    sequence: int | None
    deliveries: int | None
    consumer: str | None
    via: str
    headers: dict[str, str]  # the original's own headers
    data: bytes

    def summary(self) -> dict[str, object]:
        return {"seq": self.seq, "stage": self.stage, "reason": self.reason,
                "at": self.at.isoformat() if self.at else None, "original_subject": self.original_subject,
                "stream": self.stream, "sequence": self.sequence, "deliveries": self.deliveries,
                "consumer": self.consumer, "via": self.via, "bytes": len(self.data)}

    def detail(self) -> dict[str, object]:
        try:
            payload: dict[str, object] = {"text": self.data.decode()}
        except UnicodeDecodeError:
            payload = {"base64": base64.b64encode(self.data).decode()}
        return {**self.summary(), "headers": self.headers, "payload": payload}


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _time(value: str | None, fallback: datetime | None) -> datetime | None:
    if value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    return fallback


def read_dead_letter(seq: int, subject: str, headers: Mapping[str, str] | None, data: bytes | None,
                     stored_at: datetime | None = None) -> DeadLetter:
    """A stored dead letter; one written before these headers existed still reads (fields None)."""
    h = headers or {}
    stage = h.get(dl.STAGE) or subject.rsplit(".", 1)[-1]
    return DeadLetter(
        seq=seq, subject=subject, stage=stage, reason=h.get(dl.REASON, ""), at=_time(h.get(dl.AT), stored_at),
        original_subject=h.get(dl.ORIGINAL_SUBJECT, ""), stream=h.get(dl.ORIGINAL_STREAM),
        sequence=_int(h.get(dl.ORIGINAL_SEQUENCE)), deliveries=_int(h.get(dl.DELIVERIES)),
        consumer=h.get(dl.CONSUMER), via=h.get(dl.VIA, "stage"),
        headers=dl.decode_original_headers(h.get(dl.ORIGINAL_HEADERS)), data=data or b"",
    )


@dataclass(frozen=True)
class Filter:
    stage: str | None = None
    reason: str | None = None  # a substring, case-insensitive
    since: timedelta | None = None  # dead-lettered at most this long ago
    older_than: timedelta | None = None  # dead-lettered at least this long ago

    @property
    def empty(self) -> bool:
        return self.stage is None and self.reason is None and self.since is None and self.older_than is None

    def matches(self, letter: DeadLetter, now: datetime) -> bool:
        if self.stage is not None and letter.stage != self.stage:
            return False
        if self.reason is not None and self.reason.lower() not in letter.reason.lower():
            return False
        if self.since is not None or self.older_than is not None:
            if letter.at is None:
                return False  # an age filter cannot vouch for a letter of unknown age
            age = now - letter.at
            if self.since is not None and age > self.since:
                return False
            if self.older_than is not None and age < self.older_than:
                return False
        return True


def run_record_key(letter: DeadLetter, records_bucket: str) -> str | None:
    """The key of the run record a dead letter holds (`run.<run id>`), or None when it is no run
    record. A run is replayed by the router (the one writer of records), never published by hand."""
    kv_prefix = f"$KV.{records_bucket}."
    if not letter.original_subject.startswith(kv_prefix):
        return None
    key = letter.original_subject[len(kv_prefix):]
    if not key.startswith("run."):
        raise CliError(f"dead letter {letter.seq} is a run record written before runs were records "
                       f"({letter.original_subject}): it was never a run, so it is not replayed")
    return key


def replay_target(letter: DeadLetter, prefix: str) -> str:
    """The subject a replay goes to: the original's, which must be one of this installation's."""
    subject = letter.original_subject
    if not subject or not subject.startswith(prefix + ".") or any(c in subject for c in "*> \t\r\n"):
        raise CliError(f"dead letter {letter.seq} has no replayable original subject ({subject!r}): "
                       f"only subjects under {prefix}.> are replayed")
    tokens = subject.split(".")
    if len(tokens) > 2 and tokens[1] in ("sig", "evt") and tokens[2] in PLATFORM_APP_TOKENS:
        raise CliError(f"dead letter {letter.seq} is a platform service's own {tokens[1]} ({subject}): "
                       "only that service publishes those, so it is not replayed by hand")
    return subject


def replay_headers(letter: DeadLetter, dlq_stream: str) -> dict[str, str]:
    """The original's headers, except JetStream's own (`Nats-*`: a stale expectation would be
    refused), with a `Nats-Msg-Id` naming this dead letter: the original's id may still be in the
    target stream's duplicate window, which would drop the replay silently, while two replays of
    one dead letter within it are one. What keeps a replay from redoing work is the body, kept
    byte for byte: its message id gives the same event, the same run id, the same task."""
    headers = {k: v for k, v in letter.headers.items() if not k.lower().startswith("nats-")}
    headers["Nats-Msg-Id"] = f"dlq-replay:{dlq_stream}:{letter.seq}"
    headers[REPLAYED_FROM] = f"{dlq_stream}:{letter.seq}"
    return headers
