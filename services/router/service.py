"""The router's parts wired together: stores, catalog, routing loop and admin endpoints, and the
dead-letter advisory listener (shared/advisories.py: what a stage could not dead-letter itself).

`__main__` runs one `RouterService` per process; tests run it in-process against a real NATS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from nats.aio.client import Client as NATS
from nats.micro.service import Service

from services.router.admin import RouterAdmin
from services.router.catalog import Catalog
from services.router.config import RouterSettings
from services.router.replay import Replayer
from services.router.router import Router, RouterStats
from services.router.stores import RouterStores, open_stores
from shared import write_through
from shared.admin import start_admin_service
from shared.advisories import AdvisoryListener
from shared.logs import get_logger
from shared.people import open_registry
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_of
from shared.subjects import Subjects

VERSION = "0.1.0"
log = get_logger("aurora.router")


class RouterService:
    def __init__(self, nc: NATS, subjects: Subjects, settings: RouterSettings,
                 capabilities: Mapping[str, tuple[str, ...]] | None = None) -> None:
        self._nc = nc
        self._capabilities = capabilities
        self._subjects = subjects
        self._settings = settings
        self._stores: RouterStores | None = None
        self._catalog: Catalog | None = None
        self._router: Router | None = None
        self._services: list[Service] = []
        self._advisories: AdvisoryListener | None = None

    @property
    def stats(self) -> RouterStats:
        if self._router is None:
            raise RuntimeError("RouterService used before start()")
        return self._router.stats

    async def start(self) -> None:
        if self._router is not None:
            return
        nc, subjects, options = self._nc, self._subjects, self._settings
        stores = self._stores = await open_stores(nc.jetstream(), subjects)
        catalog = self._catalog = Catalog(stores.bindings, stores.agents, stores.pipelines)
        await catalog.start()
        # Before the router pulls: an advisory its own deliveries cause must find a listener.
        self._advisories = AdvisoryListener(nc, subjects)
        await self._advisories.start()
        router = Router(nc, subjects, catalog, stores, options.router, capabilities=self._capabilities)
        await router.start()
        self._router = router
        admin = RouterAdmin(stores, router.stats, catalog.summary, instance=options.router.instance)
        replayer = Replayer(nc, subjects, stores, options, admin.saved_routing, capabilities=self._capabilities)
        # A person's request is checked again against the users registry (shared/people.py).
        authorize = (await open_registry(nc.jetstream(), subjects)).refusal
        resources = [ResourceAdmin(kind_of("Binding"), stores.bindings),
                     ResourceAdmin(kind_of("Pipeline"), stores.pipelines)]
        if options.serve_agents:
            resources.append(ResourceAdmin(kind_of("Agent"), stores.agents))
        areas = {"router": {**admin.endpoints(), "replay": replayer.replay},
                 **{r.kind.area: r.endpoints() for r in resources}}
        self._services.append(await start_admin_service(
            nc, subjects, name="aurora-router", version=VERSION, areas=areas, authorize=authorize,
            description="routes each event to one pipeline or agent; serves "
                        + ", ".join(f"{r.kind.kind} resources" for r in resources),
        ))
        await write_through.flush(nc)  # "ready" means the admin endpoints' subscriptions reached the server
        log.info("ready", instance=options.router.instance, catalog=catalog.counts())

    async def run(self, stop: asyncio.Event) -> None:
        if self._router is None:
            raise RuntimeError("RouterService.run() called before start()")
        await self._router.run(stop)

    async def stop(self) -> None:
        services, self._services = self._services, []
        for service in services:
            await service.stop()
        if self._router is not None:
            await self._router.stop()
        if self._catalog is not None:
            await self._catalog.stop()
        if self._advisories is not None:
            await self._advisories.stop()
            self._advisories = None
        self._router = None
