"""Newline-delimited JSON-RPC framing between an app's stdio and NATS messages.

One stdout line is one NATS message, bytes untouched except the line's final `\\n`. A line
longer than the reader's limit is skipped (and reported as `Oversized`) instead of being
buffered without bound; the next line is read normally.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec

NEWLINE = b"\n"


@dataclass(frozen=True)
class Oversized:
    """A line of `size` bytes (without the newline) that was longer than the limit, dropped."""

    size: int


class LineSplitter:
    """The lines of a byte stream handed over in pieces (an app's stdout or stderr as the pipe
    delivers it): each without its `\\n`, empty ones skipped, one longer than `limit` dropped and
    reported as `Oversized` (never buffered beyond `limit`, and the next line read normally), a
    last line without a newline given by `end`."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._partial = bytearray()
        self._skipped: int | None = None  # the size so far of an over-long line being dropped

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        items: list[bytes | Oversized] = []
        start = 0
        while (end := data.find(NEWLINE, start)) >= 0:
            piece = data[start:end]
            start = end + 1
            if self._skipped is not None:
                items.append(Oversized(self._skipped + len(piece)))
                self._skipped = None
                continue
            if self._partial:
                self._partial += piece
                piece = bytes(self._partial)
                self._partial.clear()
            if len(piece) > self._limit:
                items.append(Oversized(len(piece)))
            elif piece:
                items.append(piece)
        self._keep(data[start:])
        return items

    def end(self) -> list[bytes | Oversized]:
        """What is left once the stream ended: a last line without its newline, if any."""
        skipped, self._skipped = self._skipped, None
        if skipped is not None:
            return [Oversized(skipped)]
        rest = bytes(self._partial)
        self._partial.clear()
        return [rest] if rest else []

    def _keep(self, rest: bytes) -> None:
        if not rest:
            return
        if self._skipped is not None:
            self._skipped += len(rest)
        elif len(self._partial) + len(rest) > self._limit:
            self._skipped = len(self._partial) + len(rest)
            self._partial.clear()
        else:
            self._partial += rest


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


class Head(msgspec.Struct):
    """What kind of JSON-RPC message a line is: a response has an `id` and no `method`, a
    notification a `method` and no `id`, a request both."""

    id: str | int | None = None
    method: str | None = None


_decode_head = msgspec.json.Decoder(Head).decode


def head_of(line: bytes) -> Head | None:
    """The line's `id` and `method` (the rest is skipped, not decoded); None: not a JSON object."""
    try:
        return _decode_head(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
