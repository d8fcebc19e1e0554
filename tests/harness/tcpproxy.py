"""A process-level TCP proxy that can cut the network: what stands between one NATS node and
everything else in the network-cut scenario.

`cut()` drops every open connection at once and from then on accepts new ones but forwards
nothing (a peer's connect seems to work and then hears nothing, as across a dead link);
`lose_next_answer()` closes the next connection on which the target answers, its answer lost
(the request reached the target: a connection that failed after the request went out);
`blackhole()` keeps the connections open and loses every byte (both ways, or one), as a node
that dies while holding messages does (neither side hears of it); `heal()` resets those and forwards new
ones again; `hold_handshake_ping(seconds)` keeps each new connection's first PING to the server
that long (as a server slow to check a CONNECT answers late: a password's bcrypt hash on a loaded
machine). What passed each way and what was lost is kept (`to_client`, `to_server`, `lost`,
the last MiB of each), so a test can wait for a message to have gone through or been lost.

It runs its own event loop in a thread, so the scenario's loop and blocking calls do not slow it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from aurora_cli.localnats import free_port

_PING = b"PING\r\n"


class TcpProxy:
    def __init__(self, target_port: int, *, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.target_port = target_port
        self._cut = False
        self._losing: set[str] = set()  # the directions whose bytes are lost: to_client, to_server
        self.to_client = bytearray()  # from the target, passed to whoever connected
        self.to_server = bytearray()
        self.lost = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.held = 0  # connections taken while cut (held open, never answered)
        self._ping_held = 0.0  # seconds a new connection's first PING to the server waits
        self._answers_to_lose = 0  # answers from the target whose connection is closed instead

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def is_cut(self) -> bool:
        return self._cut

    def start(self) -> TcpProxy:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def serve() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._accept, self.host, self.port))
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name=f"tcpproxy-{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(5.0):
            raise RuntimeError(f"the proxy on port {self.port} did not start")
        return self

    def cut(self) -> None:
        """Drop every open connection; new ones are accepted and then hear nothing."""
        self._cut = True
        self._call(self._close_all)

    def blackhole(self, *, to_server: bool = True, to_client: bool = True) -> None:
        """From now on every byte on the open connections is lost (in the directions given), and
        nobody is told."""
        self._losing = {name for name, lose in (("to_server", to_server), ("to_client", to_client)) if lose}

    def lose_next_answer(self) -> None:
        """The next answer the target sends, on any connection, is lost and its connection closed
        (reset) both ways; the connections after it are forwarded as before."""
        self._answers_to_lose += 1

    def hold_handshake_ping(self, seconds: float) -> None:
        """From now on, a new connection's first PING to the server (the end of a client's
        handshake, after its CONNECT) reaches it only after `seconds`: nats-server pings a new
        client two seconds after it connected, so with more than that its PING comes before the
        PONG the client waits for, as when checking the CONNECT takes the server that long."""
        self._ping_held = seconds

    def heal(self) -> None:
        """Forward again. The connections made during the cut heard nothing and would wait for
        their own timeouts; they are reset, so that their peers connect again at once."""
        self._cut = False
        self._losing = set()
        self._call(self._close_all)

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            self._close_all()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5.0)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5.0)
        loop.close()

    def _call(self, fn: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(fn)  # type: ignore[arg-type]

    def _close_all(self) -> None:
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                writer.transport.abort()  # a reset, not a goodbye
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self._cut:
            self.held += 1
            return  # held open, never answered, until healed connections replace it
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()
            self._writers.discard(writer)
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer, "to_server"), self._pipe(up_reader, writer, "to_client"))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, direction: str) -> None:
        passed = self.to_server if direction == "to_server" else self.to_client
        hold = self._ping_held if direction == "to_server" else 0.0
        try:
            while not reader.at_eof():
                data = await reader.read(65536)
                if not data or self._cut:
                    break
                if hold and _PING in data:
                    before, data = data.split(_PING, 1)
                    _keep(passed, before)
                    writer.write(before)
                    await asyncio.sleep(hold)
                    data, hold = _PING + data, 0.0
                if direction == "to_client" and self._answers_to_lose:
                    self._answers_to_lose -= 1
                    _keep(self.lost, data)
                    break  # the finally resets the client's side; its end then closes the target's
                if direction in self._losing:
                    _keep(self.lost, data)
                    continue
                _keep(passed, data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.transport.abort()


def _keep(record: bytearray, data: bytes, limit: int = 1024 * 1024) -> None:
    record += data
    if len(record) > limit:
        del record[: len(record) - limit]
