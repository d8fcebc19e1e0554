"""The event-bridge's parts, built by `build_event_bridge`: the bridge loop (its two durables,
shared by every bridge) and its health endpoint.

`__main__` runs one per process; tests build it in-process against a real nats-server. The start
order is `BridgeParts`' order; the stop order is its reverse (`shared.wiring.Assembly`): the
health endpoint stops first, then the bridge.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.event_bridge.bridge import BridgeConfig, EventBridge
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.wiring import Assembly, Connections, StartedBy

VERSION = "0.1.0"


@dataclass(frozen=True)
class BridgeSetup:
    """What the bridge read before connecting: its batch policy and the streams' plan."""

    subjects: Subjects
    config: BridgeConfig
    plan: StreamPlan = DEFAULT_PLAN


@dataclass(frozen=True)
class BridgeParts:
    bridge: EventBridge
    admin: StartedBy


BridgeService = Assembly[BridgeParts]


async def build_event_bridge(setup: BridgeSetup, connections: Connections) -> BridgeService:
    nc, subjects = connections.nc, setup.subjects
    bridge = EventBridge(nc, subjects, setup.config, plan=setup.plan)
    endpoints = StartedBy("the event-bridge's health endpoint", lambda: start_admin_service(
        nc, subjects, name="aurora-event-bridge", version=VERSION, areas={"event_bridge": {"health": bridge.health}},
        description="turns raw signals into validated AMP events"))

    async def ready() -> None:
        await write_through.flush(nc)  # "ready" means the health endpoint's subscription reached the server

    parts = BridgeParts(bridge, endpoints)
    return Assembly("the event-bridge service", parts, (bridge, endpoints), run=bridge.run, ready=ready)
