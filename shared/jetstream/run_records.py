"""Run records in KV: what the router dispatched, written once, read by the gateway — and run.

The record is the run (issue 38): since 0.1 a record is kept under `run.<run id>` and holds the
run too (the run's header, the event inline or its Object Store reference); runners consume
those keys through their durable on the bucket's stream (`RUN_RECORDS_FILTER`). So the router
writes each record create-only (`Nats-Expected-Last-Subject-Sequence: 0`): a redelivered event's
second write is refused with `wrong last sequence` — the run exists, and is not queued twice.
Records written before (key `<run id>`, no run in them: that run went through AMP_RUNS) stay
where they are and match no runner's filter, so they are never run again; custody reads the new
key first and the old one after (`record_keys`). A record's custody fields are a pure function of
the event, the binding and the source app's capabilities; readers decoding `RunRecord` skip the
rest (the run, and the router's `route` note, services/router/recorded_traces.py).
Only run ids that are plain KV keys are looked up: a caller's `run_id` with a wildcard or a space
is never turned into a subject.
"""

from __future__ import annotations

import re
from typing import Protocol

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from shared.contracts.run import RunRecord

RUN_KEY_PREFIX = "run."  # a record that is also a run (what runners consume)
CREATE_ONLY = {"Nats-Expected-Last-Subject-Sequence": "0"}
WRONG_LAST_SEQUENCE = 10071  # JetStream's err_code for a create-only write to a key that exists
_KEY = re.compile(r"^[-_=a-zA-Z0-9]{1,128}$")
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(RunRecord)


def is_record_key(run_id: object) -> bool:
    """Run ids the router makes (uuids) and test ids alike; never a wildcard, dot or space."""
    return isinstance(run_id, str) and _KEY.fullmatch(run_id) is not None


def record_subject(bucket: str, run_id: str) -> str:
    """The subject a record written before runs moved into records is kept under."""
    return f"$KV.{bucket}.{run_id}"


def run_record_key(run_id: str) -> str:
    """The KV key of a record that is a run."""
    return RUN_KEY_PREFIX + run_id


def run_record_subject(bucket: str, run_id: str) -> str:
    """The subject the router creates a run's record on (it pipelines these)."""
    return f"$KV.{bucket}.{RUN_KEY_PREFIX}{run_id}"


def run_records_filter(bucket: str) -> str:
    """What the runners' durable consumes: records that are runs, never the older ones."""
    return f"$KV.{bucket}.{RUN_KEY_PREFIX}>"


def record_keys(run_id: str) -> tuple[str, str]:
    """Where a run's record may be, newest form first (custody reads both)."""
    return run_record_key(run_id), run_id


def already_stored(error: BaseException) -> bool:
    """Whether a create-only write failed because the record exists (the same run, written before)."""
    return getattr(error, "err_code", None) == WRONG_LAST_SEQUENCE


class _Readable(Protocol):
    async def get(self, key: str) -> KeyValue.Entry: ...


async def read_record(bucket: _Readable, run_id: str) -> bytes | None:
    """A run's record as stored (None: none, or deleted): the run's form, else the older one.
    A record of a run routed now is found at once; a miss reads both keys."""
    for key in record_keys(run_id):
        try:
            entry = await bucket.get(key)
        except KeyNotFoundError:
            continue
        return entry.value or None
    return None


def encode_record(record: RunRecord) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes) -> RunRecord:
    """Raises msgspec.ValidationError / DecodeError for bytes that are no record."""
    return _decoder.decode(data)


async def put_record(js: JetStreamContext, bucket: str, record: RunRecord) -> None:
    """Write one record in the older form (no run in it; tests of upgrades and custody use it)."""
    if not is_record_key(record.run_id):
        raise ValueError(f"run id {record.run_id!r} is not a valid record key")
    await js.publish(record_subject(bucket, record.run_id), encode_record(record))
