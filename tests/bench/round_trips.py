"""NATS request/reply round trips between two processes, for bench-gateway's floor.

Two measures of the same thing, a request of the gateway call's size answered with its own bytes
(the responder on the event loop the services run on, `BENCH_EVENT_LOOP`):
- with nats-py on both ends, as every Aurora service talks;
- with the protocol written directly on a bare asyncio socket on both ends: no client library at
  all, so what is left is the kernel, nats-server and one Python event loop on each side. No NATS
  client written in Python can go below it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.client import Client as NATS

Call = Callable[[], Awaitable[None]]
SUBJECT = "bench.round_trip"
RAW_SUBJECT = "bench.raw_round_trip"

RESPONDER = """
import asyncio, sys
import nats

async def main() -> None:
    nc = await nats.connect(sys.argv[1])

    async def answer(msg) -> None:
        await msg.respond(msg.data)

    await nc.subscribe(sys.argv[2], cb=answer)
    await nc.flush()
    print("ready", flush=True)
    await asyncio.Event().wait()

if sys.argv[3] == "uvloop":  # the loop the services run on, so the floor is theirs
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
"""

# MSG <subject> <sid> <reply> <size>: answered as PUB <reply> <size> with the same bytes.
RAW_RESPONDER = r"""
import asyncio, sys

async def main(url: str, subject: str) -> None:
    host, port = url.removeprefix("nats://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    await reader.readline()  # INFO
    writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB ' + subject.encode() + b' 1\r\nPING\r\n')
    while await reader.readline() != b"PONG\r\n":
        pass
    print("ready", flush=True)
    while line := await reader.readline():
        if line.startswith(b"MSG "):
            _, _, _, reply, size = line.split()
            writer.write(b"PUB " + reply + b" " + size + b"\r\n" + await reader.readexactly(int(size) + 2))
        elif line.startswith(b"PING"):
            writer.write(b"PONG\r\n")

if sys.argv[3] == "uvloop":
    import uvloop
    uvloop.run(main(sys.argv[1], sys.argv[2]))
else:
    asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def request_payload(arguments: dict[str, Any]) -> bytes:
    return json.dumps({"payload": {"tool": "bench.echo.echo", "arguments": arguments, "context": {}}}).encode()


def round_trip_call(nc: NATS, payload: bytes) -> Call:
    async def call() -> None:
        reply = await nc.request(SUBJECT, payload, timeout=30)
        assert reply.data == payload

    return call


class RawRequester:
    """A request/reply client that is nothing but the protocol on a socket (one request at a time)."""

    INBOX = b"_INBOX.bench_raw"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def connect(cls, url: str) -> RawRequester:
        host, port = url.removeprefix("nats://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        await reader.readline()  # INFO
        writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB ' + cls.INBOX + b" 1\r\nPING\r\n")
        while await reader.readline() != b"PONG\r\n":
            pass
        return cls(reader, writer)

    async def request(self, subject: str, payload: bytes, timeout: float = 30) -> bytes:
        self._writer.write(b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), self.INBOX, len(payload), payload))
        return await asyncio.wait_for(self._answer(), timeout)

    async def _answer(self) -> bytes:
        while line := await self._reader.readline():
            if line.startswith(b"MSG "):
                size = int(line.split()[-1])
                return (await self._reader.readexactly(size + 2))[:-2]
            if line.startswith(b"PING"):
                self._writer.write(b"PONG\r\n")
        raise ConnectionError("nats-server closed the connection")

    def close(self) -> None:
        self._writer.close()


def raw_round_trip_call(requester: RawRequester, payload: bytes) -> Call:
    async def call() -> None:
        assert await requester.request(RAW_SUBJECT, payload) == payload

    return call
