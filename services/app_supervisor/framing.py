"""Newline-delimited JSON-RPC framing between an app's stdio and NATS messages.

One stdout line is one NATS message, bytes untouched except the line's final `\\n`. A line
longer than the reader's limit is skipped (and reported as `Oversized`) instead of being
buffered without bound; the next line is read normally.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

NEWLINE = b"\n"


@dataclass(frozen=True)
class Oversized:
    """A line of `size` bytes (without the newline) that was longer than the limit, dropped."""

    size: int


async def read_lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes | Oversized]:
    """Yield each line without its `\\n` (a last line without one too), until EOF.

    Lines up to the reader's limit are yielded as bytes; longer ones are consumed and
    yielded as `Oversized`. Empty lines are skipped: they carry no message.
    """
    while True:
        try:
            line = await reader.readuntil(NEWLINE)
        except asyncio.IncompleteReadError as exc:  # EOF
            if exc.partial:
                yield exc.partial
            return
        except asyncio.LimitOverrunError as exc:
            size, ended = await _discard_line(reader, exc.consumed)
            yield Oversized(size)
            if ended:
                return
            continue
        if len(line) > 1:
            yield line[:-1]


async def _discard_line(reader: asyncio.StreamReader, consumed: int) -> tuple[int, bool]:
    """Drop the rest of an over-long line; returns (its size, whether EOF came first)."""
    size = 0
    while True:
        await reader.readexactly(consumed)
        size += consumed
        try:
            rest = await reader.readuntil(NEWLINE)
        except asyncio.LimitOverrunError as exc:
            consumed = exc.consumed
            continue
        except asyncio.IncompleteReadError as exc:
            return size + len(exc.partial), True
        return size + len(rest) - 1, False


def to_stdin_line(data: bytes) -> bytes | None:
    """One NATS message → one stdin line (`data` + `\\n`).

    A trailing newline a client sent is not doubled. A message with newlines inside (e.g.
    pretty-printed JSON) would break the app's framing, so it is re-serialized compactly if it
    is JSON, and refused (`None`) otherwise.
    """
    body = data.rstrip(b"\r\n")
    if not body.strip():
        return None
    if NEWLINE in body:
        try:
            value = json.loads(body)
        except ValueError:
            return None
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return body + NEWLINE
