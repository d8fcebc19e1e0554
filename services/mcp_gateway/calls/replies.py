"""The reply to a tool call: one envelope, whatever happened, with a reply id of its own."""

from __future__ import annotations

import os
import random

import msgspec

from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.toolcall import METHOD_RESULT, ToolCallEnvelope, ToolCallResult, ToolResultEnvelope

# A reply's message id: a random version-4 UUID, drawn from a generator of the gateway's own
# (seeded from the system's randomness, and again in a forked child). Not `uuid.uuid4()`: a
# reply's id is neither a secret nor a deduplication key, and reading the system's randomness
# and building a `UUID` took 10 µs of every call's path (measured in place).
_reply_ids = random.Random()
os.register_at_fork(after_in_child=_reply_ids.seed)
_UUID4_KEEP = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)  # all but the version and variant bits
_UUID4_MARK = (0x4000 << 64) | (0x8000 << 48)  # version 4, variant RFC 4122


def reply_id() -> str:
    digits = f"{_reply_ids.getrandbits(128) & _UUID4_KEEP | _UUID4_MARK:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def result_reply(request: ToolCallEnvelope | None, app_id: str, result: ToolCallResult) -> bytes:
    """The reply envelope to `request` (None: it could not be decoded), from `app_id`."""
    header = Header(
        method=METHOD_RESULT,
        message_id=reply_id(),
        timestamp=now_iso(),
        source=Source(app=app_id),
        trace=request.header.trace if request is not None else None,
    )
    return msgspec.json.encode(ToolResultEnvelope(header=header, payload=result))
