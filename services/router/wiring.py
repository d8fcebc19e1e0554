"""The router's parts, built by `build_router`: stores, the route catalog, the dead-letter advisory
listener (shared/jetstream/advisories.py: what a stage could not dead-letter itself), the routing
loop and the admin endpoints.

`__main__` runs one per process; tests build it in-process against a real nats-server. The start
order is `RouterParts`' order; the stop order is its reverse (`shared.wiring.Assembly`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from services.router.admin import RouterAdmin
from services.router.catalog import RouteCatalog
from services.router.computed_traces import ComputedTraces
from services.router.config import RouterSettings
from services.router.recorded_traces import RecordedTraces
from services.router.replay import Replayer
from services.router.router import Router
from services.router.run_replay import RunReplayer
from services.router.stores import RouterStores, open_stores
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.advisories import AdvisoryListener
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.observability.logs import get_logger
from shared.people import open_registry
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_of
from shared.wiring import Assembly, Connections, StartedBy

VERSION = "0.1.0"
log = get_logger("aurora.router")


@dataclass(frozen=True)
class RouterSetup:
    """What the router read before connecting: its own settings, each app's platform
    capabilities (from the apps config), and the streams' plan."""

    subjects: Subjects
    settings: RouterSettings
    capabilities: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    plan: StreamPlan = DEFAULT_PLAN


@dataclass(frozen=True)
class RouterParts:
    stores: RouterStores
    catalog: RouteCatalog
    advisories: AdvisoryListener
    router: Router
    admin: StartedBy


RouterService = Assembly[RouterParts]


async def build_router(setup: RouterSetup, connections: Connections) -> RouterService:
    nc, subjects, options = connections.nc, setup.subjects, setup.settings
    stores = await open_stores(connections.js, subjects, setup.plan)
    catalog = RouteCatalog(stores.bindings, stores.agents, stores.pipelines)
    advisories = AdvisoryListener(nc, subjects)
    router = Router(nc, subjects, catalog, stores, options.router, capabilities=setup.capabilities)
    admin = RouterAdmin(stores, router.stats, catalog.summary, instance=options.router.instance)
    admin.computed = ComputedTraces(connections.js, subjects, admin.saved_routing, instance=options.router.instance)
    admin.recorded = RecordedTraces(connections.js, stores.run_records_bucket)
    replayer = Replayer(nc, subjects, stores, options, admin.saved_routing, capabilities=setup.capabilities,
                        find_untraced=admin.computed.find_event, recorded=admin.recorded)
    # A person's request is checked again against the users registry (shared/people.py).
    authorize = (await open_registry(connections.js, subjects, setup.plan)).refusal
    resources = [ResourceAdmin(kind_of("Binding"), stores.bindings),
                 ResourceAdmin(kind_of("Pipeline"), stores.pipelines)]
    if options.serve_agents:
        resources.append(ResourceAdmin(kind_of("Agent"), stores.agents))
    run_replayer = RunReplayer(stores.run_records, stores.run_records_bucket)  # `aurora dlq replay` of a run
    areas = {"router": {**admin.endpoints(), "replay": replayer.replay, "replay_run": run_replayer.replay_run},
             **{r.kind.area: r.endpoints() for r in resources}}
    endpoints = StartedBy("the router's admin endpoints", lambda: start_admin_service(
        nc, subjects, name="aurora-router", version=VERSION, areas=areas, authorize=authorize,
        description="routes each event to one pipeline or agent; serves "
                    + ", ".join(f"{r.kind.kind} resources" for r in resources),
    ))

    async def ready() -> None:
        await write_through.flush(nc)  # "ready" means the admin endpoints' subscriptions reached the server
        log.info("ready", instance=options.router.instance, catalog=catalog.counts())

    parts = RouterParts(stores, catalog, advisories, router, endpoints)
    # The catalog before the loop reads it; the advisory listener before the router pulls, so an
    # advisory its own deliveries cause finds a listener; the admin endpoints last.
    return Assembly("the router service", parts, (catalog, advisories, router, endpoints),
                    run=router.run, ready=ready)
