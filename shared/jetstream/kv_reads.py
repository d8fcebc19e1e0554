"""A KV entry read with one msgspec decode (a workaround of nats-py's `KeyValue.get`).

For a bucket without direct gets (Aurora's on a cluster, where a direct get may be answered by a
lagging replica, and those created before buckets on one server had them), nats-py asks
`STREAM.MSG.GET` and builds the entry through `json.loads`, a dataclass, base64 and, for a message
with headers, the standard library's email parser. Every entry written create-only
has headers (the expected sequence it was written with): a task, a run record, a ledger claim.
On bench-e2e's path such reads were about a fifth of the gateway's Python per event (the run's
record, the call's ledger entry) and the runner's look for a stored task is one too. Here the
same request's answer is decoded once with msgspec, and the headers, when there are any, with
Aurora's header parser (shared/nats/headers.py). The entry and the errors are nats-py's own:
`KeyNotFoundError` for a key never written, deleted or purged; its API errors for the rest.

`last_sequence` is a bucket's last sequence from the stream-info request `KeyValue.status()`
makes, decoded for that one field: nats-py builds the whole stream info in dataclasses (client CPU
per look 171 against 112 µs), and the router looks for each batch of events no binding took.
"""

from __future__ import annotations

import base64

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError
from nats.js.kv import KeyValue

from shared.nats.headers import parse_header_lines

_STATUS_LINE = len(b"NATS/1.0\r\n")
_REMOVED = ("DEL", "PURGE")


class _Stored(msgspec.Struct):
    subject: str
    seq: int
    hdrs: str | None = None
    data: str | None = None


class _Error(msgspec.Struct):
    code: int
    err_code: int | None = None
    description: str | None = None


class _Answer(msgspec.Struct):
    message: _Stored | None = None
    error: _Error | None = None


_answer = msgspec.json.Decoder(_Answer)


class _State(msgspec.Struct):
    last_seq: int = 0


class _Info(msgspec.Struct):
    state: _State | None = None
    error: _Error | None = None


_info = msgspec.json.Decoder(_Info)


async def last_sequence(kv: KeyValue) -> int:
    """The bucket's last sequence, as `(await kv.status()).stream_info.state.last_seq` says it."""
    js = kv._js  # nats-py keeps the bucket's context and stream private
    reply = await js._nc.request(f"{js._prefix}.STREAM.INFO.{kv._stream}", b"", timeout=js._timeout)
    info = _info.decode(reply.data)
    if info.error is not None:
        raise APIError.from_error(msgspec.structs.asdict(info.error))
    return info.state.last_seq if info.state is not None else 0


async def read_entry(js: JetStreamContext, stream: str, bucket: str, key: str) -> KeyValue.Entry:
    """The key's latest entry, as `KeyValue.get(key)` gives it."""
    subject = f"$KV.{bucket}.{key}"
    # nats-py keeps the context's connection, API prefix and timeout private.
    reply = await js._nc.request(f"{js._prefix}.STREAM.MSG.GET.{stream}",
                                 msgspec.json.encode({"last_by_subj": subject}), timeout=js._timeout)
    answer = _answer.decode(reply.data)
    if answer.error is not None:
        if answer.error.code == 404:
            raise KeyNotFoundError
        raise APIError.from_error(msgspec.structs.asdict(answer.error))
    stored = answer.message
    if stored is None or stored.subject != subject:
        raise KeyNotFoundError
    entry = KeyValue.Entry(bucket=bucket, key=key, value=base64.b64decode(stored.data) if stored.data else None,
                           revision=stored.seq, delta=None, created=None, operation=None)
    if stored.hdrs:
        operation = parse_header_lines(base64.b64decode(stored.hdrs)[_STATUS_LINE:]).get("KV-Operation")
        if operation in _REMOVED:
            raise KeyNotFoundError(entry, operation)
    return entry


async def read_direct(js: JetStreamContext, stream: str, bucket: str, key: str) -> KeyValue.Entry:
    """The key's latest entry by direct get, as `KeyValue.get(key)` gives it for a bucket with
    direct gets: nats-py builds a JSON request it does not send, a dataclass and a parsed
    timestamp for each read."""
    subject = f"$KV.{bucket}.{key}"
    reply = await js._nc.request(f"{js._prefix}.DIRECT.GET.{stream}.{subject}", b"", timeout=js._timeout)
    headers = reply.headers or {}
    if not reply.data and (status := headers.get("Status")):
        if status == "404":
            raise KeyNotFoundError
        raise APIError.from_msg(reply)
    if headers.get("Nats-Subject") != subject:
        raise KeyNotFoundError
    sequence = headers.get("Nats-Sequence")
    entry = KeyValue.Entry(bucket=bucket, key=key, value=reply.data or None,
                           revision=int(sequence) if sequence else None, delta=None, created=None, operation=None)
    if headers.get("KV-Operation") in _REMOVED:
        raise KeyNotFoundError(entry, headers["KV-Operation"])
    return entry
