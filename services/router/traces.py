"""Route traces in KV, one per event, readable by the event's message id."""

from __future__ import annotations

import base64
import re

import msgspec
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from shared.contracts.route import RouteTrace

_KV_KEY = re.compile(r"^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$")
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(RouteTrace)


def trace_key(message_id: str) -> str:
    """The KV key for a message id. Ids that are valid keys are used as they are; others (a
    `:` is allowed in message ids, not in keys) are base64url-encoded behind `=`, which no
    message id can start with, so the two forms never collide."""
    if _KV_KEY.fullmatch(message_id) and not message_id.startswith("="):
        return message_id
    return "=" + base64.urlsafe_b64encode(message_id.encode()).decode().rstrip("=")


def encode_trace(trace: RouteTrace) -> bytes:
    return _encoder.encode(trace)


def kv_subject(bucket: str, key: str) -> str:
    """The subject a KV put publishes to; the router writes traces with pipelined publishes."""
    return f"$KV.{bucket}.{key}"


async def read_trace(kv: KeyValue, message_id: str) -> RouteTrace | None:
    try:
        entry = await kv.get(trace_key(message_id))
    except KeyNotFoundError:
        return None
    if entry.value is None:
        return None
    return _decoder.decode(entry.value)
