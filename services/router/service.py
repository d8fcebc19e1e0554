"""The router's parts wired together: stores, catalog, routing loop and admin endpoints, and the
dead-letter advisory listener (shared/jetstream/advisories.py: what a stage could not dead-letter itself).

`__main__` runs one `RouterService` per process; tests run it in-process against a real NATS.
Its lifecycle is `shared.lifecycle`'s: the stop order is the start order reversed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

from nats.aio.client import Client as NATS

from services.router.admin import RouterAdmin
from services.router.catalog import RouteCatalog
from services.router.config import RouterSettings
from services.router.replay import Replayer
from services.router.router import Router, RouterStats
from services.router.stores import open_stores
from shared.contracts.subjects import Subjects
from shared.jetstream.advisories import AdvisoryListener
from shared.jetstream.streams import DEFAULT_PLAN, StreamPlan
from shared.lifecycle import Lifecycle
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.observability.logs import get_logger
from shared.people import open_registry
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_of

VERSION = "0.1.0"
log = get_logger("aurora.router")


class RouterService(Lifecycle[Router]):
    def __init__(self, nc: NATS, subjects: Subjects, settings: RouterSettings,
                 capabilities: Mapping[str, tuple[str, ...]] | None = None, *,
                 plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the router service")
        self._nc = nc
        self._plan = plan
        self._capabilities = capabilities
        self._subjects = subjects
        self._settings = settings

    @property
    def stats(self) -> RouterStats:
        return self.require_started().stats

    async def _start(self, parts: contextlib.AsyncExitStack) -> Router:
        nc, subjects, options = self._nc, self._subjects, self._settings
        stores = await open_stores(nc.jetstream(), subjects, self._plan)
        catalog = RouteCatalog(stores.bindings, stores.agents, stores.pipelines)
        parts.push_async_callback(catalog.stop)
        await catalog.start()
        # Before the router pulls: an advisory its own deliveries cause must find a listener.
        advisories = AdvisoryListener(nc, subjects)
        parts.push_async_callback(advisories.stop)
        await advisories.start()
        router = Router(nc, subjects, catalog, stores, options.router, capabilities=self._capabilities)
        parts.push_async_callback(router.stop)
        await router.start()
        admin = RouterAdmin(stores, router.stats, catalog.summary, instance=options.router.instance)
        replayer = Replayer(nc, subjects, stores, options, admin.saved_routing, capabilities=self._capabilities)
        # A person's request is checked again against the users registry (shared/people.py).
        authorize = (await open_registry(nc.jetstream(), subjects, self._plan)).refusal
        resources = [ResourceAdmin(kind_of("Binding"), stores.bindings),
                     ResourceAdmin(kind_of("Pipeline"), stores.pipelines)]
        if options.serve_agents:
            resources.append(ResourceAdmin(kind_of("Agent"), stores.agents))
        areas = {"router": {**admin.endpoints(), "replay": replayer.replay},
                 **{r.kind.area: r.endpoints() for r in resources}}
        service = await start_admin_service(
            nc, subjects, name="aurora-router", version=VERSION, areas=areas, authorize=authorize,
            description="routes each event to one pipeline or agent; serves "
                        + ", ".join(f"{r.kind.kind} resources" for r in resources),
        )
        parts.push_async_callback(service.stop)
        await write_through.flush(nc)  # "ready" means the admin endpoints' subscriptions reached the server
        log.info("ready", instance=options.router.instance, catalog=catalog.counts())
        return router

    async def run(self, stop: asyncio.Event) -> None:
        await self.require_started().run(stop)
