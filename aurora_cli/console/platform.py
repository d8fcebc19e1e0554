"""The console's NATS side: one operator connection (reopened when it closes) and every read and
decision the page needs, through the same admin API and buckets the CLI commands use.

Each read answers `Answer(value, error)`: a section whose service is down says so on the page
(in one line naming what does not answer) while the others still show.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from aurora_cli.commands.apps import read_apps
from aurora_cli.commands.health import discover, service_rows
from aurora_cli.output import CliError, connected
from shared.admin import AdminRequestError, admin_request
from shared.settings import Settings

# Which service answers each admin area: named in the error when nobody does.
SERVED_BY = {"approvals": "mcp-gateway", "systems": "mcp-gateway", "gateway": "mcp-gateway",
             "agents": "mcp-gateway", "tasks": "runner", "bindings": "router", "router": "router"}
BACKLOG = 50  # events shown when the page opens, before the live ones


@dataclass(frozen=True)
class Answer:
    value: Any = None
    error: str | None = None


class Link:
    """The console's one NATS connection, opened like every CLI command's (`connected`: the
    operator's credentials, failing fast) and opened again when it has closed (NATS restarted)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = asyncio.Lock()
        self._stack: AsyncExitStack | None = None
        self._nc: NATS | None = None

    async def client(self) -> NATS:
        async with self._lock:
            if self._nc is None or self._nc.is_closed:
                await self._close()
                stack = AsyncExitStack()
                self._nc = await stack.enter_async_context(connected(self._settings.nats))
                self._stack = stack
            return self._nc

    async def _close(self) -> None:
        stack, self._stack, self._nc = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(NatsError, OSError):  # already gone: nothing left to drain
                await stack.aclose()

    async def close(self) -> None:
        async with self._lock:
            await self._close()


def admin_failure(exc: BaseException, area: str, verb: str, subject: str) -> str:
    """One line naming what went wrong and who should have answered."""
    who = SERVED_BY.get(area, "service")
    if isinstance(exc, AdminRequestError):
        return f"{exc.code}: {exc}"
    if isinstance(exc, NoRespondersError):
        return f"no {who} is running (nobody answers {subject})"
    if isinstance(exc, NatsTimeoutError | TimeoutError):
        return f"the {who} did not answer {subject} in time"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Platform:
    """What the page reads and decides. `operator` is recorded as `by` on every decision."""

    def __init__(self, link: Link, settings: Settings, *, operator: str) -> None:
        self._link = link
        self._settings = settings
        self.operator = operator

    async def _admin(self, area: str, verb: str, body: dict[str, Any], timeout: float = 5.0) -> Answer:
        subject = self._settings.subjects.admin(area, verb)
        try:
            nc = await self._link.client()
            return Answer(await admin_request(nc, self._settings.subjects, area, verb, body, timeout=timeout))
        except CliError as exc:  # cannot connect to NATS
            return Answer(error=str(exc))
        except (AdminRequestError, NatsError, OSError, TimeoutError) as exc:
            return Answer(error=admin_failure(exc, area, verb, subject))

    async def approvals(self) -> Answer:
        return await self._admin("approvals", "list", {"state": "pending"})

    async def decide(self, verb: str, approval_id: str, note: str | None) -> Answer:
        """`grant` or `deny`, exactly as `aurora approvals grant|deny` sends it."""
        if verb not in ("grant", "deny"):
            raise ValueError(f"unknown decision {verb!r}")
        body: dict[str, Any] = {"id": approval_id, "by": self.operator}
        if note:
            body["note"] = note
        return await self._admin("approvals", verb, body)

    async def tasks(self, limit: int = 25) -> Answer:
        return await self._admin("tasks", "list", {"limit": limit}, timeout=10.0)

    async def task(self, task_id: str) -> Answer:
        return await self._admin("tasks", "get", {"id": task_id}, timeout=10.0)

    async def bindings(self) -> Answer:
        found = await self._admin("bindings", "get", {})
        return found if found.error else Answer(list(found.value.get("items") or []))

    async def dry_run(self, event: dict[str, Any]) -> Answer:
        return await self._admin("router", "dry_run", {"event": event})

    async def tools(self) -> Answer:
        return await self._admin("gateway", "tools", {"app": None})

    async def systems(self) -> Answer:
        return await self._admin("systems", "status", {})

    async def apps(self) -> Answer:
        try:
            return Answer(await read_apps(await self._link.client(), self._settings.subjects))
        except CliError as exc:
            return Answer(error=str(exc))
        except (NatsError, OSError, TimeoutError) as exc:
            return Answer(error=f"reading the apps bucket failed: {type(exc).__name__}: {exc}")

    async def services(self, now: Any) -> Answer:
        try:
            stats = await discover(await self._link.client(), "STATS")
        except CliError as exc:
            return Answer(error=str(exc))
        except (NatsError, OSError, TimeoutError) as exc:
            return Answer(error=f"service discovery ($SRV.STATS) failed: {type(exc).__name__}: {exc}")
        return Answer(service_rows(stats, now=now))

    async def events(self) -> AsyncIterator[tuple[str, bytes] | None]:
        """None once the consumer exists (from then on no new event is missed), then (subject, data)
        of the last BACKLOG events and of each new one. An ordered consumer: the client repairs
        gaps, and nothing is left behind on the server."""
        subjects = self._settings.subjects
        stream = subjects.stream("EVENTS")
        js = (await self._link.client()).jetstream()
        try:
            last = (await js.stream_info(stream)).state.last_seq
        except NotFoundError as exc:
            raise CliError(f"stream {stream} does not exist yet: start the event-bridge first") from exc
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                                opt_start_seq=max(1, last - BACKLOG + 1)) if last else None
        sub = await js.subscribe(subjects.events_all, stream=stream, ordered_consumer=True, config=config,
                                 deliver_policy=None if last else DeliverPolicy.NEW)
        try:
            yield None
            async for msg in sub.messages:
                yield msg.subject, msg.data
        finally:
            await sub.unsubscribe()
