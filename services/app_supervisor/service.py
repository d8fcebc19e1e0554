"""The app-supervisor's parts wired together: the supervisor of the apps and its admin endpoints.

`__main__` runs one `SupervisorService` per process. Its lifecycle is `shared.lifecycle`'s; at
stop the apps are stopped first and the admin endpoints last, so `status` still answers while
apps are being stopped.
"""

from __future__ import annotations

import asyncio
import contextlib

from nats.aio.client import Client as NATS

from services.app_supervisor.admin import serve_admin
from services.app_supervisor.supervisor import SupervisedApp, Supervisor, SupervisorOptions
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import DEFAULT_PLAN, StreamPlan
from shared.lifecycle import Lifecycle


class SupervisorService(Lifecycle[Supervisor]):
    def __init__(self, nc: NATS, subjects: Subjects, apps: list[SupervisedApp], options: SupervisorOptions, *,
                 plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the app-supervisor service")
        self._nc = nc
        self._plan = plan
        self._subjects = subjects
        self._apps = apps
        self._options = options

    async def _start(self, parts: contextlib.AsyncExitStack) -> Supervisor:
        # Its place on the stack is taken before the supervisor's: it is stopped after the apps.
        admin_stop = await parts.enter_async_context(contextlib.AsyncExitStack())
        supervisor = Supervisor(self._nc, self._subjects, self._apps, self._options, plan=self._plan)
        parts.push_async_callback(supervisor.stop)
        await supervisor.start()
        admin = await serve_admin(self._nc, self._subjects, supervisor)
        admin_stop.push_async_callback(admin.stop)
        return supervisor

    async def run(self, stop: asyncio.Event) -> None:
        self.require_started()
        await stop.wait()
