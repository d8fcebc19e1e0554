"""The console's NATS side for one signed-in person: their own connection (reopened when it
closes) and every read and decision the page needs, through the same admin API the CLI commands
use, on the person's own subjects (`….u.<name>`): the services read who asks from the subject,
so their checks and audit name this person.

Each read answers `Answer(value, error)`: a section whose service is down, or that the person's
roles may not read, says so on the page in one line while the others still show.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import NotFoundError

from aurora_cli.commands.apps import read_apps
from aurora_cli.commands.health import discover, service_rows
from aurora_cli.output import CliError, connected
from shared.config.settings import NatsSettings
from shared.contracts.people import may
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle
from shared.nats import write_through
from shared.nats.admin_service import AdminRequestError, admin_request

# Which service answers each admin area: named in the error when nobody does.
SERVED_BY = {"approvals": "mcp-gateway", "systems": "mcp-gateway", "gateway": "mcp-gateway",
             "agents": "mcp-gateway", "users": "mcp-gateway", "tasks": "runner", "bindings": "router",
             "router": "router"}
BACKLOG = 50  # events shown when the page opens, before the live ones
DISCOVERY_ROLE = "admin"  # the only role nats-server lets publish `$SRV.*` (aurora_cli/people.py)


@dataclass(frozen=True)
class Answer:
    value: Any = None
    error: str | None = None


class _Connection(Lifecycle[NATS]):
    """One NATS connection, opened like every CLI command's (`connected`: failing fast) and
    drained at its stop."""

    def __init__(self, nats: NatsSettings, *, name: str) -> None:
        super().__init__(f"the NATS connection {name}")
        self._nats = nats
        self._name = name

    async def _start(self, parts: AsyncExitStack) -> NATS:
        return await parts.enter_async_context(connected(self._nats, name=self._name))


class Link(Lifecycle[None]):
    """One person's NATS connection: opened at `start()` (sign-in; a refused connection fails the
    start), opened again by `client()` when it has closed (NATS restarted), closed at `stop()`
    (sign-out), after which `client()` is refused."""

    def __init__(self, nats: NatsSettings, *, name: str) -> None:
        super().__init__(f"the NATS link {name}")
        self._nats = nats
        self._name = name
        self._lock = asyncio.Lock()  # one reopening at a time
        self._current: _Connection | None = None

    async def _start(self, parts: AsyncExitStack) -> None:
        parts.push_async_callback(self._close)
        await self._reopen()

    async def client(self) -> NATS:
        async with self._lock:
            if not self.started:
                raise CliError("signed out: this session's NATS connection is closed")
            if self._current is None or self._current.require_started().is_closed:
                await self._reopen()
            assert self._current is not None  # `_reopen` set it, or raised
            return self._current.require_started()

    async def _reopen(self) -> None:
        await self._let_go()
        connection = _Connection(self._nats, name=self._name)
        await connection.start()  # CliError when NATS will not have it: nothing is left open
        self._current = connection

    async def _close(self) -> None:
        async with self._lock:  # after a reopening under way: what it opens is closed too
            await self._let_go()

    async def _let_go(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            with contextlib.suppress(NatsError, OSError):  # already gone: nothing left to drain
                await current.stop()


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
    """What the page reads and decides, as `subjects.person` (whose name is in every request's
    subject; `by` in a decision's body is only what the CLI sends too, the gateway ignores it)."""

    def __init__(self, link: Link, subjects: Subjects) -> None:
        if subjects.person is None:
            raise ValueError("the console acts only as a person: subjects.person must be set")
        self._link = link
        self._subjects = subjects
        self.person: str = subjects.person
        self.roles: tuple[str, ...] | None = None  # from the users registry at sign-in; None: not known

    async def _admin(self, area: str, verb: str, body: dict[str, Any], timeout: float = 5.0) -> Answer:
        subject = self._subjects.requested(self._subjects.admin(area, verb))
        try:
            nc = await self._link.client()
            return Answer(await admin_request(nc, self._subjects, area, verb, body, timeout=timeout))
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
        refusal = await self.refusal("approvals", verb)
        if refusal is not None:
            return Answer(error=refusal)
        body: dict[str, Any] = {"id": approval_id, "by": self.person}
        if note:
            body["note"] = note
        return await self._admin("approvals", verb, body)

    async def refusal(self, area: str, verb: str) -> str | None:
        """`not_permitted: …` when the person's roles in the users registry (read now, as the
        gateway reads them for every request) do not allow the operation. nats-server refuses
        such a request before any service sees it, and the page would only learn that nobody
        answered: this says why, in the gateway's words."""
        mine = await self.me()
        if mine.error is not None or not isinstance(mine.value, dict):
            return None  # the gateway checks again and answers for itself
        roles = [str(role) for role in mine.value.get("roles") or ()]
        if mine.value.get("state", "active") != "active":
            return f"not_permitted: {self.person} is disabled"
        if not may(roles, area, verb):
            return f"not_permitted: {self.person} ({', '.join(roles) or 'no role'}) may not {area}.{verb}"
        return None

    async def me(self) -> Answer:
        """The person's own entry in the users registry (their roles, as the gateway checks them)."""
        return await self._admin("users", "get", {"name": self.person})

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
            return Answer(await read_apps(await self._link.client(), self._subjects))
        except CliError as exc:
            return Answer(error=str(exc))
        except (NatsError, OSError, TimeoutError) as exc:
            return Answer(error=f"reading the apps bucket failed: {type(exc).__name__}: {exc}")

    async def services(self, now: Any) -> Answer:
        if self.roles is not None and DISCOVERY_ROLE not in self.roles:
            return Answer(error=f"asking every service for its stats ($SRV.STATS) is for the {DISCOVERY_ROLE} role; "
                                f"{self.person} has {', '.join(self.roles) or 'no role'}")
        try:
            stats = await discover(await self._link.client(), "STATS")
        except CliError as exc:
            return Answer(error=str(exc))
        except (NatsError, OSError, TimeoutError) as exc:
            return Answer(error=f"service discovery ($SRV.STATS) failed: {type(exc).__name__}: {exc}")
        return Answer(service_rows(stats, now=now))

    async def events(self) -> AsyncIterator[tuple[str, bytes] | None]:
        """None once subscribed (from then on no new event is missed), then (subject, data) of the
        last BACKLOG events and of each new one. A person may not create consumers (their
        JetStream is read-only), so the live events come from a plain subscription to the
        events' subjects and the backlog from the stream by sequence; an event in both (sent
        while the backlog was read) is shown once, by its message id."""
        subjects = self._subjects
        stream = subjects.stream("EVENTS")
        nc = await self._link.client()
        sub = await nc.subscribe(subjects.events_all, pending_msgs_limit=10_000)
        try:
            await write_through.flush(nc)  # the subscription is on the server before the backlog is read
            js = nc.jetstream()
            try:
                last = (await js.stream_info(stream)).state.last_seq
            except NotFoundError as exc:
                raise CliError(f"stream {stream} does not exist yet: start the event-bridge first") from exc
            yield None
            shown: set[str] = set()
            for seq in range(max(1, last - BACKLOG + 1), last + 1):
                try:
                    stored = await js.get_msg(stream, seq)
                except NotFoundError:  # removed by the stream's limits since
                    continue
                if seen := message_id(stored.data or b""):
                    shown.add(seen)
                yield str(stored.subject), stored.data or b""
            async for msg in sub.messages:
                if message_id(msg.data) in shown:
                    continue
                yield msg.subject, msg.data
        finally:
            with contextlib.suppress(NatsError, OSError):
                await sub.unsubscribe()


def message_id(data: bytes) -> str:
    """An event's `header.message_id` ("" when it has none)."""
    try:
        return str(json.loads(data)["header"]["message_id"])
    except (ValueError, KeyError, TypeError):
        return ""
