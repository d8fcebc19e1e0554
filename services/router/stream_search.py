"""Finding one message in a stream by what it holds, newest first, with bounded work.

JetStream looks messages up by sequence or by subject, not by content: a route trace the router
no longer stores (a platform event no binding took, computed_traces.py; a dispatched event's,
kept in its run record, recorded_traces.py) is found by reading the stream back. The stream is
read in windows of `WINDOW` sequences, `PARALLEL` windows at once, the newest windows first;
each window is a chain of message gets (`STREAM.MSG.GET` with `next`, filtered by subject).
Every read counts against `budget`, so an id that is not there costs at most `budget` reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

WINDOW = 500  # stream sequences one chain of reads goes forward through
PARALLEL = 16  # windows read at once (the reads of one window follow each other)
Match = Callable[[RawStreamMsg], bool]


async def newest_match(js: JetStreamContext, stream: str, subject: str, match: Match, *,
                       budget: int) -> RawStreamMsg | None:
    """A message on `subject` that `match` accepts, from the newest window holding one, or None."""
    state = (await js.stream_info(stream)).state
    first, end = max(state.first_seq, 1), state.last_seq
    left = [budget]
    while end >= first and left[0] > 0:
        windows = []
        for _ in range(PARALLEL):
            if end < first:
                break
            windows.append((max(first, end - WINDOW + 1), end))
            end = windows[-1][0] - 1
        found = await asyncio.gather(*(_in_window(js, stream, subject, match, low, high, left)
                                       for low, high in windows))
        for msg in found:  # the newest window first
            if msg is not None:
                return msg
    return None


async def _in_window(js: JetStreamContext, stream: str, subject: str, match: Match, low: int, high: int,
                     left: list[int]) -> RawStreamMsg | None:
    """A match in [low, high] (the first read: an id is stored once), or None."""
    seq = low
    while seq <= high and left[0] > 0:
        left[0] -= 1  # every read counts, the last of a window too: the bound is on the work
        try:
            msg = await js.get_msg(stream, seq=seq, subject=subject, next=True)
        except NotFoundError:
            break
        if msg.seq is None or msg.seq > high:
            break
        if match(msg):
            return msg
        seq = msg.seq + 1
    return None
