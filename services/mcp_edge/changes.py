"""`notifications/tools/list_changed` for the sessions listening on this instance.

An agent's available set changes when a tool is published, retired or edited, when the agent
is edited, and when a tool stops or starts being executable (its app down, its circuit open).
The first two show in the tools and agents buckets, which this instance watches; the last only
in the gateway's answer, so the set is also asked for again every `refresh_seconds`. Each
listening agent's set is compared with the one its listeners last saw; a difference is pushed
to every listener of that agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Awaitable, Callable

from services.mcp_edge.gate import EdgeTool
from shared.lifecycle import Lifecycle, cancel_task
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.changes")
ListTools = Callable[[str], Awaitable[list[EdgeTool] | None]]


def fingerprint(tools: list[EdgeTool] | None) -> str:
    """What a client sees of the set: names, descriptions, schemas (order does not matter)."""
    shown = sorted((t.name, t.description, json.dumps(t.input_schema, sort_keys=True)) for t in tools or [])
    return hashlib.sha256(json.dumps(shown).encode()).hexdigest()


class ListChanges(Lifecycle[None]):
    def __init__(self, list_tools: ListTools, *, refresh_seconds: float, settle_seconds: float = 0.3) -> None:
        super().__init__("the tool-list changes")
        self._list_tools = list_tools
        self._refresh = refresh_seconds
        self._settle = settle_seconds  # a change in KV reaches the gateway's mirror a moment later
        self._listeners: dict[str, set[asyncio.Queue[str]]] = {}
        self._seen: dict[str, str] = {}
        self._poke = asyncio.Event()

    def changed(self) -> None:
        """A bucket the set depends on changed (called by the KV watchers)."""
        self._poke.set()

    async def listen(self, agent: str) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue()
        if agent not in self._seen:
            with contextlib.suppress(Exception):  # unknown now: the first refresh sets it
                self._seen[agent] = fingerprint(await self._list_tools(agent))
        self._listeners.setdefault(agent, set()).add(queue)
        return queue

    def leave(self, agent: str, queue: asyncio.Queue[str]) -> None:
        listeners = self._listeners.get(agent)
        if listeners is not None:
            listeners.discard(queue)
            if not listeners:
                self._listeners.pop(agent, None)
                self._seen.pop(agent, None)

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        parts.push_async_callback(cancel_task, asyncio.create_task(self._run(), name="edge-list-changes"))

    async def refresh(self) -> None:
        for agent in list(self._listeners):
            try:
                now = fingerprint(await self._list_tools(agent))
            except Exception as exc:  # the gateway away: nothing known changed; asked again later
                log.info("available set not readable", agent=agent, error=str(exc))
                continue
            before = self._seen.get(agent)
            self._seen[agent] = now
            if before is not None and before != now:
                log.info("tools list changed", agent=agent, listeners=len(self._listeners.get(agent, ())))
                for queue in self._listeners.get(agent, ()):
                    queue.put_nowait("notifications/tools/list_changed")

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), self._refresh)
                await asyncio.sleep(self._settle)
            self._poke.clear()
            await self.refresh()
