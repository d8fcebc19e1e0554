"""Run records in KV: what the router dispatched, written once, read by the gateway.

A record's custody fields are a pure function of the event, the binding and the source app's
capabilities, so writing it again for a redelivered event writes the same custody (the router's
`route` field, the event's route trace, services/router/recorded_traces.py, says when and by
which router it was routed last; readers decoding `RunRecord` skip it). (So records are plain
puts: a create-only write, with `Nats-Expected-Last-Subject-Sequence`, would be refused for the
redelivered event and hold it back for nothing. Nor do records carry a `Nats-Msg-Id`: headers
cost the router's hot path more than an identical rewrite costs.) Only run ids that are plain KV keys
are looked up: a caller's `run_id` with a wildcard or a space is never turned into a subject.
"""

from __future__ import annotations

import re

import msgspec
from nats.js import JetStreamContext

from shared.contracts.run import RunRecord

_KEY = re.compile(r"^[-_=a-zA-Z0-9]{1,128}$")
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(RunRecord)


def is_record_key(run_id: object) -> bool:
    """Run ids the router makes (uuids) and test ids alike; never a wildcard, dot or space."""
    return isinstance(run_id, str) and _KEY.fullmatch(run_id) is not None


def record_subject(bucket: str, run_id: str) -> str:
    """The subject a put of this record publishes to (the router pipelines these)."""
    return f"$KV.{bucket}.{run_id}"


def encode_record(record: RunRecord) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes) -> RunRecord:
    """Raises msgspec.ValidationError / DecodeError for bytes that are no record."""
    return _decoder.decode(data)


async def put_record(js: JetStreamContext, bucket: str, record: RunRecord) -> None:
    """Write one record, waiting for JetStream's acknowledgement."""
    if not is_record_key(record.run_id):
        raise ValueError(f"run id {record.run_id!r} is not a valid record key")
    await js.publish(record_subject(bucket, record.run_id), encode_record(record))
