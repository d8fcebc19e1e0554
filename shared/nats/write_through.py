"""Publishing with the connection's buffer written by a callback at the end of the event loop's
turn, not by nats-py's flusher task.

Why: nats-py's `publish` appends the message to the connection's pending buffer and wakes its
flusher task through an `asyncio.Queue` and a future per publish; the task then writes the buffer
on a later turn of the loop. On a relayed tool call that is a task wake-up and its queue per
message, on the call's path: in the gateway for the call it writes on the app's relay (`…c2s`),
for its reply and for its audit record, in the supervisor for each line the app writes on its
stdout (`…s2c`). On a machine whose two cores the caller, the gateway, the supervisor,
nats-server and the app share, each of them lengthens every call.

`publish_soon` appends the message to the same pending buffer, as nats-py would, and has it
written by one plain callback (`loop.call_soon`) once the callbacks ready now have run: every
message published in one turn of the loop still leaves in one write (many callers at once share
a system call, as with nats-py's flusher), and the connection's order is nats-py's, whichever way
a message was published. Where the callback cannot write (the socket backed up, NATS away) it
leaves the buffer to nats-py, which waits for the socket to drain, or sends the buffer once it
has reconnected. A message nats-py would refuse or has to wait for (over the server's payload
limit, a bad header, its buffer full) is nats-py's `publish`, with its errors and its waiting.

nats-py has no public hook for this: the module appends to the client's pending buffer and writes
to its transport, as its own `_send_command` and flusher do. `tests/integration/shared/nats/test_write_through.py`
runs it on a real connection, in order with nats-py's own publishes and across a reconnect, so a
nats-py release that buffers differently fails there first.

`flush` is `nc.flush()` that covers everything sent before it. nats-py writes a flush's PING
straight to the socket, ahead of the commands still waiting in its pending buffer. A subscription
made just before is such a command. The PONG could then come back before the subscription
reached the server, so a service that logged "ready" after `nc.flush()` could still answer a
request with "no responders". `flush` first hands the pending buffer to the socket, then sends
the PING behind it.
"""

from __future__ import annotations

import asyncio
import functools

from nats.aio.client import _HEADER_KEY_RE, _HEADER_VALUE_NEWLINES, _validate_subject
from nats.aio.client import Client as NATS
from nats.aio.transport import TcpTransport
from nats.micro.request import Request

# Written by the callback only while the socket takes it: past this much unsent, nats-py's
# flusher (which waits for the socket to drain) takes over, so a slow server slows publishers.
SOCKET_BACKLOG_BYTES = 64 * 1024

_HEADER_LINE = b"NATS/1.0\r\n"
# Set on a connection while its write is scheduled: an attribute, not a weak set of connections,
# as it is read at every publish (a weak set's look-up, add and discard are Python calls).
_SCHEDULED = "_aurora_write_scheduled"


async def publish(nc: NATS, subject: str, payload: bytes = b"", *, reply: str = "",
                  headers: dict[str, str] | None = None) -> None:
    """`nc.publish`, written at the end of this turn of the loop whenever nats-py need not wait."""
    if not publish_soon(nc, subject, payload, reply=reply, headers=headers):
        await nc.publish(subject, payload, reply=reply, headers=headers)


async def respond(request: Request, data: bytes) -> None:
    """A nats.micro request's reply (`request.respond`), written at the end of this turn."""
    msg = request._msg
    if not msg.reply:
        raise ValueError("no reply subject set")
    await publish(msg._client, msg.reply, data)


def publish_soon(nc: NATS, subject: str, payload: bytes = b"", *, reply: str = "",
                 headers: dict[str, str] | None = None) -> bool:
    """Queue the message to be written at the end of this turn of the loop; False (nothing
    queued) when nats-py's `publish` has to take it: not connected, its buffer full, a payload
    over the server's limit or a header it refuses (its `publish` says why)."""
    if (not nc.is_connected or nc.is_draining_pubs or not isinstance(nc._transport, TcpTransport)
            or len(payload) > nc.max_payload):
        return False
    if not nc._skip_subject_validation:
        _validate_subject(subject)
        if reply:
            _validate_subject(reply)
    if headers:
        block = _header_block(headers)
        if block is None:
            return False
        data = b"HPUB %s %s %d %d\r\n%s%s\r\n" % (subject.encode(), reply.encode(), len(block),
                                                 len(block) + len(payload), block, payload)
    else:
        data = b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), reply.encode(), len(payload), payload)
    if nc._max_pending_size > 0 and nc._pending_data_size + len(data) > nc._max_pending_size:
        return False  # nats-py waits for its flusher here: the publisher must wait too
    nc._pending.append(data)
    nc._pending_data_size += len(data)
    nc.stats["out_msgs"] += 1
    nc.stats["out_bytes"] += len(payload)
    if not getattr(nc, _SCHEDULED, False):
        setattr(nc, _SCHEDULED, True)
        asyncio.get_running_loop().call_soon(_flush, nc)
    return True


async def flush(nc: NATS, timeout: int = 10) -> None:
    """`nc.flush(timeout)` once everything sent before it is on its way, in order: when it returns,
    the server has every subscription and message that came before."""
    if nc._pending_data_size and nc.is_connected:
        if isinstance(nc._transport, TcpTransport):
            _write_pending(nc, backlog=None)  # if the socket is going away, nats-py's flush says how that ends
        else:  # another transport: nats-py's flusher writes the buffer, and is waited for
            await nc._flush_pending(force_flush=True)
    await nc.flush(timeout)


def _flush(nc: NATS) -> None:
    """What nats-py's flusher does for one turn, unless the socket is backed up: then the flusher."""
    setattr(nc, _SCHEDULED, False)
    if not nc._pending_data_size or not nc.is_connected:
        return  # written already, or kept for nats-py to send once it has reconnected
    if _write_pending(nc, backlog=SOCKET_BACKLOG_BYTES):
        return
    # The socket is backed up or going away: left to nats-py's flusher, which waits or says how that ends.
    flushes = nc._flush_queue
    if flushes is not None and flushes.empty():
        flushes.put_nowait(asyncio.get_running_loop().create_future())


def _write_pending(nc: NATS, *, backlog: int | None) -> bool:
    """Hand nats-py's pending buffer to the socket, unless more than `backlog` bytes (None: no
    limit) already wait there unsent; True once written."""
    transport = nc._transport
    writer = transport._io_writer if isinstance(transport, TcpTransport) else None
    if writer is None or (backlog is not None and writer.transport.get_write_buffer_size() > backlog):
        return False
    try:
        writer.writelines(nc._pending)
    except (OSError, RuntimeError):
        return False  # the socket is going away
    nc._pending, nc._pending_data_size = [], 0
    return True


def _header_block(headers: dict[str, str]) -> bytes | None:
    """The headers as nats-py writes them (None: a key it refuses, which its `publish` reports)."""
    parts = [_HEADER_LINE]
    for name, value in headers.items():
        key = _written_key(name)
        if key is None:
            return None
        if key:
            text = value.strip()
            if "\r" in text or "\n" in text:
                text = text.translate(_HEADER_VALUE_NEWLINES)
            parts += (key, text.encode(), b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


# Cached: a service sends the same few header names on every message, and each was stripped,
# matched against nats-py's key pattern and encoded every time.
@functools.lru_cache(maxsize=1024)
def _written_key(name: str) -> bytes | None:
    """`name` as nats-py writes it (`Name: `; b"" for a blank name, which it skips; None when it
    refuses it)."""
    key = name.strip()
    if not key:
        return b""
    return key.encode() + b": " if _HEADER_KEY_RE.fullmatch(key) else None
