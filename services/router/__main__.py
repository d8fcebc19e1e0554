"""Composition root of the router: `python -m services.router`."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

from nats.aio.client import Client as NATS

from services.router.config import RouterSettings, load_router_settings
from services.router.wiring import RouterSetup, build_router
from shared.config.appconfig import load_apps_config
from shared.config.settings import Settings, load_settings
from shared.observability.logs import get_logger
from shared.service import load_or_exit, run_built, run_service
from shared.wiring import Connections

NAME = "router"
log = get_logger("aurora.router")


def app_capabilities(path: Path) -> dict[str, tuple[str, ...]]:
    """Each app's declared platform capabilities (its `platform:` map), which every run's
    delivery context carries. The router needs no apps otherwise: without the file, none."""
    if not path.exists():
        return {}
    apps = load_apps_config(path)
    return {app.app_id: tuple(sorted(app.platform)) for app in apps.apps.values()}


async def main(own: RouterSettings, capabilities: dict[str, tuple[str, ...]], settings: Settings, nc: NATS,
               stop: asyncio.Event) -> None:
    if not settings.apps_config.exists():
        log.info("no apps config; runs carry no app capabilities", file=str(settings.apps_config))
    setup = RouterSetup(settings.subjects, own, capabilities, settings.stream_plan)
    await run_built(build_router(setup, Connections(nc)), stop, settings.ready_file)


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    own = load_or_exit(NAME, load_router_settings)
    capabilities = load_or_exit(NAME, lambda: app_capabilities(settings.apps_config))
    run_service(NAME, partial(main, own, capabilities), settings)


if __name__ == "__main__":
    run()
