"""The router built by `build_router` in this process, over a real nats-server: its admin
endpoints answer once it has started, and nothing of it answers after it stopped."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from services.router.config import RouterSettings
from services.router.router import RouterConfig
from services.router.wiring import RouterSetup, build_router
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from shared.wiring import Connections


async def test_the_router_is_built_in_process_and_stops_whole(nc: NATS, subjects: Subjects) -> None:
    setup = RouterSetup(subjects, RouterSettings(router=RouterConfig(instance="wired", fetch_timeout=0.2)))
    service = await build_router(setup, Connections(nc))
    assert [type(part).__name__ for part in service.order] == [
        "RouteCatalog", "AdvisoryListener", "Router", "StartedBy"]
    async with service:
        status = await admin_request(nc, subjects, "router", "health", {})
        assert status["instance"] == "wired"
        assert service.parts.router.started
    assert not service.parts.router.started and not service.parts.catalog.started
    with pytest.raises(NoRespondersError):
        await nc.request(subjects.admin("router", "health"), b"{}", timeout=2)
