"""Run records in KV: what the router dispatched, written once, read by the gateway.

A record is written create-only (`Nats-Expected-Last-Subject-Sequence: 0`): the first write of
a run id wins and a redelivered event's second write is refused by JetStream with
`ALREADY_RECORDED`, which the writer counts as success — the same run id always keeps the
same record. Only run ids that are plain KV keys are looked up: a caller's `run_id` with a
wildcard or a space is never turned into a subject.
"""

from __future__ import annotations

import re

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import APIError

from shared.contracts.run import RunRecord

# JetStream's err_code for "wrong last sequence": the record exists already.
ALREADY_RECORDED = 10071
CREATE_ONLY = {"Nats-Expected-Last-Subject-Sequence": "0"}
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


def already_recorded(exc: BaseException | None) -> bool:
    return isinstance(exc, APIError) and exc.err_code == ALREADY_RECORDED


async def put_record(js: JetStreamContext, bucket: str, record: RunRecord) -> None:
    """Write one record create-only (a record already there is left as it is)."""
    if not is_record_key(record.run_id):
        raise ValueError(f"run id {record.run_id!r} is not a valid record key")
    try:
        await js.publish(record_subject(bucket, record.run_id), encode_record(record), headers=dict(CREATE_ONLY))
    except APIError as exc:
        if not already_recorded(exc):
            raise
