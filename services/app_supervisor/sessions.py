"""What the gateway said about each app's MCP session (`…sess`), for the ordered shutdown.

The supervisor stops an app's process only after the gateway closed its session: it waits
while the last `SessionEvent` it saw for the app is `connected`. If no gateway ever announced
a session for the app (or the last word was `closed` / `unavailable`), there is nothing to
wait for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.contracts.mcp_relay import SessionState, decode_session_event
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle, unsubscribe
from shared.nats.request_guard import refusing_deliveries
from shared.observability.logs import get_logger

log = get_logger("aurora.app_supervisor.sessions")

AppKey = tuple[str, str]  # (app id, instance)


class SessionBook:
    """Pure state: the last session state per app, and waiting for `closed`."""

    def __init__(self) -> None:
        self._state: dict[AppKey, SessionState] = {}
        self._changed: dict[AppKey, asyncio.Event] = {}

    def record(self, key: AppKey, state: SessionState) -> None:
        self._state[key] = state
        self._changed.setdefault(key, asyncio.Event()).set()

    def state(self, key: AppKey) -> SessionState | None:
        return self._state.get(key)

    def must_wait(self, key: AppKey) -> bool:
        """A gateway announced a session for this app and has not closed it."""
        return self._state.get(key) == "connected"

    async def wait_closed(self, key: AppKey, timeout: float) -> bool:
        """True once the session is no longer connected, False after `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.must_wait(key):
            event = self._changed.setdefault(key, asyncio.Event())
            event.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)
        return True


class SessionWatch(Lifecycle[None]):
    """Subscribes to `…sess` of every supervised app and feeds a `SessionBook`."""

    def __init__(self, nc: NATS, subjects: Subjects, apps: list[AppKey]) -> None:
        super().__init__("the session watch")
        self._nc = nc
        self._subjects = subjects
        self._apps = apps
        self.book = SessionBook()

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        for app, instance in self._apps:
            subject = self._subjects.mcp(app, instance, "sess")
            handler = refusing_deliveries(subject, self._make_handler((app, instance)))
            parts.push_async_callback(unsubscribe, await self._nc.subscribe(subject, cb=handler))

    def _make_handler(self, key: AppKey) -> Callable[[Msg], Awaitable[None]]:
        async def handle(msg: Msg) -> None:
            try:
                event = decode_session_event(msg.data)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                log.warning("invalid session event ignored", subject=msg.subject, error=str(exc))
                return
            if (event.app, event.instance) != key:
                log.warning("session event for another app ignored", subject=msg.subject,
                            app=event.app, instance=event.instance)
                return
            log.info("gateway session " + event.state, app=event.app, instance=event.instance,
                     reason=event.reason)
            self.book.record(key, event.state)

        return handle
