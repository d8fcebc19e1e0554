"""Health probes for HTTP systems: one request to the probe path, and a loop that runs it per system.

Any HTTP answer below 500 means the system is there (a 401 or 404 still proves it answers); a
transport error, a timeout or a 5xx is a failure with the reason. The loop only reports; the
caller decides what a result means for the system's circuit and health.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable

import httpx

from services.mcp_gateway.systems.http_errors import failure_detail
from shared.contracts.system import ProbeConfig, System
from shared.lifecycle import Lifecycle, cancel_task

log = logging.getLogger(__name__)

ProbeCallback = Callable[[System, bool, str | None], Awaitable[None]]
ProbeFunction = Callable[[httpx.AsyncClient, System], Awaitable[tuple[bool, str | None]]]


async def probe(client: httpx.AsyncClient, system: System) -> tuple[bool, str | None]:
    """(alive, reason when not). The answer's body is never read."""
    config = system.probe or ProbeConfig()
    if not system.base_url:
        return False, f"system {system.name} has no base_url"
    url = system.base_url.rstrip("/") + "/" + config.path.lstrip("/")
    try:
        async with asyncio.timeout(config.timeout_seconds), client.stream(
                config.method, url, timeout=config.timeout_seconds) as response:
            status, reason = response.status_code, response.reason_phrase
    except (TimeoutError, httpx.TimeoutException):
        return False, f"no answer from {url} within {config.timeout_seconds:g}s"
    except httpx.HTTPError as exc:
        return False, f"{type(exc).__name__} for {url}: {failure_detail(exc)}"
    if status >= 500:
        return False, f"{url} answered HTTP {status} {reason}".rstrip()
    return True, None


class Prober(Lifecycle[None]):
    """Probes every enabled HTTP system every `probe.interval_seconds` (default 15 s) and reports
    each result through `on_result`. `systems` is read on every tick, so added, removed and
    disabled systems are picked up without a restart. Its lifecycle is `shared.lifecycle`'s."""

    def __init__(self, client: httpx.AsyncClient, systems: Callable[[], Iterable[System]],
                 on_result: ProbeCallback, *, clock: Callable[[], float] = time.monotonic,
                 tick_seconds: float = 0.25, probe_fn: ProbeFunction = probe) -> None:
        super().__init__("the HTTP systems prober")
        self._client = client
        self._systems = systems
        self._on_result = on_result
        self._clock = clock
        self._tick = tick_seconds
        self._probe = probe_fn
        self._next_due: dict[str, float] = {}
        self._in_flight: dict[str, asyncio.Task[None]] = {}

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        parts.push_async_callback(self._cancel_probes)  # after the loop below: none is launched then
        parts.push_async_callback(cancel_task, asyncio.create_task(self._loop(), name="mcp-gateway:http-prober"))

    async def _cancel_probes(self) -> None:
        tasks = list(self._in_flight.values())
        self._in_flight.clear()
        for pending in tasks:
            await cancel_task(pending)

    def due(self) -> list[System]:
        """The probe-able systems whose next probe is due now and not already running."""
        now = self._clock()
        current = [s for s in self._systems() if s.type == "http" and s.enabled and s.base_url]
        names = {s.name for s in current}
        for gone in set(self._next_due) - names:
            del self._next_due[gone]
        return [s for s in current if self._next_due.get(s.name, now) <= now and s.name not in self._in_flight]

    def launch(self, system: System) -> asyncio.Task[None]:
        interval = (system.probe or ProbeConfig()).interval_seconds
        self._next_due[system.name] = self._clock() + interval
        task = asyncio.create_task(self._probe_one(system), name=f"mcp-gateway:probe:{system.name}")
        self._in_flight[system.name] = task
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[None]) -> None:
        for name, running in list(self._in_flight.items()):
            if running is task:
                del self._in_flight[name]

    async def _loop(self) -> None:
        while True:
            for system in self.due():
                self.launch(system)
            await asyncio.sleep(self._tick)

    async def _probe_one(self, system: System) -> None:
        try:
            alive, reason = await self._probe(self._client, system)
        except Exception as exc:  # the probe itself broke: report it as a failed probe, keep going
            alive, reason = False, f"probe error: {type(exc).__name__}: {exc}"
        try:
            await self._on_result(system, alive, reason)
        except Exception:  # a failing consumer must not stop probing
            log.exception("probe result handler failed system=%s alive=%s", system.name, alive)
